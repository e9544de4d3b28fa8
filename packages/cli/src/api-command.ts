/**
 * The commands that are one API resource each (`targets`, `captures`, `watch`,
 * `hunt start|show`): `heapcap GROUP SUB [ARGS] [--flags] [--json]`. One place
 * parses their flags, prints `--help` (with examples), words mistakes with a
 * "did you mean", prints tables or the API's JSON, and turns API errors into
 * the README's exit codes.
 */
import { DEFAULT_API_URL } from '@heapcap/config';
import { EXIT } from './exit-codes.ts';
import { FlagError, parseFlags, type FlagSpec, type Flags } from './flags.ts';
import { didYouMean } from '@heapcap/config';
import { apiTargetFrom, reportRestError, RestError, type ApiTarget, type CliIo } from './status-client.ts';

/** What a subcommand's `run` gets. */
export interface SubContext<S extends FlagSpec> {
  api: ApiTarget;
  io: CliIo;
  json: boolean;
  values: Flags<S & { json: { type: 'boolean' } }>['values'];
  positionals: string[];
  /** The API's JSON with --json, else `human()`. */
  print(data: unknown, human: () => string): void;
}

/** One subcommand: its positional arguments (all required), flags, help and examples. */
export interface Subcommand<S extends FlagSpec = FlagSpec> {
  /** `ID`, `TARGET`…: the positionals, in order. */
  args: readonly string[];
  /** Flags on top of --json. */
  flags: S;
  /** One line: what it does. */
  summary: string;
  /** Lines describing the flags (already indented). */
  options?: string;
  examples: readonly string[];
  /** The id the command names a target by (for "did you mean" on target_not_found). */
  targetOf?: (positionals: string[], values: SubContext<S>['values']) => string | undefined;
  run(ctx: SubContext<S>): Promise<number>;
}

/** Declare a subcommand with its flag types checked against its `run`. */
export function sub<S extends FlagSpec>(s: Subcommand<S>): Subcommand {
  return s as unknown as Subcommand;
}

const API_LINE = `API: HEAPCAP_API_URL (default ${DEFAULT_API_URL}), token: HEAPCAP_TOKEN.`;

function synopsis(group: string, name: string, s: Subcommand): string {
  return `heapcap ${group} ${name}${s.args.map((a) => ` ${a}`).join('')} [options]`;
}

/** `heapcap GROUP --help`: every subcommand with its summary, then examples. */
export function groupUsage(group: string, intro: string, subs: Record<string, Subcommand>): string {
  const lines = Object.entries(subs).map(([name, s]) => `  ${synopsis(group, name, s).padEnd(44)} ${s.summary}`);
  const examples = Object.values(subs).flatMap((s) => s.examples.slice(0, 1));
  return `heapcap ${group}: ${intro}\n\n${lines.join('\n')}\n\nEvery subcommand takes --json (the API's JSON instead of a table) and --help.\n\nExamples:\n${examples.map((e) => `  ${e}`).join('\n')}\n\n${API_LINE}\n`;
}

function subUsage(group: string, name: string, s: Subcommand): string {
  return `${synopsis(group, name, s)}: ${s.summary}\n\n${s.options ?? ''}${s.options === undefined ? '' : '\n'}  --json  print the API's JSON\n\nExamples:\n${s.examples.map((e) => `  ${e}`).join('\n')}\n\n${API_LINE}\n`;
}

/** Run `heapcap GROUP ARGV`; resolves with the exit code. */
export async function runGroup(
  group: string,
  intro: string,
  subs: Record<string, Subcommand>,
  argv: string[],
  env: Record<string, string | undefined>,
  io: CliIo = { stdout: process.stdout, stderr: process.stderr },
): Promise<number> {
  const usage = groupUsage(group, intro, subs);
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    io[name === undefined ? 'stderr' : 'stdout'].write(usage);
    return name === undefined ? EXIT.usage : EXIT.ok;
  }
  const s = Object.hasOwn(subs, name) ? subs[name] : undefined;
  if (s === undefined) {
    io.stderr.write(`invalid_input: unknown subcommand "heapcap ${group} ${name}"${didYouMean(name, Object.keys(subs))}\n\n${usage}`);
    return EXIT.usage;
  }
  if (rest.includes('--help') || rest.includes('-h')) {
    io.stdout.write(subUsage(group, name, s));
    return EXIT.ok;
  }
  let parsed: Flags<FlagSpec>;
  try {
    parsed = parseFlags(rest, { ...s.flags, json: { type: 'boolean' } }, s.args.length);
    if (parsed.positionals.length < s.args.length) throw new FlagError('', `heapcap ${group} ${name} needs ${s.args.slice(parsed.positionals.length).join(' ')}`);
  } catch (err) {
    if (!(err instanceof FlagError)) throw err;
    io.stderr.write(`invalid_input: ${err.message}\n\n${subUsage(group, name, s)}`);
    return EXIT.usage;
  }
  const json = (parsed.values as Record<string, unknown>)['json'] === true;
  let api: ApiTarget | undefined;
  try {
    api = apiTargetFrom(env);
    return await s.run({
      api,
      io,
      json,
      values: parsed.values,
      positionals: parsed.positionals,
      print: (data, human) => io.stdout.write(json ? `${JSON.stringify(data, null, 2)}\n` : `${human()}\n`),
    });
  } catch (err) {
    if (err instanceof UsageError) {
      io.stderr.write(`invalid_input: ${err.message}\n\n${subUsage(group, name, s)}`);
      return EXIT.usage;
    }
    if (!(err instanceof RestError)) throw err;
    return reportRestError(io, err, api, s.targetOf?.(parsed.positionals, parsed.values));
  }
}

/** A mistake in the arguments found by a subcommand's `run` (before any call): printed with its usage, exit 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/** The last value of a string flag. */
export function flag(values: Record<string, true | string[] | undefined>, name: string): string | undefined {
  const v = values[name];
  return Array.isArray(v) ? v[v.length - 1] : undefined;
}

/** A whole number flag in [min, max]; throws UsageError naming it. */
export function intFlag(values: Record<string, true | string[] | undefined>, name: string, min: number, max: number): number | undefined {
  const v = flag(values, name);
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n < min || n > max) throw new UsageError(`--${name} takes a whole number from ${min} to ${max}, got "${v}"`);
  return n;
}

/** Seconds of a duration flag (`90s`, `5m`, `1h` or plain seconds); throws UsageError naming it. */
export function secondsFlag(values: Record<string, true | string[] | undefined>, name: string, parse: (text: string) => number | undefined): number | undefined {
  const v = flag(values, name);
  if (v === undefined) return undefined;
  const ms = /^\d+(\.\d+)?$/.test(v) ? Number(v) * 1000 : parse(v);
  if (ms === undefined || ms <= 0) throw new UsageError(`--${name} takes a duration such as 30s, 5m or 1h, got "${v}"`);
  return ms / 1000;
}

/** Wait `ms` (between polls of a job the API runs). */
export function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
