/**
 * "Did you mean …": the closest known word to a mistyped one (commands,
 * subcommands, flags, HEAPCAP_* settings, target ids). Optimal string alignment
 * distance, so a swapped pair of letters counts as one edit like a missing one.
 */

/** Edits (insert, delete, substitute, swap two neighbours) from `a` to `b`. */
export function editDistance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let v = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) v = Math.min(v, d[i - 2]![j - 2]! + 1);
      d[i]![j] = v;
    }
  }
  return d[a.length]![b.length]!;
}

/**
 * The candidate closest to `word` (case-insensitive), if it is close enough to
 * be a typo: at most a third of the word's length in edits (at least one), or
 * `word` is a prefix of exactly one candidate.
 */
export function closest(word: string, candidates: Iterable<string>): string | undefined {
  const w = word.toLowerCase();
  const all = [...candidates];
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const c of all) {
    const dist = editDistance(w, c.toLowerCase());
    if (dist < bestDistance) {
      best = c;
      bestDistance = dist;
    }
  }
  if (best !== undefined && bestDistance > 0 && bestDistance <= Math.max(1, Math.floor(w.length / 3))) return best;
  const prefixed = w.length >= 2 ? all.filter((c) => c.toLowerCase().startsWith(w)) : [];
  return prefixed.length === 1 ? prefixed[0] : undefined;
}

/** ` (did you mean "x"?)`, or nothing. */
export function didYouMean(word: string, candidates: Iterable<string>): string {
  const c = closest(word, candidates);
  return c === undefined ? '' : ` (did you mean "${c}"?)`;
}
