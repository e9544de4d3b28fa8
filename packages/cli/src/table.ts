/** Plain-text tables of the API commands: columns padded to their widest cell, a header line first. */

/** `headers` over `rows`; the last column is not padded (no trailing blanks). */
export function formatTable(headers: readonly string[], rows: readonly string[][]): string {
  const all = [[...headers], ...rows];
  const widths = headers.map((_, i) => Math.max(...all.map((r) => (r[i] ?? '').length)));
  return all.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!))).join('  ')).join('\n');
}

/** `2026-11-23T00:30:00.000Z` → `2026-11-23 00:30:00` (UTC, as every table shows times). */
export function utcTime(iso: string | null | undefined): string {
  return iso === undefined || iso === null ? '-' : iso.replace('T', ' ').replace(/\.\d+Z$|Z$/, '');
}
