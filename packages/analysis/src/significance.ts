/**
 * The significance rule of suspects: which growth is a leak to look at and
 * which is noise (docs/analysis.md, "When a suspect is listed"). Measured on
 * the suite's shapes and on a diff across which nothing was kept
 * (packages/analysis/test/suspects.test.ts): noise is objects that existed
 * before and grew in place (a closure's feedback, `Object` and stream
 * internals, 40 B to 12.3 KiB each, 6-30 KiB in all) and prototype or holder
 * changes of objects that existed before (`+1 Duplex … held by a GC root`
 * while the class table says Duplex 3 → 3); a leak is many new objects, or
 * one object that grew by far more (a string grown by +=, 351 KiB).
 */

/** New objects a suspect needs for its count to be evidence (with {@link COUNT_SHARE}). */
export const MIN_COUNT = 10;
/** ... and the share of the diff's new memory those objects must hold. */
export const COUNT_SHARE = 0.01;
/** Growth without enough new objects is listed from this many bytes ... */
export const SIZE_FLOOR = 32 * 1024;
/** ... or this share of the diff's new memory, whichever is larger. */
export const SIZE_SHARE = 0.1;

/** A suspect's evidence: the new objects the class table confirms, and the memory it newly holds. */
export interface Evidence {
  /** New objects, never more than the class table's own count growth (a prototype whose holder changed has 0). */
  count: number;
  /** Growth of retained memory, bytes. */
  bytes: number;
}

/** True when `e` is growth to list, in a diff whose groups newly hold `total` bytes in all. */
export function significant(e: Evidence, total: number): boolean {
  if (e.count >= MIN_COUNT && e.bytes >= COUNT_SHARE * total) return true;
  return e.bytes >= Math.max(SIZE_FLOOR, SIZE_SHARE * total);
}

/** The rule in words, for docs and notes. */
export const SIGNIFICANCE_RULE = `at least ${MIN_COUNT} new objects holding ${COUNT_SHARE * 100}% of the new memory, or growth of at least ${SIZE_FLOOR / 1024} KiB and ${SIZE_SHARE * 100}% of the new memory`;
