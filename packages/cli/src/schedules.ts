/**
 * `heapcap schedules list | show ID | create … | pause ID | resume ID | delete ID`:
 * the schedules API through the same client and auth as `heapcap trigger`
 * (HEAPCAP_API_URL, HEAPCAP_TOKEN); a table, or the API's JSON with --json.
 */
import { DEFAULT_API_URL } from '@heapcap/config';
import type { CliIo } from './status-client.ts';
import { EXIT } from './exit-codes.ts';
import { parseCreateArgs } from './schedules-args.ts';
import { parseFlags } from './flags.ts';
import { formatSchedules, type ScheduleViewLike } from './schedules-format.ts';
import { apiTargetFrom, callApi, reportRestError, RestError } from './status-client.ts';

export const SCHEDULES_USAGE = `heapcap schedules: periodic captures through the heapcap API

  heapcap schedules list [--json]
  heapcap schedules show ID [--json]
  heapcap schedules create (--target ID | --selector NAME=VALUE[,…]) (--every 30m | --cron "*/30 * * * *" [--timezone Europe/Berlin])
                           [--id ID] [--keep-last N] [--max-age-days D] [--max-concurrent N] [--reason TEXT] [--gc] [--paused] [--json]
  heapcap schedules pause ID
  heapcap schedules resume ID
  heapcap schedules delete ID

  --selector        a label match over the registry, resolved at each run (every replica of a service)
  --every, --cron   the interval ("90s", "15m", "6h") or a 5-field cron expression (UTC unless --timezone)
  --keep-last N     keep the newest N snapshots of this schedule (default HEAPCAP_RETENTION_KEEP_LAST)
  --max-age-days D  delete its snapshots older than D days (default HEAPCAP_RETENTION_MAX_AGE_DAYS)
  --max-concurrent  captures of the group at once (default 1; they are spread over the interval anyway)

Examples:
  heapcap schedules create --id checkout-30m --selector service=checkout,env=prod --every 30m --keep-last 48
  heapcap schedules create --target checkout-1 --cron "0 3 * * *" --timezone Europe/Berlin --gc
  heapcap schedules pause checkout-30m

API: HEAPCAP_API_URL (default ${DEFAULT_API_URL}), token: HEAPCAP_TOKEN (captures:write to create and change your own).
`;

/** Run `heapcap schedules`; returns the exit code. */
export async function schedulesMain(argv: string[], env: Record<string, string | undefined>, io: CliIo = { stdout: process.stdout, stderr: process.stderr }): Promise<number> {
  const [sub, ...rest] = argv;
  if (sub === undefined || sub === '--help' || sub === '-h' || sub === 'help' || rest.includes('--help') || rest.includes('-h')) {
    io.stdout.write(SCHEDULES_USAGE);
    return sub === undefined ? EXIT.usage : EXIT.ok;
  }
  const usage = (message: string): number => {
    io.stderr.write(`invalid_input: ${message}\n\n${SCHEDULES_USAGE}`);
    return EXIT.usage;
  };
  // Every subcommand but create takes --json and its ids; create parses its own flags.
  let flags: { json: boolean; ids: string[] } | undefined;
  try {
    const parsed = parseFlags(rest, { json: { type: 'boolean' } }, Infinity);
    flags = { json: parsed.values.json === true, ids: parsed.positionals };
  } catch {
    flags = undefined;
  }
  let json = flags?.json ?? false;
  const oneId = (): string | undefined => (flags?.ids.length === 1 ? encodeURIComponent(flags.ids[0]!) : undefined);
  try {
    const api = apiTargetFrom(env);
    const print = (data: unknown, table: () => string): void => {
      io.stdout.write(json ? `${JSON.stringify(data, null, 2)}\n` : `${table()}\n`);
    };
    switch (sub) {
      case 'list': {
        if (flags === undefined || flags.ids.length > 0) return usage(`heapcap schedules list takes no arguments, got "${rest.filter((a) => a !== '--json').join(' ')}"`);
        const res = await callApi(api, 'GET', '/v1/schedules', undefined, 30_000);
        const data = res.body as { items: ScheduleViewLike[] };
        print(data, () => formatSchedules(data.items));
        return EXIT.ok;
      }
      case 'show':
      case 'pause':
      case 'resume':
      case 'delete': {
        const id = oneId();
        if (id === undefined) return usage(`heapcap schedules ${sub} takes one schedule id`);
        if (sub === 'delete') {
          await callApi(api, 'DELETE', `/v1/schedules/${id}`, undefined, 30_000);
          io.stdout.write(json ? `${JSON.stringify({ deleted: decodeURIComponent(id) })}\n` : `schedule ${decodeURIComponent(id)} deleted (its captures stay, under the default retention)\n`);
          return EXIT.ok;
        }
        const res = sub === 'show' ? await callApi(api, 'GET', `/v1/schedules/${id}`, undefined, 30_000) : await callApi(api, 'POST', `/v1/schedules/${id}/${sub}`, undefined, 30_000);
        const view = res.body as ScheduleViewLike;
        print(view, () => `${formatSchedules([view])}${view.nextRunAt.length > 0 ? `\n  next runs: ${view.nextRunAt.join(', ')}` : ''}`);
        return EXIT.ok;
      }
      case 'create': {
        let parsed: ReturnType<typeof parseCreateArgs>;
        try {
          parsed = parseCreateArgs(rest);
        } catch (err) {
          return usage((err as Error).message);
        }
        json = parsed.json;
        const res = await callApi(api, 'POST', '/v1/schedules', parsed.body, 30_000);
        const view = res.body as ScheduleViewLike;
        print(view, () => `${formatSchedules([view])}\n  next runs: ${view.nextRunAt.join(', ') || '(paused)'}\n  matches ${view.matches} target(s) now`);
        return EXIT.ok;
      }
      default:
        return usage(`unknown subcommand "${sub}" (list, show, create, pause, resume, delete)`);
    }
  } catch (err) {
    if (!(err instanceof RestError)) throw err;
    return reportRestError(io, err);
  }
}
