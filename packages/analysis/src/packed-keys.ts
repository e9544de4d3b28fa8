/** Sorted doubles that pack an id with a payload (`id · scale + payload`): node ids with signatures, node ids with trace nodes. */

/** In sorted `keys` of the form `id · scale + payload` (payload < scale), the key of `id`, or -1. */
export function findPacked(keys: Float64Array, scale: number, id: number): number {
  let lo = 0;
  let hi = keys.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    const midId = Math.floor((keys[mid] as number) / scale);
    if (midId < id) lo = mid + 1;
    else if (midId > id) hi = mid - 1;
    else return keys[mid] as number;
  }
  return -1;
}
