/**
 * Output and verdict helpers shared by the benches: a markdown table printer,
 * number formatting, and a check list whose failures make `bench/run.ts` exit
 * non-zero (a bench that only prints cannot catch a regression).
 */

/** One assertion of a bench: what was required, whether it held, the measured detail. */
export interface Check {
  bench: string;
  what: string;
  ok: boolean;
  detail: string;
}

/** Collects the checks of one bench and prints each as it is decided. */
export class Checks {
  readonly list: Check[] = [];
  readonly bench: string;
  constructor(bench: string) {
    this.bench = bench;
  }

  /** Record a check; prints `PASS`/`FAIL` with the measured detail. */
  expect(ok: boolean, what: string, detail: string): void {
    this.list.push({ bench: this.bench, what, ok, detail });
    console.log(`${ok ? 'PASS' : 'FAIL'} [${this.bench}] ${what} (${detail})`);
  }
}

/** Prints a markdown table (right-aligned numbers); cells are already formatted. */
export function printTable(header: string[], rows: string[][]): void {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]): string => `| ${cells.map((c, i) => c.padStart(widths[i] ?? 0)).join(' | ')} |`;
  console.log(line(header));
  console.log(`|${widths.map((w) => `${'-'.repeat(w + 1)}:`).join('|')}|`);
  for (const r of rows) console.log(line(r));
}

/** Milliseconds with thousands separators, e.g. `92,301`. */
export function ms(value: number | undefined): string {
  return value === undefined ? '-' : Math.round(value).toLocaleString('en-US');
}

/** Decimal megabytes with one decimal, e.g. `76.2`. */
export function mb(bytes: number | undefined): string {
  return bytes === undefined ? '-' : (bytes / 1e6).toFixed(1);
}

/** A ratio with two decimals and a trailing `x`. */
export function ratio(value: number | undefined): string {
  return value === undefined || !Number.isFinite(value) ? '-' : `${value.toFixed(2)}x`;
}

/** Median of a non-empty list. */
export function median(values: number[]): number {
  if (values.length === 0) throw new Error('median of an empty list');
  const s = [...values].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
}
