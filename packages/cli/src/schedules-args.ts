/** Arguments of `heapcap schedules create`, turned into the API's schedule body. */
import { lastValue, parseFlags } from './flags.ts';

/** The body POST /v1/schedules takes (the API validates it; this only shapes it). */
export interface ScheduleBody {
  id?: string;
  target?: string;
  selector?: Record<string, string>;
  every?: string;
  cron?: string;
  timezone?: string;
  retention?: { keepLast?: number; maxAgeDays?: number };
  maxConcurrent?: number;
  enabled?: boolean;
  reason?: string;
  options?: { gc: boolean };
}

/** `service=checkout,env=prod` → `{service: "checkout", env: "prod"}`; throws naming the bad pair. */
export function parseSelectorArg(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const pair of text.split(',')) {
    const eq = pair.indexOf('=');
    if (eq <= 0) throw new Error(`--selector takes NAME=VALUE[,NAME=VALUE…], got "${pair}"`);
    out[pair.slice(0, eq).trim()] = pair.slice(eq + 1).trim();
  }
  return out;
}

function positiveNumber(flag: string, v: string, integer: boolean): number {
  const n = Number(v);
  if (!Number.isFinite(n) || n <= 0 || (integer && !Number.isInteger(n))) throw new Error(`${flag} takes a ${integer ? 'whole ' : ''}number above 0, got "${v}"`);
  return n;
}

/** The options `heapcap schedules create` takes. */
export const CREATE_FLAGS = {
  id: { type: 'string' },
  target: { type: 'string' },
  selector: { type: 'string' },
  every: { type: 'string' },
  cron: { type: 'string' },
  timezone: { type: 'string' },
  'keep-last': { type: 'string' },
  'max-age-days': { type: 'string' },
  'max-concurrent': { type: 'string' },
  reason: { type: 'string' },
  gc: { type: 'boolean' },
  paused: { type: 'boolean' },
  json: { type: 'boolean' },
} as const;

/** Parse `heapcap schedules create` flags; throws Error with what is wrong. The API checks the rest (ids, intervals, cron). */
export function parseCreateArgs(argv: string[]): { body: ScheduleBody; json: boolean } {
  const { values: v } = parseFlags(argv, CREATE_FLAGS, 0);
  const body: ScheduleBody = {};
  const retention: NonNullable<ScheduleBody['retention']> = {};
  const id = lastValue(v.id);
  if (id !== undefined) body.id = id;
  const target = lastValue(v.target);
  if (target !== undefined) body.target = target;
  // A repeated --selector adds its pairs to the earlier ones.
  if (v.selector !== undefined) body.selector = Object.assign({}, ...v.selector.map(parseSelectorArg)) as Record<string, string>;
  const every = lastValue(v.every);
  if (every !== undefined) body.every = every;
  const cron = lastValue(v.cron);
  if (cron !== undefined) body.cron = cron;
  const timezone = lastValue(v.timezone);
  if (timezone !== undefined) body.timezone = timezone;
  const keepLast = lastValue(v['keep-last']);
  if (keepLast !== undefined) retention.keepLast = positiveNumber('--keep-last', keepLast, true);
  const maxAge = lastValue(v['max-age-days']);
  if (maxAge !== undefined) retention.maxAgeDays = positiveNumber('--max-age-days', maxAge, false);
  const maxConcurrent = lastValue(v['max-concurrent']);
  if (maxConcurrent !== undefined) body.maxConcurrent = positiveNumber('--max-concurrent', maxConcurrent, true);
  const reason = lastValue(v.reason);
  if (reason !== undefined) body.reason = reason;
  if (v.gc === true) body.options = { gc: true };
  if (v.paused === true) body.enabled = false;
  if ((body.target === undefined) === (body.selector === undefined)) throw new Error('give one of --target ID or --selector NAME=VALUE[,…]');
  if ((body.every === undefined) === (body.cron === undefined)) throw new Error('give one of --every DURATION (e.g. 30m) or --cron "EXPR"');
  if (Object.keys(retention).length > 0) body.retention = retention;
  return { body, json: v.json === true };
}
