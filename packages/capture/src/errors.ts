/** The engine's errors are the workspace-wide typed errors (stable codes). */
export { CaptureError, ERROR_CODES, isCaptureError, toCaptureError, type ErrorCode, type CaptureErrorOptions } from '@heapcap/errors';
