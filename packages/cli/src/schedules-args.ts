/** Arguments of `heapcap schedules create`, turned into the API's schedule body. */

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

/** Parse `heapcap schedules create` flags; throws Error with what is wrong. The API checks the rest (ids, intervals, cron). */
export function parseCreateArgs(argv: string[]): { body: ScheduleBody; json: boolean } {
  const body: ScheduleBody = {};
  const retention: NonNullable<ScheduleBody['retention']> = {};
  let json = false;
  const rest = [...argv];
  while (rest.length > 0) {
    const a = rest.shift() as string;
    const value = (): string => {
      const v = rest.shift();
      if (v === undefined) throw new Error(`${a} needs a value`);
      return v;
    };
    switch (a) {
      case '--id':
        body.id = value();
        break;
      case '--target':
        body.target = value();
        break;
      case '--selector':
        body.selector = { ...body.selector, ...parseSelectorArg(value()) };
        break;
      case '--every':
        body.every = value();
        break;
      case '--cron':
        body.cron = value();
        break;
      case '--timezone':
        body.timezone = value();
        break;
      case '--keep-last':
        retention.keepLast = positiveNumber(a, value(), true);
        break;
      case '--max-age-days':
        retention.maxAgeDays = positiveNumber(a, value(), false);
        break;
      case '--max-concurrent':
        body.maxConcurrent = positiveNumber(a, value(), true);
        break;
      case '--reason':
        body.reason = value();
        break;
      case '--gc':
        body.options = { gc: true };
        break;
      case '--paused':
        body.enabled = false;
        break;
      case '--json':
        json = true;
        break;
      default:
        throw new Error(a.startsWith('-') ? `unknown option ${a}` : `unexpected argument "${a}"`);
    }
  }
  if ((body.target === undefined) === (body.selector === undefined)) throw new Error('give one of --target ID or --selector NAME=VALUE[,…]');
  if ((body.every === undefined) === (body.cron === undefined)) throw new Error('give one of --every DURATION (e.g. 30m) or --cron "EXPR"');
  if (Object.keys(retention).length > 0) body.retention = retention;
  return { body, json };
}
