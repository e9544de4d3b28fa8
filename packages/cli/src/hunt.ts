/**
 * `heapcap hunt [start] TARGET [--interval 60s] [--reason TEXT] [--detach] [--json]`
 * and `heapcap hunt show ID`: a leak hunt
 * through the API (POST /v1/leak-hunts), waited for (GET /v1/leak-hunts/ID
 * until it ends), then its report: suspects first, as in a diff, then the
 * classes. Exit code: 0 when the hunt succeeded, else the code of its error.
 */
import { parseArgs } from 'node:util';
import { formatPath, type LeakHunt, type Suspects } from '@heapcap/analysis';
import { DEFAULT_API_URL, parseDuration } from '@heapcap/config';
import { EXIT, exitCodeForApiError } from './exit-codes.ts';
import { openLine } from './open-line.ts';
import { formatSuspects } from './analysis-format.ts';
import { FlagError, parseArgsMessage, parseFlags } from './flags.ts';
import { apiTargetFrom, callApi, apiTargetOrUndefined, reportRestError, RestError, type CliIo } from './status-client.ts';

/** The API's longest interval (MAX_HUNT_INTERVAL_SECONDS in services/api). */
const MAX_INTERVAL_S = 3600;

export const HUNT_USAGE = `heapcap hunt start TARGET [options]: hunt a leak in a registered target through the API
heapcap hunt show ID [--json]: a hunt's progress, or its report once it ended
(heapcap hunt TARGET is heapcap hunt start TARGET)

Three snapshots of TARGET on one inspector session, INTERVAL apart (baseline,
target, final); objects created between the first two that still live in the
third are the candidates. Prints the suspects (folded into their owners and
ranked as in heapcap diff, each with who holds it), then the classes.

  --interval DURATION  time between the snapshots (default 60s; 1s to 1h): let the
                       service do its work (or drive it) in between
  --reason TEXT        why (kept on the hunt, audit log)
  --no-allocations     do not track allocations between the baseline and target
                       snapshots (tracking is on by default: each suspect then says
                       where its objects were allocated; it slows the target meanwhile)
  --json               print the API's JSON (hunt record and report)
  --detach             print the hunt's id and return; follow it with heapcap hunt show ID

Driving the target right after the baseline (the token needs targets:admin):
  --http URL           send requests to URL, on the target's own host only
  --method METHOD      their method (default GET)
  --count N            how many, one after the other (default 1)
  --evaluate EXPR      or evaluate EXPR in the target (Runtime.evaluate, 30 s)
  --rounds N           run the drive N times before the target snapshot (default 3,
                       1 to 20) and once more before the final one: a suspect must
                       grow in every round (reported per round); a buffer the target
                       replaces does not. Without a drive the report says it cannot
                       tell a replaced buffer from a leak

Waits until the hunt ends (two intervals plus the snapshots). Exit code: 0 when
it succeeded, else the code of its error (3 target, 4 snapshot, 6 too large, …).
API: HEAPCAP_API_URL (default ${DEFAULT_API_URL}), token: HEAPCAP_TOKEN (scopes
captures:write to start it, artifacts:read to read the report).

Examples:
  heapcap hunt start checkout-1 --interval 2m --reason "heap grows after deploy 4.2"
  heapcap hunt start checkout-1 --interval 30s --http http://127.0.0.1:3000/cart --count 200
  heapcap hunt start checkout-1 --detach && heapcap hunt show HUNT_ID
`;

/** Parsed `heapcap hunt` arguments. */
export interface HuntArgs {
  target: string;
  intervalSeconds: number;
  reason: string | undefined;
  json: boolean;
  /** Return once the hunt is queued. */
  detach: boolean;
  /** false with --no-allocations. */
  allocations: boolean;
  /** The API's `drive`, when one was asked for. */
  drive: ({ http: { method: string; url: string; count: number } } | { evaluate: string }) & { rounds?: number } | undefined;
}

export const HUNT_OPTIONS = {
  interval: { type: 'string' },
  reason: { type: 'string' },
  json: { type: 'boolean' },
  detach: { type: 'boolean' },
  'no-allocations': { type: 'boolean' },
  http: { type: 'string' },
  method: { type: 'string' },
  count: { type: 'string' },
  evaluate: { type: 'string' },
  rounds: { type: 'string' },
} as const;

/** Parse arguments; throws Error with what is wrong. */
export function parseHuntArgs(argv: string[]): HuntArgs {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, allowPositionals: true, strict: true, options: HUNT_OPTIONS });
  } catch (err) {
    throw new Error(parseArgsMessage(err, HUNT_OPTIONS));
  }
  const { values, positionals } = parsed;
  const [target, ...extra] = positionals;
  if (target === undefined) throw new Error('which target? heapcap hunt TARGET');
  if (extra.length > 0) throw new Error(`unexpected argument "${extra[0]}"`);
  const text = values.interval ?? '60s';
  const ms = /^\d+$/.test(text) ? Number(text) * 1000 : parseDuration(text);
  if (ms === undefined || ms % 1000 !== 0 || ms < 1000 || ms > MAX_INTERVAL_S * 1000) throw new Error(`--interval "${text}" must be whole seconds from 1s to 1h, e.g. 60s or 5m`);
  if (values.http !== undefined && values.evaluate !== undefined) throw new Error('--http and --evaluate: one drive at a time');
  if (values.http === undefined && (values.method !== undefined || values.count !== undefined)) throw new Error('--method and --count go with --http URL');
  if (values.rounds !== undefined && values.http === undefined && values.evaluate === undefined) throw new Error('--rounds goes with a drive (--http URL or --evaluate EXPR)');
  const rounds = values.rounds === undefined ? undefined : Number(values.rounds);
  if (rounds !== undefined && (!Number.isInteger(rounds) || rounds < 1 || rounds > 20)) throw new Error(`--rounds "${values.rounds}" must be a whole number from 1 to 20`);
  let drive: HuntArgs['drive'];
  if (values.evaluate !== undefined) drive = { evaluate: values.evaluate, ...(rounds === undefined ? {} : { rounds }) };
  else if (values.http !== undefined) {
    const count = Number(values.count ?? '1');
    if (!Number.isInteger(count) || count < 1 || count > 10_000) throw new Error(`--count "${values.count}" must be a whole number from 1 to 10000`);
    drive = { http: { method: (values.method ?? 'GET').toUpperCase(), url: values.http, count }, ...(rounds === undefined ? {} : { rounds }) };
  }
  return { target, intervalSeconds: ms / 1000, reason: values.reason, json: values.json ?? false, detach: values.detach ?? false, allocations: values['no-allocations'] !== true, drive };
}

interface HuntRecordLike {
  id: string;
  targetId: string;
  status: 'queued' | 'running' | 'succeeded' | 'failed';
  phase: string | null;
  error?: { code: string; message: string; hint?: string };
}
interface HuntBody {
  hunt: HuntRecordLike;
  report: LeakHunt | null;
}

/** Exit code for an ended hunt: 0 succeeded, else its error's. */
export function exitCodeForHunt(h: HuntRecordLike): number {
  if (h.status === 'succeeded') return EXIT.ok;
  return exitCodeForApiError(h.error?.code);
}

const int = (n: number): string => n.toLocaleString('en-US');
const mib = (b: number): string => `${(b / 1024 / 1024).toFixed(2)} MiB`;

/** The report as text: suspects, then the classes with their largest instance's path. */
export function formatHunt(hunt: HuntRecordLike, report: LeakHunt): string {
  const out = [`leak hunt ${hunt.id} of ${hunt.targetId}: ${int(report.survivingCount)} of ${int(report.createdCount)} objects created between baseline and target still alive in final (${mib(report.survivingSelfSize)})`, ''];
  const suspects: Suspects = report.suspects ?? { mode: 'summary', note: 'this report predates suspects', suspects: [] };
  out.push(...formatSuspects(suspects).map((l) => l.replace('largest new retained memory first', 'largest surviving new memory first')));
  if (report.note !== undefined) out.push(`  note: ${report.note}`);
  out.push('');
  out.push('classes, largest surviving self size first:');
  if (report.classes.length === 0) out.push('  none: nothing created between baseline and target is still alive');
  for (const c of report.classes) {
    out.push(`  ${c.name}: ${int(c.count)} (${mib(c.selfSize)})`);
    if (c.representative.path !== null) out.push(`      ${formatPath(c.representative.path)}`);
  }
  return `${out.join('\n')}\n`;
}

/** Run `heapcap hunt`; resolves with the exit code. */
export async function huntMain(argv: string[], env: Record<string, string | undefined>, io: CliIo = { stdout: process.stdout, stderr: process.stderr }): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    io.stdout.write(HUNT_USAGE);
    return EXIT.ok;
  }
  if (argv[0] === 'show') return huntShow(argv.slice(1), env, io);
  // `hunt start TARGET`; `hunt TARGET` as before (a target named "start" is `hunt start start`).
  if (argv[0] === 'start') argv = argv.slice(1);
  let args: HuntArgs;
  try {
    args = parseHuntArgs(argv);
  } catch (err) {
    io.stderr.write(`invalid_input: ${(err as Error).message}\n\n${HUNT_USAGE}`);
    return EXIT.usage;
  }
  try {
    const api = apiTargetFrom(env);
    const created = await callApi(api, 'POST', '/v1/leak-hunts', { target: args.target, interval: args.intervalSeconds, reason: args.reason, drive: args.drive, ...(args.allocations ? {} : { allocations: false }) }, 30_000);
    let body = created.body as HuntBody;
    const id = body.hunt.id;
    io.stderr.write(`leak hunt ${id} of ${args.target}: three snapshots ${args.intervalSeconds} s apart\n`);
    // The cost the on-call reader should weigh (bench/README.md, hunt-tracking: a busy HTTP target served about a tenth
    // of its requests per second while V8 tracked allocations).
    if (args.allocations) io.stderr.write(`  allocation tracking is on from the baseline to the target snapshot: it slows a busy target meanwhile (--no-allocations turns it off)\n`);
    if (args.detach) {
      io.stdout.write(args.json ? `${JSON.stringify(body, null, 2)}\n` : `${id}\n`);
      return EXIT.ok;
    }
    // Two intervals, three snapshots (each up to the worker's 30 min deadline) and the report: the worker ends every hunt;
    // this bound only keeps a lost API from holding the terminal for ever.
    const deadline = Date.now() + (2 * args.intervalSeconds + 3 * 1800 + 600) * 1000;
    let phase: string | null = null;
    while (body.hunt.status === 'queued' || body.hunt.status === 'running') {
      if (Date.now() > deadline) {
        io.stderr.write(`the hunt is still ${body.hunt.status} (${body.hunt.phase ?? 'queued'}); follow it with GET /v1/leak-hunts/${id}\n`);
        return EXIT.internal;
      }
      if (body.hunt.phase !== phase) {
        phase = body.hunt.phase;
        if (phase !== null) io.stderr.write(`  ${phase}\n`);
      }
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      body = (await callApi(api, 'GET', `/v1/leak-hunts/${id}`, undefined, 30_000)).body as HuntBody;
    }
    if (args.json) io.stdout.write(`${JSON.stringify(body, null, 2)}\n`);
    else if (body.report !== null) io.stdout.write(`${formatHunt(body.hunt, body.report)}${openLine(api.url, { hunt: id })}`);
    if (body.hunt.status === 'failed') {
      const e = body.hunt.error;
      io.stderr.write(`${e?.code ?? 'internal'}: ${e?.message ?? 'the hunt failed'}\n${e?.hint === undefined ? '' : `hint: ${e.hint}\n`}`);
    }
    return exitCodeForHunt(body.hunt);
  } catch (err) {
    if (!(err instanceof RestError)) throw err;
    return reportRestError(io, err, apiTargetOrUndefined(env), args.target);
  }
}

/** `heapcap hunt show ID [--json]`: where the hunt is, or its report; exit code as for a waited hunt (0 while it runs). */
async function huntShow(argv: string[], env: Record<string, string | undefined>, io: CliIo): Promise<number> {
  let flags;
  try {
    flags = parseFlags(argv, { json: { type: 'boolean' } }, 1);
  } catch (err) {
    if (!(err instanceof FlagError)) throw err;
    flags = undefined;
  }
  const id = flags?.positionals[0];
  if (flags === undefined || id === undefined) {
    io.stderr.write(`invalid_input: heapcap hunt show takes one hunt id\n\n${HUNT_USAGE}`);
    return EXIT.usage;
  }
  try {
    const api = apiTargetFrom(env);
    const body = (await callApi(api, 'GET', `/v1/leak-hunts/${encodeURIComponent(id)}`, undefined, 30_000)).body as HuntBody;
    if (flags.values.json === true) io.stdout.write(`${JSON.stringify(body, null, 2)}\n`);
    else if (body.report !== null) io.stdout.write(formatHunt(body.hunt, body.report));
    else io.stdout.write(`leak hunt ${body.hunt.id} of ${body.hunt.targetId}: ${body.hunt.status}${body.hunt.phase === null ? '' : ` (${body.hunt.phase})`}\n`);
    if (flags.values.json !== true) io.stdout.write(openLine(api.url, { hunt: body.hunt.id }));
    if (body.hunt.status === 'queued' || body.hunt.status === 'running') return EXIT.ok;
    if (body.hunt.status === 'failed') io.stderr.write(`${body.hunt.error?.code ?? 'internal'}: ${body.hunt.error?.message ?? 'the hunt failed'}\n`);
    return exitCodeForHunt(body.hunt);
  } catch (err) {
    if (!(err instanceof RestError)) throw err;
    return reportRestError(io, err);
  }
}
