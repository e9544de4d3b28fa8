/** The table `heapcap schedules list` (and create, show) prints. */
import { formatTable, utcTime as when } from './table.ts';

/** What the API returns for a schedule (the fields the table shows). */
export interface ScheduleViewLike {
  schedule: { id: string; target?: string; selector?: Record<string, string>; every?: string; cron?: string; timezone?: string; owner: string };
  state: string;
  /** `file` (HEAPCAP_RULES_FILE) or `api`; absent from servers older than the rules file. */
  source?: string;
  retention: { keepLast: number; maxAgeDays: number };
  matches: number;
  nextRunAt: string[];
  lastRun: { at: string; outcome: string; reason?: string; targetId: string | null } | null;
  lastCapture: { id: string; status: string | null } | null;
}

const HEADERS = ['ID', 'TARGETS', 'WHEN', 'STATE', 'SOURCE', 'NEXT RUN (UTC)', 'LAST TURN', 'LAST CAPTURE', 'KEEP'] as const;

function row(v: ScheduleViewLike): string[] {
  const s = v.schedule;
  const targets = s.target ?? `${Object.entries(s.selector ?? {}).map(([k, x]) => `${k}=${x}`).join(',')} (${v.matches})`;
  const schedule = s.every !== undefined ? `every ${s.every}` : `cron ${s.cron ?? '?'}${s.timezone === undefined ? '' : ` ${s.timezone}`}`;
  const turn = v.lastRun === null ? '-' : `${v.lastRun.outcome}${v.lastRun.reason === undefined ? '' : ` (${v.lastRun.reason})`}`;
  const capture = v.lastCapture === null ? '-' : `${v.lastCapture.id} ${v.lastCapture.status ?? 'gone'}`;
  const keep = `${v.retention.keepLast}${v.retention.maxAgeDays > 0 ? `, ${v.retention.maxAgeDays}d` : ''}`;
  return [s.id, targets, schedule, v.state, v.source ?? 'api', when(v.nextRunAt[0]), turn, capture, keep];
}

/** Columns padded to their widest cell; one line per schedule under a header. */
export function formatSchedules(views: readonly ScheduleViewLike[]): string {
  if (views.length === 0) return 'no schedules (create one: heapcap schedules create --target ID --every 30m)';
  return formatTable(HEADERS, views.map(row));
}
