/** `heapcap analyze FILE [--json] [--top N] [--max-bytes N]`: retained sizes of a local snapshot file. */
import { parseArgs } from 'node:util';
import { analyzeSnapshotFile } from '@heapcap/analysis';
import { CaptureError, isCaptureError } from '@heapcap/errors';
import { EXIT, exitCodeFor } from './exit-codes.ts';
import { printError } from './print-error.ts';
import { parseArgsMessage } from './flags.ts';
import { formatAnalysis } from './analysis-format.ts';

/** Default limit for local files: the analysis needs about 2-3x the snapshot's size in memory. */
export const DEFAULT_ANALYSIS_MAX_BYTES = 2_000_000_000;

export const ANALYZE_USAGE = `heapcap analyze FILE [--json] [--top N] [--max-bytes N]

Retained sizes of a local .heapsnapshot or .heapsnapshot.gz file: classes by
retained size (as DevTools' Summary computes it) and the largest dominators
with their retainer paths from the root.

  --top N          rows of the class table and dominators shown (default 20)
  --max-bytes N    refuse snapshots with more JSON bytes (default ${DEFAULT_ANALYSIS_MAX_BYTES})
  --json           print the analysis as JSON (every class)

Examples:
  heapcap analyze ./checkout-1-20261126T223302Z-01M7ZHH716228KMD1V49A92AEZ.heapsnapshot --top 10
  heapcap analyze ./data/captures/checkout-1/01M7ZHH716228KMD1V49A92AEZ.heapsnapshot.gz --json
`;

export const ANALYZE_OPTIONS = { json: { type: 'boolean' }, top: { type: 'string' }, 'max-bytes': { type: 'string' } } as const;

/** Parses a positive integer flag; undefined when absent. */
export function positiveInt(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value) || Number(value) < 1) throw new CaptureError('invalid_input', `${flag} "${value}" is not a positive integer`, { hint: `pass ${flag} with a whole number, e.g. ${flag} 20` });
  return Number(value);
}

/** Run `heapcap analyze`; returns the exit code. */
export async function analyzeMain(argv: string[]): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(ANALYZE_USAGE);
    return EXIT.ok;
  }
  const json = argv.includes('--json');
  try {
    let parsed;
    try {
      parsed = parseArgs({ args: argv, allowPositionals: true, options: ANALYZE_OPTIONS });
    } catch (err) {
      throw new CaptureError('invalid_input', parseArgsMessage(err, ANALYZE_OPTIONS), { hint: 'see heapcap analyze --help' });
    }
    const { values, positionals } = parsed;
    if (positionals.length !== 1) throw new CaptureError('invalid_input', 'heapcap analyze takes one snapshot file', { hint: 'heapcap analyze FILE.heapsnapshot[.gz]' });
    const top = positiveInt(values.top, '--top') ?? 20;
    const maxBytes = positiveInt(values['max-bytes'], '--max-bytes') ?? DEFAULT_ANALYSIS_MAX_BYTES;
    const analysis = await analyzeSnapshotFile(positionals[0] as string, { maxBytes, topDominators: Math.max(top, 20) });
    process.stdout.write(json ? `${JSON.stringify(analysis, null, 2)}\n` : formatAnalysis(analysis, top));
    return EXIT.ok;
  } catch (err) {
    if (!isCaptureError(err)) throw err;
    printError(err, json);
    return exitCodeFor(err.code);
  }
}
