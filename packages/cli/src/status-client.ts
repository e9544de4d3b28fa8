/** The REST client of the API commands (`trigger`, `status`, `targets`, `captures`, …): HEAPCAP_API_URL + HEAPCAP_TOKEN. */
import { DEFAULT_API_URL } from '@heapcap/config';
import { ERROR_CODES, type ErrorCode } from '@heapcap/errors';
import { EXIT, exitCodeFor } from './exit-codes.ts';
import { closest } from '@heapcap/config';

/** Where a command writes (tests pass their own streams). */
export interface CliIo {
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
}

/** Where the API is and how to authenticate. */
export interface ApiTarget {
  url: string;
  token: string | undefined;
}

/** A failed call: HTTP status, the API's stable error code and message. */
export class RestError extends Error {
  override readonly name = 'RestError';
  readonly status: number;
  readonly code: string;
  constructor(status: number, code: string, message: string) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

/** Read HEAPCAP_API_URL (default DEFAULT_API_URL) and HEAPCAP_TOKEN from `env`. */
export function apiTargetFrom(env: Record<string, string | undefined>): ApiTarget {
  const url = (env['HEAPCAP_API_URL'] ?? DEFAULT_API_URL).replace(/\/+$/, '');
  if (!/^https?:\/\//.test(url)) throw new RestError(0, 'invalid_input', `HEAPCAP_API_URL must be an http(s) URL, got "${url}"`);
  const token = env['HEAPCAP_TOKEN'];
  return { url, token: token === undefined || token === '' ? undefined : token };
}

/** apiTargetFrom, or undefined when HEAPCAP_API_URL is not usable (for follow-up calls made while reporting an error). */
export function apiTargetOrUndefined(env: Record<string, string | undefined>): ApiTarget | undefined {
  try {
    return apiTargetFrom(env);
  } catch {
    return undefined;
  }
}

type Method = 'GET' | 'POST' | 'PUT' | 'DELETE';

/** Send one request; throws RestError when the API cannot be reached. The caller reads the body. */
async function send(api: ApiTarget, method: Method, path: string, body: unknown, timeoutMs: number, headers: Record<string, string>): Promise<Response> {
  const all: Record<string, string> = { ...headers };
  if (body !== undefined) all['content-type'] = 'application/json';
  if (api.token !== undefined) all['authorization'] = `Bearer ${api.token}`;
  try {
    return await fetch(`${api.url}${path}`, {
      method,
      headers: all,
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (err) {
    const why = err instanceof Error && err.name === 'TimeoutError' ? `no answer within ${Math.round(timeoutMs / 1000)} s` : String((err as Error).cause ?? (err as Error).message);
    throw new RestError(0, 'api_unreachable', `cannot reach the heapcap API at ${api.url}: ${why} (is \`heapcap serve\` running? set HEAPCAP_API_URL)`);
  }
}

/** The RestError an error answer stands for (its JSON `error`, or the bare status). */
async function errorOf(res: Response): Promise<RestError> {
  const text = await res.text();
  let e: { code?: string; message?: string } | undefined;
  try {
    e = (JSON.parse(text) as { error?: { code?: string; message?: string } } | null)?.error;
  } catch {
    e = undefined;
  }
  return new RestError(res.status, e?.code ?? `http_${res.status}`, e?.message ?? `HTTP ${res.status}`);
}

/** Call the API; resolves with status and JSON body; throws RestError for transport failures and error bodies. */
export async function callApi(api: ApiTarget, method: Method, path: string, body: unknown, timeoutMs: number, headers: Record<string, string> = {}): Promise<{ status: number; body: unknown }> {
  const res = await send(api, method, path, body, timeoutMs, { ...headers, accept: 'application/json' });
  if (res.status >= 400) throw await errorOf(res);
  const text = await res.text();
  let json: unknown = null;
  try {
    json = text === '' ? null : JSON.parse(text);
  } catch {
    throw new RestError(res.status, 'bad_response', `the API answered ${res.status} with a non-JSON body`);
  }
  return { status: res.status, body: json };
}

/** GET a download (an artifact): the response with its body unread; throws RestError for transport failures and error answers. */
export async function downloadApi(api: ApiTarget, path: string, headers: Record<string, string>, timeoutMs: number): Promise<Response> {
  const res = await send(api, 'GET', path, undefined, timeoutMs, headers);
  if (res.status >= 400) throw await errorOf(res);
  return res;
}

/**
 * Exit code for a REST failure (README "Exit codes"): a heapcap error code
 * keeps its own (target_not_found 3, storage_unavailable 5, …); the API out of
 * reach, shedding load or without Redis is 7 (try again later); other refusals
 * of the request (auth, validation, not found, conflicts) are 2; only the
 * API's own failure (500) is 1.
 */
export function exitCodeForRest(err: RestError): number {
  if ((ERROR_CODES as readonly string[]).includes(err.code) && err.code !== 'internal') return exitCodeFor(err.code as ErrorCode);
  if (err.code === 'api_unreachable' || err.code === 'unavailable' || err.code === 'rate_limited' || err.status === 502 || err.status === 503 || err.status === 504) return EXIT.unavailable;
  if (err.status >= 400 && err.status < 500) return EXIT.usage;
  return EXIT.internal;
}

/** What to change for an error the API gave, naming the setting. */
function hintFor(err: RestError): string | undefined {
  switch (err.code) {
    case 'unauthorized':
      return 'set HEAPCAP_TOKEN to a token the API accepts (one of its HEAPCAP_TOKENS_FILE entries)';
    case 'forbidden':
      return "the token in HEAPCAP_TOKEN lacks the scope this needs: use one that has it (the API's tokens file lists each token's scopes)";
    case 'unavailable':
      return "the API is up but its Redis or storage is not (or it is shutting down): try again, and check the service's /readyz";
    case 'rate_limited':
      return 'too many requests from this token or address: wait a little and try again';
    default:
      return undefined;
  }
}

/**
 * Print a REST failure as `code: message` (plus `check: …` when there is a
 * setting to change) and return its exit code. With `targetId`, a
 * target_not_found also names the closest registered target.
 */
export async function reportRestError(io: CliIo, err: RestError, api?: ApiTarget, targetId?: string): Promise<number> {
  let message = err.message;
  if (err.code === 'target_not_found' && api !== undefined && targetId !== undefined) {
    const ids = await callApi(api, 'GET', '/v1/targets', undefined, 10_000).then(
      (r) => (r.body as { items: { target: { id: string } }[] }).items.map((i) => i.target.id),
      () => [],
    );
    const near = closest(targetId, ids);
    if (near !== undefined) message += ` (did you mean "${near}"?)`;
    else if (ids.length > 0) message += ` (registered: ${ids.slice(0, 10).join(', ')}${ids.length > 10 ? ', …' : ''})`;
  }
  io.stderr.write(`${err.code}: ${message}\n`);
  const hint = hintFor(err);
  if (hint !== undefined) io.stderr.write(`  check: ${hint}\n`);
  return exitCodeForRest(err);
}
