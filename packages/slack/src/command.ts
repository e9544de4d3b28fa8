/**
 * The `/heapcap` command language: a verb, then its arguments. What an
 * engineer types in an incident channel is forgiving: extra spaces, smart
 * quotes from a phone or a Mac, Slack's own markup in the reason, a reason of
 * any length (the record keeps the first MAX_REASON characters and says so).
 */
import { ID_PATTERN, parseDuration } from '@heapcap/config';
import { decodeSlackText, fit, graphemeLength, squash } from './text.ts';

/** The longest reason a capture record keeps (the trigger schema's limit). */
export const MAX_REASON = 1000;

/** A parsed command line. */
export type SlackCommand =
  | { kind: 'help' }
  /** `reasonLength` and `keptLength` count characters as a reader does (graphemes); the record's limit counts UTF-16 units. */
  | { kind: 'capture'; target: string; reason: string | undefined; reasonLength: number; keptLength: number; truncated: boolean }
  | { kind: 'status'; captureId: string }
  | { kind: 'list'; target: string | undefined }
  | { kind: 'targets' }
  | { kind: 'schedules'; target: string | undefined }
  | { kind: 'diff'; a: string; b: string }
  /** Start a leak hunt of `target`, snapshots `intervalSeconds` apart; `allocations: false` with `--no-allocations`. */
  | { kind: 'hunt'; target: string; intervalSeconds: number; allocations: boolean }
  /** Show hunt `huntId`: its phase, or its suspects once it ended. */
  | { kind: 'huntStatus'; huntId: string }
  /** A known verb with arguments it cannot use; `problem` says what is wrong. */
  | { kind: 'usage'; verb: Verb; problem: string }
  | { kind: 'unknown'; word: string };

/** The verbs, in the order help lists them. */
export const VERBS = ['capture', 'status', 'list', 'targets', 'schedules', 'diff', 'hunt', 'help'] as const;
export type Verb = (typeof VERBS)[number];

/** One line of usage per verb. */
export const USAGE: Record<Verb, string> = {
  capture: 'capture <target> [reason]',
  status: 'status <captureId>',
  list: 'list [target]',
  targets: 'targets',
  schedules: 'schedules [target]',
  diff: 'diff <captureA> <captureB>',
  hunt: 'hunt <target> [interval] [--no-allocations] | hunt <huntId>',
  help: 'help',
};

const ALIASES: Record<string, Verb> = {
  capture: 'capture',
  snapshot: 'capture',
  snap: 'capture',
  status: 'status',
  show: 'status',
  list: 'list',
  ls: 'list',
  recent: 'list',
  targets: 'targets',
  target: 'targets',
  schedules: 'schedules',
  schedule: 'schedules',
  diff: 'diff',
  compare: 'diff',
  hunt: 'hunt',
  'leak-hunt': 'hunt',
  help: 'help',
  '?': 'help',
  '-h': 'help',
  '--help': 'help',
};

// Straight, curly and guillemet quotes, each with its closing partner.
const QUOTES: Record<string, string> = { '"': '"', "'": "'", '\u201c': '\u201d', '\u201e': '\u201c', '\u2018': '\u2019', '\u00ab': '\u00bb', '`': '`' };

/** `text` without one pair of matching surrounding quotes. */
function unquote(text: string): string {
  const close = QUOTES[text[0] ?? ''];
  if (close !== undefined && text.length >= 2 && text.endsWith(close)) return text.slice(1, -close.length).trim();
  return text;
}

/** The first whitespace-separated word (quotes around it removed) and the rest. */
function shift(text: string): [string, string] {
  const close = QUOTES[text[0] ?? ''];
  if (close !== undefined) {
    const end = text.indexOf(close, 1);
    if (end > 0) return [text.slice(1, end).trim(), text.slice(end + close.length).trim()];
  }
  const space = text.indexOf(' ');
  return space < 0 ? [text, ''] : [text.slice(0, space), text.slice(space + 1).trim()];
}

/** A hunt's id (a ULID, as capture ids): `hunt <this>` shows the hunt rather than starting one of a target so named. */
const HUNT_ID = /^[0-9A-HJKMNP-TV-Z]{26}$/i;
/** `--no-allocations` as `heapcap hunt` takes it; also with a dash, as a Mac or a phone turns `--` into one, or bare. */
const NO_ALLOCATIONS = /^(?:--|[\u2014\u2013])?no-allocations$/i;
/** The API's longest hunt interval (MAX_HUNT_INTERVAL_SECONDS). */
const MAX_HUNT_INTERVAL_S = 3600;

function idProblem(what: string, value: string): string | undefined {
  return ID_PATTERN.test(value) ? undefined : `\`${fit(value, 80)}\` is not a ${what} (letters, digits, ".", "_" or "-")`;
}

/** Parse the text after `/heapcap`. Never throws. */
export function parseCommand(raw: string): SlackCommand {
  const text = squash(decodeSlackText(raw));
  if (text === '') return { kind: 'help' };
  const [word, rest] = shift(text);
  const verb = ALIASES[word.toLowerCase()];
  if (verb === undefined) return { kind: 'unknown', word };
  const args = rest;
  switch (verb) {
    case 'help':
      return { kind: 'help' };
    case 'targets':
      return { kind: 'targets' };
    case 'capture': {
      const [target, reasonText] = shift(args);
      if (target === '') return { kind: 'usage', verb, problem: 'which target? Name one of the targets below.' };
      const problem = idProblem('target id', target);
      if (problem !== undefined) return { kind: 'usage', verb, problem };
      const reason = unquote(reasonText);
      if (reason === '') return { kind: 'capture', target, reason: undefined, reasonLength: 0, keptLength: 0, truncated: false };
      const length = graphemeLength(reason);
      if (reason.length <= MAX_REASON) return { kind: 'capture', target, reason, reasonLength: length, keptLength: length, truncated: false };
      const note = `… [truncated from ${length.toLocaleString('en-US')} characters]`;
      const kept = fit(reason, MAX_REASON, note);
      return { kind: 'capture', target, reason: kept, reasonLength: length, keptLength: graphemeLength(kept.slice(0, -note.length)), truncated: true };
    }
    case 'status': {
      const [id, extra] = shift(args);
      if (id === '') return { kind: 'usage', verb, problem: 'which capture? Give its id, e.g. from `/heapcap list`.' };
      const problem = idProblem('capture id', id) ?? (extra === '' ? undefined : 'one capture id at a time.');
      return problem === undefined ? { kind: 'status', captureId: id.toUpperCase() } : { kind: 'usage', verb, problem };
    }
    case 'list':
    case 'schedules': {
      const [target, extra] = shift(args);
      if (target === '') return { kind: verb, target: undefined };
      const problem = idProblem('target id', target) ?? (extra === '' ? undefined : 'at most one target.');
      return problem === undefined ? { kind: verb, target } : { kind: 'usage', verb, problem };
    }
    case 'hunt': {
      const [first, more] = shift(args);
      // The flag may come before or after the interval.
      const words = more === '' ? [] : more.split(' ');
      const allocations = !words.some((w) => NO_ALLOCATIONS.test(w));
      const [intervalText, extra] = shift(words.filter((w) => !NO_ALLOCATIONS.test(w)).join(' '));
      if (first === '' || NO_ALLOCATIONS.test(first)) return { kind: 'usage', verb, problem: 'which target? Name one of the targets below (or give a hunt id to see it).' };
      if (extra !== '') return { kind: 'usage', verb, problem: 'a target and at most an interval (e.g. `60s`, `5m`), and `--no-allocations` to hunt without tracking allocations.' };
      if (HUNT_ID.test(first) && intervalText === '' && allocations) return { kind: 'huntStatus', huntId: first.toUpperCase() };
      const problem = idProblem('target id', first);
      if (problem !== undefined) return { kind: 'usage', verb, problem };
      const text = intervalText === '' ? '60s' : intervalText;
      const ms = /^\d+$/.test(text) ? Number(text) * 1000 : parseDuration(text);
      if (ms === undefined || ms % 1000 !== 0 || ms < 1000 || ms > MAX_HUNT_INTERVAL_S * 1000) return { kind: 'usage', verb, problem: `\`${fit(text, 40)}\` is not an interval from 1s to 1h (e.g. \`60s\`, \`5m\`).` };
      return { kind: 'hunt', target: first, intervalSeconds: ms / 1000, allocations };
    }
    case 'diff': {
      const [a, more] = shift(args);
      const [b, extra] = shift(more);
      if (a === '' || b === '' || extra !== '') return { kind: 'usage', verb, problem: 'give exactly two capture ids.' };
      const problem = idProblem('capture id', a) ?? idProblem('capture id', b);
      return problem === undefined ? { kind: 'diff', a: a.toUpperCase(), b: b.toUpperCase() } : { kind: 'usage', verb, problem };
    }
  }
}
