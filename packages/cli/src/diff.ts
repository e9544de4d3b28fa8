/** `heapcap diff A B [--json] [--top N] [--retained]`: per-class growth between two local snapshot files. */
import { parseArgs } from 'node:util';
import { analyzeSnapshotFile, diffSummaries, summarizeFile } from '@heapcap/analysis';
import { CaptureError, isCaptureError } from '@heapcap/errors';
import { EXIT, exitCodeFor } from './exit-codes.ts';
import { printError } from './print-error.ts';
import { formatDiff } from './analysis-format.ts';
import { DEFAULT_ANALYSIS_MAX_BYTES, positiveInt } from './analyze.ts';

export const DIFF_USAGE = `heapcap diff BASE HEAD [--json] [--top N] [--retained [--max-bytes N]]

What grew from BASE to HEAD (two local .heapsnapshot or .heapsnapshot.gz
files): per-class count and self-size deltas, largest growth first, new and
vanished classes included.

  --top N          rows shown (default 20)
  --retained       also analyse both files for retained-size deltas (slower; needs memory)
  --max-bytes N    with --retained: refuse larger snapshots (default ${DEFAULT_ANALYSIS_MAX_BYTES})
  --json           print the whole diff as JSON
`;

/** Run `heapcap diff`; returns the exit code. */
export async function diffMain(argv: string[]): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(DIFF_USAGE);
    return EXIT.ok;
  }
  const json = argv.includes('--json');
  try {
    let parsed;
    try {
      parsed = parseArgs({
        args: argv,
        allowPositionals: true,
        options: { json: { type: 'boolean' }, top: { type: 'string' }, retained: { type: 'boolean' }, 'max-bytes': { type: 'string' } },
      });
    } catch (err) {
      throw new CaptureError('invalid_input', (err as Error).message, { hint: 'see heapcap diff --help' });
    }
    const { values, positionals } = parsed;
    const [base, head] = positionals;
    if (positionals.length !== 2 || base === undefined || head === undefined) {
      throw new CaptureError('invalid_input', 'heapcap diff takes two snapshot files', { hint: 'heapcap diff BASE.heapsnapshot HEAD.heapsnapshot' });
    }
    const top = positiveInt(values.top, '--top') ?? 20;
    const maxBytes = positiveInt(values['max-bytes'], '--max-bytes') ?? DEFAULT_ANALYSIS_MAX_BYTES;
    const [baseSummary, headSummary] = [await summarizeFile(base), await summarizeFile(head)];
    const analyses =
      values.retained === true ? { baseAnalysis: await analyzeSnapshotFile(base, { maxBytes }), headAnalysis: await analyzeSnapshotFile(head, { maxBytes }) } : {};
    const diff = diffSummaries(baseSummary, headSummary, analyses);
    process.stdout.write(json ? `${JSON.stringify(diff, null, 2)}\n` : formatDiff(diff, top, base, head));
    return EXIT.ok;
  } catch (err) {
    if (!isCaptureError(err)) throw err;
    printError(err, json);
    return exitCodeFor(err.code);
  }
}
