/**
 * Failed authentications per client address, in fixed windows.
 *
 * An address that sent `max` requests with a missing or invalid token in a
 * window is refused (429) for the rest of that window, before its token is
 * even looked at: if a valid token still got through, a guesser would learn
 * from 200-versus-429 which guess was right and guessing would stay unbounded.
 * The price is that a client sharing that address (same NAT, or every client
 * when a proxy's address is not trusted) waits out the window too.
 *
 * Kept in process memory, not Redis: refusing junk costs no Redis round trip,
 * a flood of bad tokens never becomes Redis load, and a Redis outage never
 * turns a 401 into a 503. With N api replicas an address gets N × max tries
 * per window, which still bounds guessing. Memory is bounded: at most
 * `maxAddresses` entries (the oldest window is dropped first), ~100 bytes each.
 */
import { isIP } from 'node:net';

/** Options of an AuthFailureLimiter. */
export interface AuthFailureLimitOptions {
  /** Failed requests allowed per address per window. */
  max: number;
  windowMs: number;
  /** Addresses tracked at once (default 10,000). */
  maxAddresses?: number;
  /** Clock (tests). */
  now?: () => number;
}

interface Window {
  count: number;
  resetAt: number;
}

/**
 * The key an address is counted under: IPv4 as is (also when IPv4-mapped),
 * IPv6 by its /64, because one host usually holds a whole /64 and could
 * otherwise rotate through addresses.
 */
export function addressKey(ip: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  if (mapped?.[1] !== undefined) return mapped[1];
  if (isIP(ip) !== 6) return ip;
  const [head = '', tail = ''] = ip.toLowerCase().split('::');
  const left = head === '' ? [] : head.split(':');
  const right = ip.includes('::') ? (tail === '' ? [] : tail.split(':')) : [];
  const groups = ip.includes('::') ? [...left, ...Array<string>(Math.max(0, 8 - left.length - right.length)).fill('0'), ...right] : left;
  return `${groups.slice(0, 4).map((g) => g.replace(/^0+(?=.)/, '')).join(':')}::/64`;
}

/** Counts failed authentications per address; see the file comment. */
export class AuthFailureLimiter {
  readonly max: number;
  readonly windowMs: number;
  readonly #maxAddresses: number;
  readonly #now: () => number;
  // Insertion order = window start order, so the first entry is the oldest.
  readonly #windows = new Map<string, Window>();

  constructor(opts: AuthFailureLimitOptions) {
    this.max = opts.max;
    this.windowMs = opts.windowMs;
    this.#maxAddresses = opts.maxAddresses ?? 10_000;
    this.#now = opts.now ?? Date.now;
  }

  /** Milliseconds until `key` may try again; 0 when it is under its limit. */
  blockedFor(key: string): number {
    const w = this.#current(key);
    return w !== undefined && w.count >= this.max ? w.resetAt - this.#now() : 0;
  }

  /** Counts one failed authentication of `key`. */
  fail(key: string): void {
    const w = this.#current(key);
    if (w !== undefined) {
      w.count += 1;
      return;
    }
    this.#evict();
    this.#windows.set(key, { count: 1, resetAt: this.#now() + this.windowMs });
  }

  /** Addresses tracked now (tests and metrics). */
  get size(): number {
    return this.#windows.size;
  }

  #current(key: string): Window | undefined {
    const w = this.#windows.get(key);
    if (w === undefined) return undefined;
    if (w.resetAt > this.#now()) return w;
    this.#windows.delete(key);
    return undefined;
  }

  /** Drops expired windows from the oldest end, then the oldest live ones while full. */
  #evict(): void {
    const now = this.#now();
    for (const [key, w] of this.#windows) {
      if (w.resetAt > now && this.#windows.size < this.#maxAddresses) break;
      this.#windows.delete(key);
    }
  }
}
