/**
 * API trigger bench: POST /v1/captures throughput and latency with autocannon,
 * and the Redis commands one trigger costs.
 *
 *   node --import tsx bench/api.ts
 *
 * The API runs in a child process (its own core, logging at info to
 * /dev/null as in production minus the disk), autocannon and Redis in this
 * one. No worker runs: captures are accepted and stay queued, so the numbers
 * are the API + Redis path alone. Scenarios:
 * - hot: every request for one target (all but the first coalesce);
 * - spread: requests round-robin over 1,000 distinct targets (one capture each,
 *   the rest of each target's requests coalesce);
 * - Redis cost: sequential triggers under `redis-cli MONITOR`, counting the
 *   commands the API sent (round trips; pipelined commands counted each) and
 *   the commands its Lua scripts ran inside Redis.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { openSync, closeSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { Checks, ms, printTable, type Check } from './lib/report.ts';
import { startRedis, waitFor } from '@heapcap/testkit';
import { createQueue } from '@heapcap/state';

// autocannon is CommonJS without types we use: required through the bench package's own dependencies.
const requireFromApi = createRequire(import.meta.url);

/** The part of autocannon's API this bench uses. */
interface AcRequest {
  method?: string;
  path?: string;
  headers?: Record<string, string>;
  body?: string;
  setupRequest?: (req: AcRequest) => AcRequest;
}
interface AcHistogram {
  average: number;
  p50: number;
  p99: number;
  max: number;
}
interface AcResult {
  requests: AcHistogram & { total: number };
  latency: AcHistogram;
  non2xx: number;
  errors: number;
  timeouts: number;
  statusCodeStats?: Record<string, { count?: number }>;
}
type Autocannon = (opts: {
  url: string;
  connections: number;
  duration: number;
  method: string;
  headers: Record<string, string>;
  body?: string;
  requests?: AcRequest[];
}) => Promise<AcResult>;

const TOKEN = 'bench-token-0d9f2b';
const TARGETS = 1_000;
const DURATION_S = Number(process.env['BENCH_API_SECONDS'] ?? 10);
const CONNECTIONS = 32;
const SEQUENTIAL = 200;

/** `--serve`: the API process. Prints `LISTENING <url>` on stderr. */
async function serve(): Promise<void> {
  const { parseConfig } = await import('@heapcap/config');
  const { createFileSink } = await import('@heapcap/storage');
  const { startApi, parseTokens, hashToken } = await import('@heapcap/api');
  const { createLogger } = await import('@heapcap/service');
  const redisUrl = process.env['BENCH_REDIS_URL'] ?? '';
  const queue = createQueue({ redisUrl, prefix: 'bench' });
  const tokens = parseTokens(`tokens:\n  - {name: bench, sha256: "${hashToken(TOKEN)}", scopes: [captures:read, captures:write]}\n`);
  const api = await startApi(parseConfig({ HEAPCAP_HOST: '127.0.0.1', HEAPCAP_PORT: '0' }), {
    queue,
    sink: createFileSink({ dir: process.env['BENCH_STORAGE'] ?? '/tmp' }),
    auth: { kind: 'tokens', tokens },
    logger: createLogger('info'),
    http: { rateLimitMax: 1e9 },
  });
  process.stderr.write(`LISTENING ${api.url}\n`);
  process.once('SIGTERM', () => {
    void api.close(2_000).then(() => queue.close()).then(() => process.exit(0));
  });
}

/** Starts the API child; resolves with its URL. */
async function startApiChild(redisUrl: string): Promise<{ url: string; child: ChildProcess }> {
  const devnull = openSync('/dev/null', 'w');
  const child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), '--serve'], {
    cwd: fileURLToPath(new URL('..', import.meta.url)),
    env: { ...process.env, BENCH_REDIS_URL: redisUrl },
    stdio: ['ignore', devnull, 'pipe'],
  });
  closeSync(devnull);
  process.once('exit', () => child.kill('SIGKILL'));
  let err = '';
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the API did not start within 30 s:\n${err}`)), 30_000);
    child.stderr?.setEncoding('utf8').on('data', (d: string) => {
      err += d;
      const m = /LISTENING (\S+)/.exec(err);
      if (m?.[1] !== undefined) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    child.once('exit', (code) => reject(new Error(`the API exited with ${code}:\n${err}`)));
  });
  return { url, child };
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
  await exited;
  clearTimeout(timer);
}

/** Commands seen by MONITOR, split into those a client sent and those Lua scripts ran. */
interface CommandCounts {
  client: Map<string, number>;
  lua: Map<string, number>;
}

/** Runs `fn` under `redis-cli MONITOR` and counts the commands of its client connections. */
async function monitor(port: number, fn: () => Promise<void>): Promise<CommandCounts> {
  const mon = spawn('redis-cli', ['-p', String(port), 'MONITOR'], { stdio: ['ignore', 'pipe', 'inherit'] });
  let text = '';
  mon.stdout.setEncoding('utf8').on('data', (d: string) => (text += d));
  await waitFor(() => text.startsWith('OK'), { timeoutMs: 5_000, what: 'redis-cli MONITOR to start' });
  const startMark = `bench-start-${Date.now()}`;
  const endMark = `bench-end-${Date.now()}`;
  // Marks come from redis-cli (not an ioredis client, whose connect handshake would be counted).
  const mark = (m: string): Promise<void> =>
    new Promise((resolve, reject) => {
      const p = spawn('redis-cli', ['-p', String(port), 'ECHO', m], { stdio: 'ignore' });
      p.once('error', reject);
      p.once('exit', () => resolve());
    });
  try {
    await mark(startMark);
    await fn();
    await mark(endMark);
    await waitFor(() => text.includes(endMark), { timeoutMs: 10_000, what: 'MONITOR to show the end mark' });
  } finally {
    mon.kill('SIGTERM');
  }
  const lines = text.slice(text.indexOf(startMark), text.indexOf(endMark)).split('\n').slice(1);
  const counts: CommandCounts = { client: new Map(), lua: new Map() };
  for (const line of lines) {
    // 1700000000.123456 [0 127.0.0.1:54321] "EVALSHA" "…"   or   [0 lua] "HGET" …
    const m = /^\d+\.\d+ \[\d+ ([^\]]+)\] "([^"]+)"/.exec(line);
    // Connection set-up of redis-cli itself (HELLO/COMMAND DOCS) is not the API's.
    if (m === null || m[2] === 'ECHO' || m[2] === 'COMMAND' || m[2] === 'HELLO') continue;
    const map = m[1] === 'lua' ? counts.lua : counts.client;
    const cmd = (m[2] ?? '').toUpperCase();
    map.set(cmd, (map.get(cmd) ?? 0) + 1);
  }
  return counts;
}

function perTrigger(map: Map<string, number>, n: number): string {
  const total = [...map.values()].reduce((a, b) => a + b, 0);
  const parts = [...map.entries()].sort((a, b) => b[1] - a[1]).map(([c, k]) => `${c} ${(k / n).toFixed(2)}`);
  return `${(total / n).toFixed(2)} (${parts.join(', ')})`;
}

/** The bench: throughput and p99 for the hot and spread cases, Redis commands per trigger. */
export async function apiBench(): Promise<Check[]> {
  const checks = new Checks('api');
  const autocannon = requireFromApi('autocannon') as Autocannon;
  const redis = await startRedis();
  const queue = createQueue({ redisUrl: redis.url, prefix: 'bench' });
  let child: ChildProcess | undefined;
  try {
    const targets = Array.from({ length: TARGETS }, (_, i) => `t${String(i).padStart(4, '0')}`);
    for (const id of ['hot', ...targets]) await queue.targets.put({ id, kind: 'node', inspect: '127.0.0.1:9229', labels: {} });
    const started = await startApiChild(redis.url);
    child = started.child;
    const url = `${started.url}/v1/captures`;
    const headers = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };
    const post = async (body: unknown, extra: Record<string, string> = {}): Promise<number> => {
      const r = await fetch(url, { method: 'POST', headers: { ...headers, ...extra }, body: JSON.stringify(body) });
      await r.arrayBuffer();
      return r.status;
    };

    // Redis cost, sequential so every command belongs to the trigger being measured.
    // The hot target's first trigger (a create) happens here, outside the measurement.
    if ((await post({ target: 'hot' })) !== 202) throw new Error('first trigger of the hot target was not 202');
    const cost: [string, CommandCounts][] = [];
    cost.push(['create (new capture)', await monitor(redis.port, async () => {
      for (const id of targets.slice(0, SEQUENTIAL)) await post({ target: id });
    })]);
    cost.push(['coalesce (joins running)', await monitor(redis.port, async () => {
      for (let i = 0; i < SEQUENTIAL; i++) await post({ target: 'hot' });
    })]);
    cost.push(['create with Idempotency-Key', await monitor(redis.port, async () => {
      for (let i = 0; i < SEQUENTIAL; i++) await post({ target: targets[SEQUENTIAL + i] }, { 'idempotency-key': `k-${i}` });
    })]);
    console.log(`\nRedis commands per trigger (${SEQUENTIAL} sequential triggers each, redis-cli MONITOR):\n`);
    printTable(
      ['trigger', 'sent by the API (round trips)', 'run inside Lua scripts'],
      cost.map(([name, c]) => [name, perTrigger(c.client, SEQUENTIAL), perTrigger(c.lua, SEQUENTIAL)]),
    );
    const sent = (c: CommandCounts): number => [...c.client.values()].reduce((a, b) => a + b, 0) / SEQUENTIAL;
    const [create, coalesce] = [cost[0]?.[1], cost[1]?.[1]];
    if (create && coalesce) {
      checks.expect(sent(coalesce) <= 3, 'a coalesced trigger costs at most 3 commands sent to Redis', `${sent(coalesce).toFixed(2)}`);
      checks.expect(sent(create) <= 8, 'a new capture costs at most 8 commands sent to Redis', `${sent(create).toFixed(2)}`);
    }

    // Throughput. Every target above already has an active capture except t0400..t0999.
    // A short unmeasured run first, so the API's JIT warm-up is not in the numbers.
    await autocannon({ url, connections: CONNECTIONS, duration: 2, method: 'POST', headers, body: '{"target":"hot"}' });
    const before = await queue.depth();
    const hot = await autocannon({ url, connections: CONNECTIONS, duration: DURATION_S, method: 'POST', headers, body: '{"target":"hot"}' });
    const afterHot = await queue.depth();
    let n = 0;
    const spread = await autocannon({
      url,
      connections: CONNECTIONS,
      duration: DURATION_S,
      method: 'POST',
      headers,
      requests: [{ setupRequest: (req) => ({ ...req, body: JSON.stringify({ target: targets[n++ % TARGETS] }) }) }],
    });
    const afterSpread = await queue.depth();
    console.log(`\nPOST /v1/captures, ${CONNECTIONS} connections, ${DURATION_S} s each, no worker (captures stay queued):\n`);
    const row = (name: string, r: AcResult, created: number): string[] => [
      name,
      r.requests.total.toLocaleString('en-US'),
      Math.round(r.requests.average).toLocaleString('en-US'),
      ms(r.latency.p50),
      ms(r.latency.p99),
      ms(r.latency.max),
      String(r.non2xx + r.errors + r.timeouts),
      String(created),
    ];
    const createdHot = afterHot.records.queued - before.records.queued;
    const createdSpread = afterSpread.records.queued - afterHot.records.queued;
    printTable(
      ['scenario', 'requests', 'req/s', 'p50 ms', 'p99 ms', 'max ms', 'errors/non-2xx', 'captures created'],
      [row('hot: 1 target', hot, createdHot), row(`spread: ${TARGETS} targets`, spread, createdSpread)],
    );
    checks.expect(hot.non2xx + hot.errors + hot.timeouts === 0, 'hot target: every request answered 2xx', `${hot.non2xx} non-2xx, ${hot.errors} errors`);
    checks.expect(createdHot === 0, 'hot target: every request joined the one capture', `${createdHot} created`);
    checks.expect(spread.non2xx + spread.errors + spread.timeouts === 0, 'spread: every request answered 2xx', `${spread.non2xx} non-2xx, ${spread.errors} errors`);
    checks.expect(createdSpread <= TARGETS - 2 * SEQUENTIAL, 'spread: at most one capture per target', `${createdSpread} created for ${TARGETS - 2 * SEQUENTIAL} targets without one`);
    checks.expect(hot.latency.p99 < 500, 'hot target: p99 under 500 ms', `${hot.latency.p99} ms`);
    checks.expect(spread.latency.p99 < 500, 'spread: p99 under 500 ms', `${spread.latency.p99} ms`);
  } finally {
    if (child) await stopChild(child);
    await queue.close();
    await redis.stop();
  }
  return checks.list;
}

if (process.argv.includes('--serve')) {
  await serve();
} else if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const failed = (await apiBench()).filter((c) => !c.ok);
  process.exitCode = failed.length > 0 ? 1 : 0;
}
