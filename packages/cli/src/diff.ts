/**
 * `heapcap diff A B [--json] [--top N] [--retained] [--force]`: per-class
 * growth between two local snapshot files, or between two captures through
 * the API (GET /v1/diff, from the summaries written while they streamed).
 */
import { existsSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { parseArgsMessage } from './flags.ts';
import { openLine } from './open-line.ts';
import { analyzeSnapshotFile, diffSummaries, summarizeFile, type DiffOptions, type ProfileDiff, type SummaryDiff } from '@heapcap/analysis';
import { DEFAULT_API_URL, ID_PATTERN } from '@heapcap/config';
import { CaptureError, isCaptureError } from '@heapcap/errors';
import { apiTargetFrom, callApi, reportRestError, RestError } from './status-client.ts';
import { EXIT, exitCodeFor } from './exit-codes.ts';
import { printError } from './print-error.ts';
import { formatDiff } from './analysis-format.ts';
import { formatProfileDiff } from './profiles.ts';
import { DEFAULT_ANALYSIS_MAX_BYTES, positiveInt } from './analyze.ts';

export const DIFF_USAGE = `heapcap diff BASE HEAD [--json] [--top N] [--summary-only] [--max-bytes N] [--force] [--verbose]

What grew from BASE to HEAD. First the suspects: the few owners of new
memory (engine internals, strings and fields folded into the object that
holds them), each with who holds it and a retainer path; then per-class
count and self-size deltas, largest growth first. BASE and HEAD are two local
.heapsnapshot or .heapsnapshot.gz files (both analysed here), or two capture
ids: then the API compares the captures (GET /v1/diff); its suspects have
holders once both captures are analysed (it queues the analyses). Two
allocation sampling profiles are compared by allocation site instead: the
code whose live allocations grew most; two snapshots that each have a
continuous profile stored beside them get that comparison of their profiles
after the classes.

  --top N          rows shown (default 20)
  --summary-only   files: skip the analyses (fast, no holders, no retained sizes)
  --retained       (kept for scripts: files are analysed unless --summary-only)
  --max-bytes N    files: analyse snapshots up to this size (default ${DEFAULT_ANALYSIS_MAX_BYTES});
                   larger ones get summary-only suspects
  --force          capture ids: compare captures of two different targets
  --json           print the whole diff as JSON
  --verbose        each suspect's whole retainer path (V8's roots, tables and
                   contexts), not only the application's own names

Examples:
  heapcap diff before.heapsnapshot.gz after.heapsnapshot.gz --top 10
  heapcap diff 01M7ZHH716228KMD1V49A92AEZ 01M7ZJ2B8Q4K7T0V5N3XW6YDCE      # two capture ids, through the API

API: HEAPCAP_API_URL (default ${DEFAULT_API_URL}), token: HEAPCAP_TOKEN (scope artifacts:read).
`;

export const DIFF_OPTIONS = {
  json: { type: 'boolean' },
  top: { type: 'string' },
  retained: { type: 'boolean' },
  'summary-only': { type: 'boolean' },
  'max-bytes': { type: 'string' },
  force: { type: 'boolean' },
  verbose: { type: 'boolean' },
} as const;

/** Most classes asked of the API: all of them for any real heap (the table says how many changed). */
const API_CLASSES = 10_000;

/** True when `arg` names a capture rather than a file: not on disk, an id, not a snapshot file name. */
function isCaptureId(arg: string): boolean {
  return !existsSync(arg) && ID_PATTERN.test(arg) && !/\.heapsnapshot(\.gz)?$/.test(arg);
}

/** `heapcap diff ID ID`: GET /v1/diff. */
async function diffCaptures(base: string, head: string, opts: { json: boolean; top: number; force: boolean; verbose: boolean }, env: Record<string, string | undefined>): Promise<number> {
  const query = new URLSearchParams({ base, head, limit: String(API_CLASSES), ...(opts.force ? { force: 'true' } : {}) });
  try {
    const api = apiTargetFrom(env);
    const res = await callApi(api, 'GET', `/v1/diff?${query.toString()}`, undefined, 60_000);
    const body = res.body as { diff: SummaryDiff | null; allocations: ProfileDiff | null; forced: boolean; base: { targetId: string }; head: { targetId: string } };
    const label = (id: string, side: { targetId: string }): string => `capture ${id} (${side.targetId})`;
    const [b, h] = [label(base, body.base), label(head, body.head)];
    // Two allocation sampling profiles have no summaries: their diff is by allocation site.
    // Two snapshots with a continuous profile beside each: the classes, then the sites between those profiles.
    const beside = (): string => (body.allocations === null ? '' : `\n${formatProfileDiff(body.allocations, opts.top, `the profile beside ${b}`, `the profile beside ${h}`)}`);
    const human = (): string => (body.diff === null ? (body.allocations === null ? '' : formatProfileDiff(body.allocations, opts.top, b, h)) : `${formatDiff(body.diff, opts.top, b, h, opts.verbose)}${beside()}`);
    process.stdout.write(opts.json ? `${JSON.stringify(body, null, 2)}\n` : `${human()}${openLine(api.url, { compare: [base, head] })}`);
    return EXIT.ok;
  } catch (err) {
    if (!(err instanceof RestError)) throw err;
    // The API's way round a target mismatch is its query parameter force=true; a CLI user's is --force.
    if (err.code === 'target_mismatch') err.message = err.message.replace(/\bforce=true\b/g, '--force');
    // The API's stable code (summary_missing, target_mismatch, not_found, …), as `heapcap status` prints it.
    if (opts.json) process.stdout.write(`${JSON.stringify({ error: { code: err.code, message: err.message, status: err.status } }, null, 2)}\n`);
    return reportRestError({ stdout: process.stdout, stderr: process.stderr }, err);
  }
}

/** Both files' analyses for suspects with holders; above `maxBytes`, a note saying why the suspects are summary-only. */
async function analyses(base: string, head: string, maxBytes: number): Promise<DiffOptions> {
  try {
    // One at a time: each graph is dropped once its analysis is made.
    const baseAnalysis = await analyzeSnapshotFile(base, { maxBytes });
    return { baseAnalysis, headAnalysis: await analyzeSnapshotFile(head, { maxBytes }) };
  } catch (err) {
    if (!isCaptureError(err, 'analysis_too_large')) throw err;
    return { summaryNote: `summary-only: ${err.message}` };
  }
}

/** Run `heapcap diff`; returns the exit code. */
export async function diffMain(argv: string[], env: Record<string, string | undefined>): Promise<number> {
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
        options: DIFF_OPTIONS,
      });
    } catch (err) {
      throw new CaptureError('invalid_input', parseArgsMessage(err, DIFF_OPTIONS), { hint: 'see heapcap diff --help' });
    }
    const { values, positionals } = parsed;
    const [base, head] = positionals;
    if (positionals.length !== 2 || base === undefined || head === undefined) {
      throw new CaptureError('invalid_input', 'heapcap diff takes two snapshot files or two capture ids', { hint: 'heapcap diff BASE.heapsnapshot HEAD.heapsnapshot, or heapcap diff BASE_ID HEAD_ID' });
    }
    const top = positiveInt(values.top, '--top') ?? 20;
    const ids = [isCaptureId(base), isCaptureId(head)];
    if (ids[0] !== ids[1]) {
      throw new CaptureError('invalid_input', `${ids[0] ? base : head} is not a file, so it was taken for a capture id; the other is a file`, {
        hint: 'give two snapshot files, or two capture ids (download one with GET /v1/captures/ID/artifact)',
      });
    }
    if (ids[0] === true) {
      if (values.retained === true || values['max-bytes'] !== undefined || values['summary-only'] === true) {
        throw new CaptureError('invalid_input', 'with capture ids, retained sizes come from the captures\' analyses', { hint: 'POST /v1/captures/ID/analysis for both; the diff then carries retained deltas' });
      }
      return await diffCaptures(base, head, { json, top, force: values.force === true, verbose: values.verbose === true }, env);
    }
    if (values.force === true) throw new CaptureError('invalid_input', '--force is for capture ids (two targets); files are always compared');
    const maxBytes = positiveInt(values['max-bytes'], '--max-bytes') ?? DEFAULT_ANALYSIS_MAX_BYTES;
    const [baseSummary, headSummary] = [await summarizeFile(base), await summarizeFile(head)];
    const diff = diffSummaries(baseSummary, headSummary, values['summary-only'] === true ? { summaryNote: 'summary-only: --summary-only given' } : await analyses(base, head, maxBytes));
    process.stdout.write(json ? `${JSON.stringify(diff, null, 2)}\n` : formatDiff(diff, top, base, head, values.verbose === true));
    return EXIT.ok;
  } catch (err) {
    if (!isCaptureError(err)) throw err;
    printError(err, json);
    return exitCodeFor(err.code);
  }
}
