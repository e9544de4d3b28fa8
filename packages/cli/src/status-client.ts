/** The tiny REST client of `heapcap trigger` and `heapcap status`: HEAPCAP_API_URL + HEAPCAP_TOKEN. */
import { DEFAULT_API_URL } from '@heapcap/config';
import { EXIT } from './exit-codes.ts';

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
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** Read HEAPCAP_API_URL (default DEFAULT_API_URL) and HEAPCAP_TOKEN from `env`. */
export function apiTargetFrom(env: Record<string, string | undefined>): ApiTarget {
  const url = (env['HEAPCAP_API_URL'] ?? DEFAULT_API_URL).replace(/\/+$/, '');
  if (!/^https?:\/\//.test(url)) throw new RestError(0, 'invalid_input', `HEAPCAP_API_URL must be an http(s) URL, got "${url}"`);
  const token = env['HEAPCAP_TOKEN'];
  return { url, token: token === undefined || token === '' ? undefined : token };
}

/** Call the API; resolves with status and JSON body; throws RestError for transport failures and error bodies. */
export async function callApi(api: ApiTarget, method: 'GET' | 'POST' | 'PUT' | 'DELETE', path: string, body: unknown, timeoutMs: number): Promise<{ status: number; body: unknown }> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (api.token !== undefined) headers['authorization'] = `Bearer ${api.token}`;
  let res: Response;
  try {
    res = await fetch(`${api.url}${path}`, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (err) {
    const why = err instanceof Error && err.name === 'TimeoutError' ? `no answer within ${Math.round(timeoutMs / 1000)} s` : String((err as Error).cause ?? (err as Error).message);
    throw new RestError(0, 'api_unreachable', `cannot reach the heapcap API at ${api.url}: ${why} (is \`heapcap serve\` running? set HEAPCAP_API_URL)`);
  }
  const text = await res.text();
  let json: unknown = null;
  try {
    json = text === '' ? null : JSON.parse(text);
  } catch {
    throw new RestError(res.status, 'bad_response', `the API answered ${res.status} with a non-JSON body`);
  }
  if (res.status >= 400) {
    const e = (json as { error?: { code?: string; message?: string } } | null)?.error;
    throw new RestError(res.status, e?.code ?? `http_${res.status}`, e?.message ?? `HTTP ${res.status}`);
  }
  return { status: res.status, body: json };
}

/** Exit code for a REST failure. */
export function exitCodeForRest(err: RestError): number {
  if (err.status === 401 || err.status === 403 || err.status === 400 || err.status === 404 || err.status === 409 || err.status === 422 || err.code === 'invalid_input') return EXIT.usage;
  return EXIT.internal;
}
