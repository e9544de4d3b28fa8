/** `heapcap targets list|show|add|remove`: the registry through /v1/targets. */
import { EXIT } from './exit-codes.ts';
import { flag, intFlag, runGroup, sub, UsageError, type Subcommand } from './api-command.ts';
import { parseSelectorArg } from './schedules-args.ts';
import { callApi, type CliIo } from './status-client.ts';
import { formatTable, utcTime } from './table.ts';
import { statusText, targetHealth, type TargetHealth } from './target-status.ts';

/** A registered target as the API shows it (the fields the table uses). */
interface TargetView {
  target: { id: string; kind: 'node' | 'node-pid' | 'chromium'; inspect?: string; ws?: string; pid?: number; port?: number; browser?: string; labels?: Record<string, string>; select?: Record<string, string> };
  source: 'file' | 'api';
  updatedAt: string;
}

function address(t: TargetView['target']): string {
  if (t.kind === 'node') return t.inspect ?? t.ws ?? '-';
  if (t.kind === 'node-pid') return `pid ${t.pid}${t.port === undefined ? '' : ` port ${t.port}`}`;
  const select = Object.entries(t.select ?? {}).map(([k, v]) => `${k}=${v}`);
  return `${t.browser ?? '-'}${select.length > 0 ? ` (${select.join(', ')})` : ''}`;
}

function formatTargets(items: readonly TargetView[], health?: Map<string, TargetHealth> | null): string {
  if (items.length === 0) return 'no targets (add one: heapcap targets add ID --inspect HOST:PORT, or list them in HEAPCAP_TARGETS_FILE)';
  const now = Date.now();
  const status = health === undefined ? [] : ['STATUS'];
  return formatTable(
    ['ID', 'KIND', 'ADDRESS', 'LABELS', 'SOURCE', 'UPDATED (UTC)', ...status],
    items.map((v) => [
      v.target.id,
      v.target.kind,
      address(v.target),
      Object.entries(v.target.labels ?? {}).map(([k, x]) => `${k}=${x}`).join(',') || '-',
      v.source,
      utcTime(v.updatedAt),
      ...(health === undefined ? [] : [statusText(health?.get(v.target.id), now)]),
    ]),
  );
}

const ADD_FLAGS = {
  inspect: { type: 'string' },
  ws: { type: 'string' },
  pid: { type: 'string' },
  port: { type: 'string' },
  browser: { type: 'string' },
  'url-pattern': { type: 'string' },
  'title-pattern': { type: 'string' },
  'page-type': { type: 'string' },
  first: { type: 'boolean' },
  label: { type: 'string' },
  'memory-limit': { type: 'string' },
  group: { type: 'string' },
  placement: { type: 'string' },
  replace: { type: 'boolean' },
} as const;

/** The target body of `targets add` (the API checks it; this shapes it). */
function targetBody(id: string, v: Record<string, true | string[] | undefined>): Record<string, unknown> {
  const addresses = ['inspect', 'ws', 'pid', 'browser'].filter((k) => v[k] !== undefined);
  if (addresses.length !== 1) throw new UsageError('give one of --inspect HOST:PORT, --ws URL (Node.js), --pid PID (a local Node.js process) or --browser HOST:PORT (Chromium)');
  const body: Record<string, unknown> = { id };
  const inspect = flag(v, 'inspect');
  const ws = flag(v, 'ws');
  const browser = flag(v, 'browser');
  if (inspect !== undefined || ws !== undefined) Object.assign(body, { kind: 'node' }, inspect === undefined ? { ws } : { inspect });
  else if (browser !== undefined) {
    const select: Record<string, string> = {};
    const url = flag(v, 'url-pattern');
    const title = flag(v, 'title-pattern');
    const type = flag(v, 'page-type');
    if (url !== undefined) select['urlPattern'] = url;
    if (title !== undefined) select['titlePattern'] = title;
    if (type !== undefined) select['type'] = type;
    if (v['first'] === true) select['pick'] = 'first';
    Object.assign(body, { kind: 'chromium', browser, select });
  } else {
    Object.assign(body, { kind: 'node-pid', pid: intFlag(v, 'pid', 1, 2 ** 31 - 1) });
    const port = intFlag(v, 'port', 1, 65535);
    if (port !== undefined) body['port'] = port;
  }
  const labels = v['label'];
  if (Array.isArray(labels)) {
    try {
      body['labels'] = Object.assign({}, ...labels.map(parseSelectorArg)) as Record<string, string>;
    } catch (err) {
      throw new UsageError((err as Error).message.replace('--selector', '--label'));
    }
  }
  const limit = intFlag(v, 'memory-limit', 1, Number.MAX_SAFE_INTEGER);
  if (limit !== undefined) body['memoryLimitBytes'] = limit;
  const group = flag(v, 'group');
  if (group !== undefined) body['group'] = group;
  const placement = flag(v, 'placement');
  if (placement !== undefined) body['placement'] = placement;
  return body;
}

const id = (p: string[]): string => encodeURIComponent(p[0]!);

export const TARGETS_SUBCOMMANDS: Record<string, Subcommand> = {
  list: sub({
    args: [],
    flags: {},
    summary: 'the registered targets (the allowlist of what can be captured), up or unreachable and why',
    examples: ['heapcap targets list', 'heapcap targets list --json | jq -r ".items[].target.id"'],
    async run(c) {
      const data = (await callApi(c.api, 'GET', '/v1/targets', undefined, 30_000)).body as { items: TargetView[] };
      // STATUS: the age of the newest sample, or unreachable with the reason of the last failed one (docs/watch.md).
      const health = await targetHealth(c.api, data.items.map((v) => v.target.id));
      const items = data.items.map((v) => ({ ...v, health: health?.get(v.target.id) ?? null }));
      c.print({ ...data, items }, () => formatTargets(data.items, health));
      return EXIT.ok;
    },
  }),
  show: sub({
    args: ['ID'],
    flags: {},
    summary: 'one target: kind, address, labels, where it was registered',
    examples: ['heapcap targets show checkout-1'],
    targetOf: (p) => p[0],
    async run(c) {
      const view = (await callApi(c.api, 'GET', `/v1/targets/${id(c.positionals)}`, undefined, 30_000)).body as TargetView;
      c.print(view, () => formatTargets([view]));
      return EXIT.ok;
    },
  }),
  add: sub({
    args: ['ID'],
    flags: ADD_FLAGS,
    summary: 'register a target (needs targets:admin)',
    options: `  --inspect HOST:PORT     a Node.js process started with --inspect
  --ws URL                or its inspector WebSocket URL
  --pid PID [--port P]    a local Node.js process, woken with SIGUSR1 (same host as the worker)
  --browser HOST:PORT     a Chromium started with --remote-debugging-port, with
    [--url-pattern RE] [--title-pattern RE] [--page-type page|worker|…] [--first]  which page
  --label NAME=VALUE[,…]  labels (schedules and watch rules select by them); repeatable
  --memory-limit BYTES    the memory limit the headroom gate uses when the target reports none
  --group ID, --placement P   capture concurrency group; which workers may capture it
  --replace               replace a target of that id (PUT) instead of refusing (409)
`,
    examples: [
      'heapcap targets add checkout-1 --inspect 10.0.3.7:9229 --label service=checkout,env=prod',
      'heapcap targets add shop-page --browser 127.0.0.1:9222 --url-pattern "shop\\.example"',
      'heapcap targets add local-api --pid 4242',
    ],
    async run(c) {
      const body = targetBody(c.positionals[0]!, c.values);
      const res = c.values.replace === true ? await callApi(c.api, 'PUT', `/v1/targets/${id(c.positionals)}`, body, 30_000) : await callApi(c.api, 'POST', '/v1/targets', body, 30_000);
      const view = res.body as TargetView;
      c.print(view, () => `${formatTargets([view])}\n  ${res.status === 201 ? 'registered' : 'replaced'}; capture it: heapcap trigger ${view.target.id} --wait 60`);
      return EXIT.ok;
    },
  }),
  remove: sub({
    args: ['ID'],
    flags: {},
    summary: 'remove a target (needs targets:admin; its captures stay)',
    examples: ['heapcap targets remove checkout-1'],
    targetOf: (p) => p[0],
    async run(c) {
      await callApi(c.api, 'DELETE', `/v1/targets/${id(c.positionals)}`, undefined, 30_000);
      c.print({ removed: c.positionals[0] }, () => `target ${c.positionals[0]} removed (its captures stay; queued ones fail with target_not_found)`);
      return EXIT.ok;
    },
  }),
};

/** Run `heapcap targets`. */
export function targetsMain(argv: string[], env: Record<string, string | undefined>, io?: CliIo): Promise<number> {
  return runGroup('targets', 'the registered targets', TARGETS_SUBCOMMANDS, argv, env, io);
}
