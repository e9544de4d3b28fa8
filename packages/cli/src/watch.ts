/** `heapcap watch list|show|create|pause|resume|delete`: watch rules through /v1/watch-rules. */
import { formatMiB } from '@heapcap/capture';
import { parseDuration } from '@heapcap/config';
import { EXIT } from './exit-codes.ts';
import { flag, intFlag, runGroup, secondsFlag, sub, UsageError, type Subcommand } from './api-command.ts';
import { parseSelectorArg } from './schedules-args.ts';
import { didYouMean } from '@heapcap/config';
import { callApi, type CliIo } from './status-client.ts';
import { formatTable, utcTime } from './table.ts';

/** The metrics a rule compares (the API's WATCH_METRICS; it checks them, this only suggests). */
const METRICS = ['heapUsedRatio', 'heapUsedBytes', 'rssBytes', 'heapGrowthBytes'] as const;

interface WatchView {
  rule: { id: string; target?: string; selector?: Record<string, string>; when: { metric: string; above: number; forSeconds: number; windowSeconds?: number }; cooldownSeconds: number; maxPerDay: number; owner: string };
  state: 'active' | 'paused';
  /** `file` (HEAPCAP_RULES_FILE) or `api`; absent from servers older than the rules file. */
  source?: string;
  matches: number;
  targets: { targetId: string; state: string; value: number | null; sampler: string | null }[];
  lastFiring: { at: string; outcome: string; targetId?: string; captureId?: string } | null;
}

function threshold(w: WatchView['rule']['when']): string {
  const v = w.metric === 'heapUsedRatio' ? String(w.above) : formatMiB(w.above);
  return `${w.metric} > ${v}${w.windowSeconds === undefined ? '' : ` over ${w.windowSeconds}s`} for ${w.forSeconds}s`;
}

function formatRules(items: readonly WatchView[]): string {
  if (items.length === 0) return 'no watch rules (create one: heapcap watch create --target ID --metric heapUsedRatio --above 0.8 --for 5m)';
  return formatTable(
    ['ID', 'TARGETS', 'WHEN', 'STATE', 'SOURCE', 'FIRING NOW', 'LAST FIRING (UTC)'],
    items.map((v) => {
      const targets = v.rule.target ?? `${Object.entries(v.rule.selector ?? {}).map(([k, x]) => `${k}=${x}`).join(',')} (${v.matches})`;
      const firing = v.targets.filter((t) => t.state === 'firing' || t.state === 'pending').map((t) => `${t.targetId} ${t.state}`);
      const last = v.lastFiring === null ? '-' : `${utcTime(v.lastFiring.at)} ${v.lastFiring.outcome}${v.lastFiring.captureId === undefined ? '' : ` ${v.lastFiring.captureId}`}`;
      return [v.rule.id, targets, threshold(v.rule.when), v.state, v.source ?? 'api', firing.join(', ') || '-', last];
    }),
  );
}

/** `0.8`, `536870912`, `512MiB`, `1.5GiB` → a number (bytes for the byte metrics). */
function parseAbove(text: string): number {
  const m = /^(\d+(?:\.\d+)?)\s*(KiB|MiB|GiB|KB|MB|GB)?$/i.exec(text.trim());
  if (m === null) throw new UsageError(`--above takes a number (a ratio like 0.8, or bytes like 536870912 or 512MiB), got "${text}"`);
  const unit = (m[2] ?? '').toLowerCase();
  const scale: Record<string, number> = { '': 1, kib: 1024, mib: 1024 ** 2, gib: 1024 ** 3, kb: 1e3, mb: 1e6, gb: 1e9 };
  return Math.round(Number(m[1]) * scale[unit]! * 1e6) / 1e6;
}

const CREATE_FLAGS = {
  id: { type: 'string' },
  target: { type: 'string' },
  selector: { type: 'string' },
  metric: { type: 'string' },
  above: { type: 'string' },
  for: { type: 'string' },
  window: { type: 'string' },
  cooldown: { type: 'string' },
  'max-per-day': { type: 'string' },
  sampling: { type: 'string' },
  gc: { type: 'boolean' },
  reason: { type: 'string' },
  paused: { type: 'boolean' },
} as const;

function ruleBody(v: Record<string, true | string[] | undefined>): Record<string, unknown> {
  const target = flag(v, 'target');
  const selector = v['selector'];
  if ((target === undefined) === (selector === undefined)) throw new UsageError('give one of --target ID or --selector NAME=VALUE[,…]');
  const metric = flag(v, 'metric');
  if (metric === undefined) throw new UsageError(`which metric? --metric ${METRICS.join('|')}`);
  if (!(METRICS as readonly string[]).includes(metric)) throw new UsageError(`unknown --metric "${metric}"${didYouMean(metric, METRICS)}; one of ${METRICS.join(', ')}`);
  const above = flag(v, 'above');
  const forSeconds = secondsFlag(v, 'for', parseDuration);
  if (above === undefined || forSeconds === undefined) throw new UsageError('give the threshold and how long it must hold: --above VALUE --for DURATION (e.g. --above 0.8 --for 5m)');
  const when: Record<string, unknown> = { metric, above: parseAbove(above), forSeconds };
  const window = secondsFlag(v, 'window', parseDuration);
  if (window !== undefined) when['windowSeconds'] = window;
  const body: Record<string, unknown> = { when };
  const id = flag(v, 'id');
  if (id !== undefined) body['id'] = id;
  if (target !== undefined) body['target'] = target;
  else if (Array.isArray(selector)) body['selector'] = Object.assign({}, ...selector.map(parseSelectorArg)) as Record<string, string>;
  const cooldown = secondsFlag(v, 'cooldown', parseDuration);
  if (cooldown !== undefined) body['cooldownSeconds'] = Math.round(cooldown);
  const perDay = intFlag(v, 'max-per-day', 1, 1000);
  if (perDay !== undefined) body['maxPerDay'] = perDay;
  const sampling = secondsFlag(v, 'sampling', parseDuration);
  const capture: Record<string, unknown> = {};
  if (sampling !== undefined) capture['samplingSeconds'] = Math.round(sampling);
  if (v['gc'] === true) capture['options'] = { gc: true };
  if (Object.keys(capture).length > 0) body['capture'] = capture;
  const reason = flag(v, 'reason');
  if (reason !== undefined) body['reason'] = reason;
  if (v['paused'] === true) body['enabled'] = false;
  return body;
}

const id = (p: string[]): string => encodeURIComponent(p[0]!);

function detail(v: WatchView): string {
  const lines = v.targets.map((t) => `  ${t.targetId}: ${t.state}${t.value === null ? '' : `, last value ${v.rule.when.metric === 'heapUsedRatio' ? t.value.toFixed(3) : formatMiB(t.value)}`}${t.sampler === null ? ', not sampled yet' : `, sampled by ${t.sampler}`}`);
  return `${formatRules([v])}\n  cooldown ${v.rule.cooldownSeconds}s, at most ${v.rule.maxPerDay} per target a day${lines.length > 0 ? `\n${lines.join('\n')}` : ''}`;
}

/** show, pause and resume answer the rule's view. */
function viewing(summary: string, method: 'GET' | 'POST', suffix: string, example: string): Subcommand {
  return sub({
    args: ['ID'],
    flags: {},
    summary,
    examples: [example],
    async run(c) {
      const view = (await callApi(c.api, method, `/v1/watch-rules/${id(c.positionals)}${suffix}`, undefined, 30_000)).body as WatchView;
      c.print(view, () => detail(view));
      return EXIT.ok;
    },
  });
}

export const WATCH_SUBCOMMANDS: Record<string, Subcommand> = {
  list: sub({
    args: [],
    flags: {},
    summary: 'the watch rules, their state and last firing',
    examples: ['heapcap watch list'],
    async run(c) {
      const data = (await callApi(c.api, 'GET', '/v1/watch-rules', undefined, 30_000)).body as { items: WatchView[] };
      c.print(data, () => formatRules(data.items));
      return EXIT.ok;
    },
  }),
  show: viewing("one rule and its state for each target it watches", 'GET', '', 'heapcap watch show checkout-heap'),
  create: sub({
    args: [],
    flags: CREATE_FLAGS,
    summary: 'capture by itself when memory stays above a threshold (needs targets:admin)',
    options: `  --target ID | --selector NAME=VALUE[,…]   what it watches (a selector is resolved at each tick)
  --metric M        heapUsedRatio (0-1), heapUsedBytes, rssBytes or heapGrowthBytes (with --window)
  --above VALUE     the threshold: 0.8, or bytes: 536870912, 512MiB, 2GiB
  --for DURATION    how long it must hold before the rule fires (30s, 5m)
  --window DURATION heapGrowthBytes: the growth is measured over this window
  --cooldown DURATION  no new firing before this long (default 30m)
  --max-per-day N   at most N firings per target in 24 hours (default 4)
  --sampling DURATION  the sampling profile taken when the headroom gate refuses the snapshot
  --gc              collect garbage before the snapshot
  --id ID, --reason TEXT, --paused
`,
    examples: [
      'heapcap watch create --id checkout-heap --selector service=checkout --metric heapUsedRatio --above 0.85 --for 5m',
      'heapcap watch create --target checkout-1 --metric heapGrowthBytes --above 256MiB --window 10m --for 1m',
    ],
    targetOf: (_p, v) => flag(v, 'target'),
    async run(c) {
      const view = (await callApi(c.api, 'POST', '/v1/watch-rules', ruleBody(c.values), 30_000)).body as WatchView;
      c.print(view, () => `${detail(view)}\n  watching ${view.matches} target(s) from the next watch tick`);
      return EXIT.ok;
    },
  }),
  pause: viewing('stop sampling its targets for it', 'POST', '/pause', 'heapcap watch pause checkout-heap'),
  resume: viewing('resume a paused rule', 'POST', '/resume', 'heapcap watch resume checkout-heap'),
  delete: sub({
    args: ['ID'],
    flags: {},
    summary: 'delete a rule (its captures stay)',
    examples: ['heapcap watch delete checkout-heap'],
    async run(c) {
      await callApi(c.api, 'DELETE', `/v1/watch-rules/${id(c.positionals)}`, undefined, 30_000);
      c.print({ deleted: c.positionals[0] }, () => `watch rule ${c.positionals[0]} deleted (its captures stay)`);
      return EXIT.ok;
    },
  }),
};

/** Run `heapcap watch`. */
export function watchMain(argv: string[], env: Record<string, string | undefined>, io?: CliIo): Promise<number> {
  return runGroup('watch', 'watch rules: captures taken when memory climbs', WATCH_SUBCOMMANDS, argv, env, io);
}
