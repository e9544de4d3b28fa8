/** Errors as `code: message` plus what to check; JSON on stdout with --json. */
import type { CaptureError } from '@heapcap/errors';

/** Print an error for a human (stderr) and, with --json, as JSON on stdout. */
export function printError(error: CaptureError, json: boolean): void {
  const phase = error.phase === undefined ? '' : ` (during ${error.phase})`;
  process.stderr.write(`${error.code}: ${error.message}${phase}\n`);
  if (error.hint !== undefined) process.stderr.write(`  check: ${error.hint}\n`);
  if (json) process.stdout.write(`${JSON.stringify({ error: error.toJSON() }, null, 2)}\n`);
}
