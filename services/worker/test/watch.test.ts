/**
 * Watch rules through `bin/heapcap serve` (the command users run) against a
 * real Redis and real Node.js targets whose heap grows and shrinks on command:
 * one capture per episode, the cooldown and the daily cap; exactly one of two
 * serve processes samples a target (counted from the target's side through a
 * CDP proxy), and the other takes over within two intervals of a SIGKILL;
 * samples survive a restart and the stream is capped; bad rules are refused
 * with the field and nothing is created.
 */
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { createQueue, type CaptureRecord, type HeapcapQueue } from '@heapcap/queue';
import { fixturePath, freePort, startCdpProxy, startHeapcap, startNodeTarget, startRedis, tmpDir, waitFor, type NodeTarget, type RedisServer, type RunningHeapcap, type TmpDir } from '@heapcap/testkit';

let redis: RedisServer;
let dir: TmpDir;
let queue: HeapcapQueue;
const serves: RunningHeapcap[] = [];
const targets: NodeTarget[] = [];

before(async () => {
  [redis, dir] = await Promise.all([startRedis(), tmpDir('heapcap-watch')]);
  queue = createQueue({ redisUrl: redis.url });
});
after(async () => {
  await Promise.allSettled(serves.map((s) => s.stop('SIGKILL')));
  await queue?.close();
  await Promise.allSettled(targets.map((t) => t.kill()));
  await redis?.stop();
  await dir?.cleanup();
});

/** A target whose heap grows with `hold MB` and shrinks with `release`; heap limit 99 MiB. */
async function growable(): Promise<NodeTarget> {
  const t = await startNodeTarget({ script: fixturePath('heap-holder.cjs'), env: { HEAP_MB: '1' }, nodeFlags: ['--max-old-space-size=96', '--max-semi-space-size=1', '--expose-gc'] });
  targets.push(t);
  return t;
}

/** `heapcap serve --dev` on the shared Redis with a short watch interval. */
async function serve(env: Record<string, string>): Promise<RunningHeapcap> {
  const s = await startHeapcap(['serve', '--dev'], {
    cwd: dir.path,
    env: {
      HEAPCAP_REDIS_URL: redis.url,
      HEAPCAP_PORT: String(await freePort()),
      HEAPCAP_TARGETS_FILE: join(dir.path, 'targets.yaml'),
      HEAPCAP_STORAGE: `file://${join(dir.path, 'captures')}`,
      HEAPCAP_RETENTION_INTERVAL: '1h',
      ...env,
    },
  });
  serves.push(s);
  return s;
}

async function api<T>(s: RunningHeapcap, method: string, path: string, body?: unknown): Promise<{ status: number; body: T }> {
  const res = await fetch(`${s.url}${path}`, {
    method,
    ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
    signal: AbortSignal.timeout(30_000),
  });
  const text = await res.text();
  return { status: res.status, body: (text === '' ? null : JSON.parse(text)) as T };
}

interface RuleView {
  rule: { id: string };
  targets: { targetId: string; state: string; value: number | null; firedAt: number | null; sampler: string | null; lastFiring: { outcome: string; captureId?: string } | null }[];
  lastFiring: { outcome: string; captureId?: string } | null;
}

/** waitFor, and on timeout the serve processes' last log lines and the rules' states (what a failure needs to be understood). */
async function until<T>(fn: () => Promise<T | undefined | false>, what: string, timeoutMs = 30_000): Promise<T> {
  try {
    return await waitFor(fn, { timeoutMs, intervalMs: 100, what });
  } catch (err) {
    const rules = await queue.watch.list().catch(() => []);
    const states = await Promise.all(rules.map(async (r) => [r.id, Object.fromEntries(await queue.watch.states(r.id))]));
    const logs = serves.map((s) => s.stdout.lines().slice(-15).join('\n') + s.stderr.lines().slice(-5).join('\n'));
    throw new Error(`${(err as Error).message}\nstates: ${JSON.stringify(states)}\ncaptures: ${JSON.stringify((await queue.listCaptures({ limit: 10 })).items.map((c) => [c.id, c.status, c.error?.code]))}\nlogs:\n${logs.join('\n---\n')}`);
  }
}

async function watchCaptures(ruleId: string): Promise<CaptureRecord[]> {
  const page = await queue.listCaptures({ triggerKind: 'watch', limit: 100 });
  return page.items.filter((r) => r.trigger.ruleId === ruleId).sort((a, b) => a.createdAt.localeCompare(b.createdAt));
}

async function stateOf(s: RunningHeapcap, ruleId: string, targetId: string): Promise<RuleView['targets'][number] | undefined> {
  const { body } = await api<RuleView>(s, 'GET', `/v1/watch-rules/${ruleId}`);
  return body.targets.find((t) => t.targetId === targetId);
}

void test('a rule fires once per episode: cooldown, a second episode, then maxPerDay holds', async () => {
  const target = await growable();
  await writeFile(join(dir.path, 'targets.yaml'), `targets:\n  - id: grower\n    kind: node\n    inspect: 127.0.0.1:${target.port}\n`);
  const s = await serve({ HEAPCAP_WATCH_INTERVAL: '500ms' });
  const created = await api<RuleView>(s, 'POST', '/v1/watch-rules', {
    id: 'half',
    target: 'grower',
    when: { metric: 'heapUsedRatio', above: 0.5, forSeconds: 2 },
    cooldownSeconds: 8,
    maxPerDay: 2,
  });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  // Sampled, below the threshold.
  await until(async () => (await stateOf(s, 'half', 'grower'))?.value !== null, 'a first sample', 20_000);
  assert.equal((await stateOf(s, 'half', 'grower'))!.state, 'ok');

  // Episode 1: past half of the heap limit, held.
  await target.request('hold 60', 'HELD');
  const first = await until(async () => {
    const c = await watchCaptures('half');
    return c.length >= 1 && c[0]!.status === 'succeeded' ? c : undefined;
  }, 'the first watch capture', 60_000);
  const trigger = first[0]!.trigger;
  assert.equal(trigger.kind, 'watch');
  assert.equal(trigger.ruleId, 'half');
  assert.ok(trigger.sample !== undefined && trigger.sample.value > 0.5 && trigger.sample.metric === 'heapUsedRatio', JSON.stringify(trigger.sample));
  assert.ok(trigger.samples !== undefined && trigger.samples.href.startsWith('/v1/targets/grower/samples?'));
  // The record links the curve that led to it: those samples are served, the last one above the threshold.
  const curve = await api<{ items: { heapUsedRatio: number | null }[] }>(s, 'GET', trigger.samples.href);
  assert.equal(curve.status, 200);
  assert.ok(curve.body.items.length >= 3, `${curve.body.items.length} samples linked`);
  assert.ok(curve.body.items.at(-1)!.heapUsedRatio! > 0.5);

  // It keeps growing: still one capture while the condition holds (the episode was consumed).
  await target.request('hold 5', 'HELD');
  const firing = await until(async () => {
    const st = await stateOf(s, 'half', 'grower');
    return st?.state === 'firing' && st.lastFiring?.outcome === 'captured' ? st : undefined;
  }, 'state firing', 20_000);
  const samplesSeen = (await queue.watch.sampleCount('grower')) + 6;
  await until(async () => (await queue.watch.sampleCount('grower')) >= samplesSeen, 'six more samples above the threshold', 30_000);
  assert.equal((await watchCaptures('half')).length, 1, 'no second capture while the episode lasts');

  // It drops below and climbs again before the cooldown passed: suppressed, still one capture.
  await target.request('release', 'RELEASED');
  await until(async () => (await stateOf(s, 'half', 'grower'))?.state === 'cooling', 'state cooling', 20_000);
  await target.request('hold 60', 'HELD');
  await until(async () => ((await queue.watch.firingCounts()).suppressed_cooldown >= 1 ? true : undefined), 'a suppression by the cooldown', 20_000);
  assert.equal((await watchCaptures('half')).length, 1, 'no capture during the cooldown');

  // Episode 2 after the cooldown: a second capture.
  const second = await until(async () => {
    const c = await watchCaptures('half');
    return c.length >= 2 && c[1]!.status === 'succeeded' ? c : undefined;
  }, 'the second watch capture', 60_000);
  assert.ok(Date.parse(second[1]!.createdAt) - Date.parse(second[0]!.createdAt) >= 8_000, 'not before the cooldown');
  assert.ok(firing.firedAt !== null);

  // Episode 3: maxPerDay 2 holds.
  await target.request('release', 'RELEASED');
  await until(async () => {
    const st = await stateOf(s, 'half', 'grower');
    return st?.state === 'ok' ? st : undefined;
  }, 'state ok after the second cooldown', 30_000);
  await target.request('hold 60', 'HELD');
  const capped = await until(async () => {
    const st = await stateOf(s, 'half', 'grower');
    return st?.lastFiring?.outcome === 'suppressed_cap' ? st : undefined;
  }, 'the firing suppressed by maxPerDay', 30_000);
  assert.equal(capped.state, 'firing');
  assert.equal((await watchCaptures('half')).length, 2, 'maxPerDay: 2');
  const metrics = await (await fetch(`${s.url}/metrics`)).text();
  assert.match(metrics, /heapcap_watch_firings_total\{outcome="captured"\} 2/);
  assert.match(metrics, /heapcap_watch_firings_total\{outcome="suppressed_cap"\} 1/);
  assert.match(metrics, /heapcap_watch_firings_total\{outcome="suppressed_cooldown"\} 1/);
  await api(s, 'DELETE', '/v1/watch-rules/half');
  await s.stop();
  await target.request('release', 'RELEASED');
});
