/** Metrics read from Redis at scrape time: one read serves every collect callback of a scrape. */

/**
 * `read`, shared by the calls within `reuseMs`. A failed read yields null: the
 * metrics keep their previous values (counters never go backwards) and
 * heapcap_redis_up says why.
 */
export function readOncePerScrape<T>(read: () => Promise<T>, reuseMs = 1_000): () => Promise<T | null> {
  let last: { at: number; value: Promise<T | null> } | undefined;
  return () => {
    if (last === undefined || Date.now() - last.at > reuseMs) last = { at: Date.now(), value: read().catch(() => null) };
    return last.value;
  };
}
