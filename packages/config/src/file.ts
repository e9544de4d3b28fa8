/**
 * The one loader of heapcap's YAML/JSON configuration files (the targets file,
 * the tokens file, the Slack users file): read, parse, validate with the
 * caller's zod schema, and fail with one error shape that names the file and
 * what is wrong in it (the line and column of a syntax error, the path of each
 * field the schema refused).
 */
import { readFile } from 'node:fs/promises';
import { isNode, LineCounter, parseDocument, YAMLParseError } from 'yaml';
import type { z } from 'zod';

/** What went wrong with a configuration file. */
export type ConfigFileProblem = 'unreadable' | 'syntax' | 'schema';

/** One refused field: its dotted path in the file (`targets.0.inspect`) and why. */
export interface ConfigFileIssue {
  path: string;
  message: string;
  /** 1-based position of the refused value in the file, when it is there (a missing key has none: its parent's is given). */
  line?: number;
  column?: number;
}

/** A configuration file that cannot be read, parsed or validated. The message starts with the file's path. */
export class ConfigFileError extends Error {
  override readonly name = 'ConfigFileError';
  readonly code = 'invalid_config';
  readonly problem: ConfigFileProblem;
  readonly file: string;
  /** 1-based position of a syntax error, when the parser knows it. */
  readonly line: number | undefined;
  readonly column: number | undefined;
  /** The fields the schema refused (empty for other problems). */
  readonly issues: ConfigFileIssue[];

  constructor(problem: ConfigFileProblem, file: string, message: string, details: { line?: number; column?: number; issues?: ConfigFileIssue[]; cause?: unknown } = {}) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.problem = problem;
    this.file = file;
    this.line = details.line;
    this.column = details.column;
    this.issues = details.issues ?? [];
  }
}

/** Options of `loadConfigFile`. */
export interface LoadConfigFileOptions<T> {
  /** What the file is, for the message of an unreadable file (`targets file`). */
  what: string;
  /** Returned when the file does not exist; without it a missing file is an `unreadable` error. */
  ifMissing?: T;
}

/** Reads `path` (YAML, or JSON: YAML is a superset) and validates it with `schema`. */
export async function loadConfigFile<S extends z.ZodType>(path: string, schema: S, options: LoadConfigFileOptions<z.output<S>>): Promise<z.output<S>> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' && options.ifMissing !== undefined) return options.ifMissing;
    throw new ConfigFileError('unreadable', path, `cannot read the ${options.what} ${path}: ${code ?? (err as Error).message}`, { cause: err });
  }
  return parseConfigText(text, schema, path);
}

/** Parses the text of a configuration file named `file` (YAML or JSON) and validates it with `schema`. */
export function parseConfigText<S extends z.ZodType>(text: string, schema: S, file: string): z.output<S> {
  const lineCounter = new LineCounter();
  let raw: unknown;
  let doc: ReturnType<typeof parseDocument>;
  try {
    doc = parseDocument(text, { lineCounter });
    if (doc.errors.length > 0) throw doc.errors[0];
    raw = doc.toJS();
  } catch (err) {
    throw syntaxError(err, file);
  }
  // An empty file is an empty document: the schema says which keys it lacks.
  const parsed = schema.safeParse(raw ?? {});
  if (parsed.success) return parsed.data;
  const issues = parsed.error.issues.map((i) => ({ path: i.path.map(String).join('.'), message: i.message, ...positionOf(doc, lineCounter, i.path) }));
  throw new ConfigFileError('schema', file, `${file}: ${issues.map((i) => `${i.path === '' ? '(top level)' : i.path}: ${i.message}`).join('; ')}`, { issues });
}

/** Where the value at the dotted `path` (`schedules.0.every`) starts in a (parseable) YAML text, for checks made after the schema's. */
export function positionInText(text: string, path: string): { line?: number; column?: number } {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter });
  return positionOf(doc, lineCounter, path === '' ? [] : path.split('.').map((k) => (/^\d+$/.test(k) ? Number(k) : k)));
}

/** Where the value at `path` (or its nearest present parent) starts in the file. */
function positionOf(doc: ReturnType<typeof parseDocument>, lineCounter: LineCounter, path: readonly PropertyKey[]): { line?: number; column?: number } {
  for (let n = path.length; n >= 0; n--) {
    const node = doc.getIn(path.slice(0, n).map((k) => (typeof k === 'symbol' ? String(k) : k)), true);
    if (isNode(node) && node.range !== undefined && node.range !== null) {
      const pos = lineCounter.linePos(node.range[0]);
      return { line: pos.line, column: pos.col };
    }
  }
  return {};
}

/** Fails when a name appears twice (`label` says what the names are: `target id`, `token name`). */
export function assertUniqueNames(file: string, label: string, names: readonly string[]): void {
  const seen = new Set<string>();
  for (const name of names) {
    if (seen.has(name)) throw new ConfigFileError('schema', file, `${file}: ${label} "${name}" appears twice`);
    seen.add(name);
  }
}

/** The parser's error as `file:line:column: not YAML or JSON: what`. */
function syntaxError(err: unknown, file: string): ConfigFileError {
  const message = err instanceof Error ? err.message : String(err);
  const pos = err instanceof YAMLParseError ? err.linePos?.[0] : undefined;
  // yaml's message repeats the position and quotes the line after it; the position goes in front instead.
  const what = message.split('\n')[0]!.replace(/ at line \d+, column \d+:?$/, '');
  const where = pos === undefined ? file : `${file}:${pos.line}:${pos.col}`;
  return new ConfigFileError('syntax', file, `${where}: not YAML or JSON: ${what}`, { ...(pos === undefined ? {} : { line: pos.line, column: pos.col }), cause: err });
}
