/**
 * HTTP errors with stable codes. Every error response is
 * `{ error: { code, message, details } }`; clients match on `code`, never on
 * the message. 5xx responses never carry internal messages or stacks.
 */

/** Every code the API answers with, and its HTTP status. */
export const API_ERROR_STATUS = {
  validation_failed: 400,
  malformed_json: 400,
  /** Not valid HTTP: a URL that is not valid percent-encoding, a header with CR/LF or other bad bytes. */
  malformed_request: 400,
  /** A Slack request whose response_url points outside HEAPCAP_SLACK_RESPONSE_HOSTS (Slack's own hosts by default). */
  response_url_not_allowed: 400,
  unauthorized: 401,
  forbidden: 403,
  /** A write authenticated by the console's session cookie without the session's CSRF token in x-heapcap-csrf. */
  csrf_failed: 403,
  not_found: 404,
  target_not_found: 404,
  /** The capture has no summary (taken before summaries, or its summary failed). */
  summary_missing: 404,
  /** No retained-size analysis was asked for (POST /v1/captures/:id/analysis). */
  analysis_missing: 404,
  /** A capture that is not an allocation sampling profile (a heap snapshot), asked for its profile. */
  profile_not_found: 404,
  method_not_allowed: 405,
  request_timeout: 408,
  conflict: 409,
  /** A schedule or watch rule declared in HEAPCAP_RULES_FILE: it changes only in the file. */
  managed_by_file: 409,
  artifact_not_available: 409,
  /** A diff of captures of two different targets without force=true. */
  target_mismatch: 409,
  /** A summary, diff or analysis of a capture whose artifact is a sampling profile, not a heap snapshot. */
  not_a_snapshot: 409,
  /** An allocation profile larger than the API reads whole (256 MiB): download the artifact instead. */
  profile_too_large: 409,
  /** A leak hunt's drive.http.url that is not on its target's own host, or carries credentials: the URL is valid, heapcap will not send the hunt's requests there. */
  drive_url_not_allowed: 409,
  idempotency_key_reused: 422,
  payload_too_large: 413,
  unsupported_media_type: 415,
  /** A Range that starts past the end of the artifact (the Content-Range header gives its length). */
  range_not_satisfiable: 416,
  rate_limited: 429,
  headers_too_large: 431,
  internal: 500,
  unavailable: 503,
} as const;

export type ApiErrorCode = keyof typeof API_ERROR_STATUS;

/** One bad input field, as listed in `details.fields` of `validation_failed`. */
export interface FieldIssue {
  /** Which part of the request: body, querystring, params or headers. */
  in: string;
  /** Dotted path inside that part, e.g. `options.gc`; '' for the whole part. */
  path: string;
  message: string;
  /** A stable code for this field's problem where it has one (`profile_interval_out_of_range`, `profile_unsupported`). */
  code?: string;
}

/** An error that becomes an HTTP response with a stable code. */
export class ApiError extends Error {
  override readonly name = 'ApiError';
  readonly code: ApiErrorCode;
  readonly statusCode: number;
  readonly details: Record<string, unknown>;
  /** Extra response headers (WWW-Authenticate, Retry-After). */
  readonly headers: Record<string, string>;

  constructor(code: ApiErrorCode, message: string, details: Record<string, unknown> = {}, headers: Record<string, string> = {}) {
    super(message);
    this.code = code;
    this.statusCode = API_ERROR_STATUS[code];
    this.details = details;
    this.headers = headers;
  }
}

/** The response body of every error. */
export interface ErrorBody {
  error: { code: ApiErrorCode; message: string; details: Record<string, unknown> };
}

/** Body of an ApiError response. */
export function errorBody(err: ApiError): ErrorBody {
  return { error: { code: err.code, message: err.message, details: err.details } };
}

/**
 * `s` with every lone UTF-16 surrogate replaced by U+FFFD: field paths and
 * messages can quote what the caller sent, and a lone surrogate is refused,
 * never echoed.
 */
export function wellFormed(s: string): string {
  return s.replace(/\p{Cs}/gu, '\uFFFD');
}

/** Refuse an API change of a rule declared in the rules file (`source: file`); anything else passes. */
export function refuseFileRule(kind: 'schedule' | 'watch rule', rule: { id: string; source?: 'file' | 'api' | undefined }): void {
  if (rule.source !== 'file') return;
  throw new ApiError(
    'managed_by_file',
    `${kind} "${rule.id}" is declared in the rules file (HEAPCAP_RULES_FILE): edit or remove it there, every replica applies the file within seconds`,
    { id: rule.id, source: 'file', setting: 'HEAPCAP_RULES_FILE' },
  );
}

/** `validation_failed` listing each bad field. */
export function validationFailed(issues: FieldIssue[]): ApiError {
  const fields = issues.map((f) => ({ in: f.in, path: wellFormed(f.path), message: wellFormed(f.message), code: f.code }));
  const summary = fields.map((f) => `${f.in}${f.path === '' ? '' : `.${f.path}`}: ${f.message}`).join('; ');
  return new ApiError('validation_failed', `invalid request: ${summary}`, { fields });
}
