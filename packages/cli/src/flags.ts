/**
 * Flags of the commands that take a few options (`trigger`, `status`,
 * `schedules`, `serve`, `api`, `worker`): node's `util.parseArgs` splits the
 * arguments (`--name value`, `--name=value`, `-h`, `--`), and its tokens are
 * checked here so every command words the same mistakes the same way
 * (`unknown option --x`, `--reason needs a value`, `unexpected argument "x"`),
 * with the offending argument at hand for commands that word them otherwise.
 */
import { parseArgs } from 'node:util';
import { didYouMean } from '@heapcap/config';

/** What a command accepts: each option is a boolean flag or takes a string value. */
export type FlagSpec = Record<string, { type: 'boolean' | 'string'; short?: string }>;

/** The parsed flags: booleans present, string values in the order given (a repeated option keeps every value). */
export interface Flags<S extends FlagSpec> {
  values: { [K in keyof S]?: S[K]['type'] extends 'boolean' ? true : string[] };
  positionals: string[];
}

/** An argument the command does not take; `arg` is it as typed. */
export class FlagError extends Error {
  override readonly name = 'FlagError';
  readonly arg: string;
  /** ` (did you mean "--x"?)` for an unknown option close to a known one, else empty (already part of the message). */
  readonly suggestion: string;
  constructor(arg: string, message: string, suggestion = '') {
    super(`${message}${suggestion}`);
    this.arg = arg;
    this.suggestion = suggestion;
  }
}

/** Parse `argv` against `spec`, allowing at most `maxPositionals` positional arguments; throws FlagError. */
export function parseFlags<S extends FlagSpec>(argv: string[], spec: S, maxPositionals: number): Flags<S> {
  // strict: false so that the checks below, not parseArgs's own messages, word each mistake.
  const { tokens } = parseArgs({ args: argv, options: spec, strict: false, allowPositionals: true, tokens: true });
  const values: Record<string, true | string[]> = {};
  const positionals: string[] = [];
  for (const t of tokens) {
    if (t.kind === 'positional') {
      if (positionals.length >= maxPositionals) throw new FlagError(t.value, `unexpected argument "${t.value}"`);
      positionals.push(t.value);
    } else if (t.kind === 'option') {
      const typed = t.inlineValue === true ? `${t.rawName}=${t.value ?? ''}` : t.rawName;
      const option = Object.hasOwn(spec, t.name) ? spec[t.name] : undefined;
      if (option === undefined) throw new FlagError(typed, `unknown option ${t.rawName}`, didYouMean(`--${t.name}`, Object.keys(spec).map((k) => `--${k}`)));
      if (option.type === 'boolean') {
        if (t.inlineValue === true) throw new FlagError(typed, `${t.rawName} takes no value`);
        values[t.name] = true;
      } else {
        if (t.value === undefined) throw new FlagError(typed, `${t.rawName} needs a value`);
        const list = values[t.name];
        values[t.name] = Array.isArray(list) ? [...list, t.value] : [t.value];
      }
    }
  }
  return { values: values as Flags<S>['values'], positionals };
}

/** The last value of a string option (the one that wins when it is repeated). */
export function lastValue(values: string[] | undefined): string | undefined {
  return values?.[values.length - 1];
}

/**
 * node's parseArgs refusal in our words, with the closest known option for an
 * unknown one (`unknown option --nod (did you mean "--node"?)`); for the
 * commands that call parseArgs strictly themselves.
 */
export function parseArgsMessage(err: unknown, options: Record<string, unknown>): string {
  const message = (err as Error).message;
  const unknown = /^Unknown option '([^']+)'/.exec(message)?.[1];
  if (unknown === undefined) return message;
  return `unknown option ${unknown}${didYouMean(unknown, Object.keys(options).map((k) => `--${k}`))}`;
}
