/**
 * Posting to a slash command's or button's `response_url`. Slack accepts up
 * to 5 posts to one URL within 30 minutes of the command; heapcap counts every
 * post it makes (in Redis, so every process shares the count) and never makes
 * a sixth. The URL is a bearer capability: it never appears in a log line or
 * an error message, only its hash is used as a key.
 */
import { createHash } from 'node:crypto';
import type { HeapcapQueue } from '@heapcap/state';
import type { SlackMessage } from './blocks.ts';

/** Slack's limits on one response_url. */
export const RESPONSE_URL_MAX_POSTS = 5;
export const RESPONSE_URL_WINDOW_MS = 30 * 60_000;

/** Deadline of one post. */
const POST_TIMEOUT_MS = 10_000;

/** How a post ended. `rejected`: Slack refused this URL for good (expired, used up, bad payload); do not post to it again. */
export type PostOutcome = { kind: 'delivered' } | { kind: 'retry'; detail: string } | { kind: 'rejected'; detail: string };

/**
 * Why heapcap must not POST to `url`, or undefined when it may: its origin
 * (scheme, host, port) must be one of `origins` (HEAPCAP_SLACK_RESPONSE_HOSTS,
 * Slack's own hosts by default), and it carries no credentials. Names the
 * origin at most, never the path (where the capability is).
 */
export function responseUrlRefusal(url: string, origins: readonly string[]): string | undefined {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return 'the response_url is not a URL';
  }
  if (u.username !== '' || u.password !== '') return 'the response_url carries credentials';
  if (!origins.includes(u.origin)) return `the response_url's origin ${u.origin} is not one of HEAPCAP_SLACK_RESPONSE_HOSTS (${origins.join(', ')})`;
  return undefined;
}

/** Where a post may go, and its cancellation. */
export interface PostOptions {
  /** Allowed origins (see responseUrlRefusal). */
  origins: readonly string[];
  signal?: AbortSignal | undefined;
}

/** POST `message` to `url` if its origin is allowed (else `rejected`, nothing sent); never throws, never mentions the URL's path. */
export async function postToResponseUrl(url: string, message: SlackMessage, { origins, signal }: PostOptions): Promise<PostOutcome> {
  // Checked again here, not only at intake: a reply job in Redis outlives the request that made it.
  const refusal = responseUrlRefusal(url, origins);
  if (refusal !== undefined) return { kind: 'rejected', detail: refusal };
  const timeout = AbortSignal.timeout(POST_TIMEOUT_MS);
  let res: Response;
  try {
    res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json; charset=utf-8' },
      body: JSON.stringify(message),
      redirect: 'error',
      signal: signal === undefined ? timeout : AbortSignal.any([signal, timeout]),
    });
  } catch (err) {
    // The cause names host and port at most (never the path, where the capability is).
    const cause = (err as { cause?: { code?: string } }).cause?.code;
    return { kind: 'retry', detail: timeout.aborted ? `no answer within ${POST_TIMEOUT_MS} ms` : `request failed${cause === undefined ? '' : ` (${cause})`}` };
  }
  const body = (await res.text().catch(() => '')).slice(0, 200).replace(/\s+/g, ' ');
  if (res.ok) return { kind: 'delivered' };
  const detail = `HTTP ${res.status}${body === '' ? '' : `: ${body}`}`;
  if (res.status === 429 || res.status >= 500) return { kind: 'retry', detail };
  return { kind: 'rejected', detail };
}

/** The shared count of posts per response_url. */
export class ResponseUrlBudget {
  readonly #redis: HeapcapQueue['redis'];
  readonly #prefix: string;

  /** `keyPrefix`: e.g. `<prefix>:hc:slack:ru` (one key per URL hash, expiring with Slack's window). */
  constructor(redis: HeapcapQueue['redis'], keyPrefix: string) {
    this.#redis = redis;
    this.#prefix = keyPrefix;
  }

  #key(url: string): string {
    return `${this.#prefix}:${createHash('sha256').update(url).digest('hex').slice(0, 40)}`;
  }

  /** Take one post from the URL's budget; false when 5 were made already. */
  async take(url: string): Promise<boolean> {
    const key = this.#key(url);
    // The first post starts the window; INCR keeps the key's expiry.
    const replies = await this.#redis.multi().set(key, 0, 'PX', RESPONSE_URL_WINDOW_MS, 'NX').incr(key).exec();
    const [err, count] = replies?.[1] ?? [new Error('MULTI was discarded'), null];
    if (err !== null) throw err;
    return Number(count) <= RESPONSE_URL_MAX_POSTS;
  }

  /** Posts made so far. */
  async used(url: string): Promise<number> {
    return Number((await this.#redis.get(this.#key(url))) ?? 0);
  }

  /** Spend what is left: Slack refused the URL for good. */
  async exhaust(url: string): Promise<void> {
    await this.#redis.set(this.#key(url), RESPONSE_URL_MAX_POSTS, 'PX', RESPONSE_URL_WINDOW_MS);
  }
}

/** The budget every heapcap process shares for `queue`'s Redis and prefix. */
export function responseUrlBudget(queue: Pick<HeapcapQueue, 'redis' | 'keys'>): ResponseUrlBudget {
  return new ResponseUrlBudget(queue.redis, `${queue.keys.base}:slack:ru`);
}
