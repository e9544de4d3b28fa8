/** Helpers for raw Redis replies. */

/** A flat [field, value, …] array (HGETALL inside Lua) as an object. */
export function hashFromReply(flat: unknown[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i + 1 < flat.length; i += 2) {
    const k = flat[i];
    const v = flat[i + 1];
    if (typeof k === 'string' && typeof v === 'string') out[k] = v;
  }
  return out;
}
