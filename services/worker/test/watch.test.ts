/**
 * Watch rules through `bin/heapcap serve` (the command users run) against a
 * real Redis and real Node.js targets whose heap grows and shrinks on command:
 * one capture per episode, the cooldown and the daily cap; exactly one of two
 * serve processes samples a target (counted from the target's side through a
 * CDP proxy), and the other takes over within two intervals of a SIGKILL;
 * across rolling restarts (SIGTERM) a target's samples stay one interval
 * apart, neither doubled nor missing at a handover;
 * samples survive a restart and the stream is capped; bad rules are refused
 * with the field and nothing is created; when the headroom gate refuses the
 * snapshot (a real cgroup limit), the rule takes a sampling profile instead.
 */
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, beforeEach, test } from 'node:test';
import { createQueue, type CaptureRecord, type HeapcapQueue } from '@heapcap/state';
import { createMemoryCgroup, fixturePath, memoryCgroupLayout, startCdpProxy, startDevServe, startNodeTarget, startRedis, tmpDir, waitFor, type NodeTarget, type RedisServer, type RunningHeapcap, type TmpDir } from '@heapcap/testkit';

let redis: RedisServer;
let dir: TmpDir;
let queue: HeapcapQueue;
const serves: RunningHeapcap[] = [];
const targets: NodeTarget[] = [];

before(async () => {
  [redis, dir] = await Promise.all([startRedis(), tmpDir('heapcap-watch')]);
  queue = createQueue({ redisUrl: redis.url });
});
// A test that failed half-way must not leave its serve processes watching the next test's targets, nor its rules.
beforeEach(async () => {
  await Promise.allSettled(serves.splice(0).map((s) => s.stop('SIGKILL')));
  for (const r of await queue.watch.list()) await queue.watch.remove(r.id);
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

/** `heapcap serve --dev` on the shared Redis (short watch intervals in `env`). */
async function serve(env: Record<string, string>): Promise<RunningHeapcap> {
  const s = await startDevServe(dir.path, redis.url, env);
  serves.push(s);
  return s;
}

async function api<T>(s: RunningHeapcap, method: string, path: string, body?: unknown): Promise<{ status: number; body: T }> {
  const res = await fetch(`${s.url}${path}`, {
    method,
    headers: body === undefined ? undefined : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
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
    return (await waitFor(fn, { timeoutMs, intervalMs: 100, what })) as T;
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
    cooldownSeconds: 25,
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
  }, 'the second watch capture', 90_000);
  assert.ok(Date.parse(second[1]!.createdAt) - Date.parse(second[0]!.createdAt) >= 25_000, 'not before the cooldown');
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

void test('two serve processes: one samples the target, the rule fires once; SIGKILL the sampler and the other takes over within two intervals', async () => {
  const target = await growable();
  const proxy = await startCdpProxy(target.wsUrl!);
  try {
    await writeFile(join(dir.path, 'targets.yaml'), `targets:\n  - id: proxied\n    kind: node\n    ws: ${proxy.url}\n`);
    const intervalMs = 2_000;
    const [a, b] = await Promise.all([serve({ HEAPCAP_WATCH_INTERVAL: '2s' }), serve({ HEAPCAP_WATCH_INTERVAL: '2s' })]);
    await target.request('hold 60', 'HELD');
    const created = await api<RuleView>(a, 'POST', '/v1/watch-rules', { id: 'once', target: 'proxied', when: { metric: 'heapUsedBytes', above: 32 * 1024 * 1024, forSeconds: 1 }, cooldownSeconds: 3600, maxPerDay: 5 });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const captures = await until(async () => {
      const c = await watchCaptures('once');
      return c.length === 1 && c[0]!.status === 'succeeded' ? c : undefined;
    }, 'the watch capture', 60_000);
    assert.equal(captures.length, 1);

    // Over five more intervals, the samples reach the target through one connection only.
    const before = proxy.callsPerConnection('Runtime.getHeapUsage');
    const total = (): number => proxy.calls('Runtime.getHeapUsage');
    const start = total();
    await until(async () => total() >= start + 5, 'five more samples', 60_000);
    const grew = proxy.callsPerConnection('Runtime.getHeapUsage').map((n, i) => n - (before[i] ?? 0)).filter((d) => d > 0);
    assert.equal(grew.length, 1, `samples came through ${grew.length} connections: ${JSON.stringify(proxy.callsPerConnection('Runtime.getHeapUsage'))}`);
    assert.equal((await watchCaptures('once')).length, 1, 'the rule fired once across both processes');

    // Kill the sampler; the other takes over.
    const sampler = (await stateOf(a, 'once', 'proxied'))!.sampler!;
    const [holder, other] = sampler.includes(`-${a.pid}-`) ? [a, b] : [b, a];
    assert.ok(sampler.includes(`-${holder.pid}-`), `the sampler ${sampler} is one of the serve processes (${a.pid}, ${b.pid})`);
    await holder.stop('SIGKILL');
    const killedAt = Date.now();
    const taken = await until(async () => {
      const r = await api<{ sampler: string | null; items: { t: number }[] }>(other, 'GET', `/v1/targets/proxied/samples?since=${new Date(killedAt).toISOString()}`);
      return r.body.items.length > 0 && r.body.sampler !== null && r.body.sampler !== sampler ? r.body : undefined;
    }, 'the other process to sample the target', 30_000);
    const delay = taken.items[0]!.t - killedAt;
    assert.ok(delay <= 2 * intervalMs, `took over after ${delay} ms (two intervals: ${2 * intervalMs} ms)`);
    assert.ok(taken.sampler!.includes(`-${other.pid}-`), `the new sampler ${taken.sampler} is the surviving process ${other.pid}`);
    assert.equal((await watchCaptures('once')).length, 1, 'no second firing after the takeover (the episode state is in Redis)');
    await api(other, 'DELETE', '/v1/watch-rules/once');
    await other.stop();
  } finally {
    await proxy.close();
    await target.request('release', 'RELEASED');
  }
});

void test('one sampler per target across rolling restarts: a handover adds no sample within an interval and leaves no interval without one', async () => {
  const target = await growable();
  await writeFile(join(dir.path, 'targets.yaml'), `targets:\n  - id: rolling\n    kind: node\n    ws: ${target.wsUrl}\n`);
  // Sampled for its curve (no rule): HEAPCAP_SAMPLE_INTERVAL; the lease lasts a watch interval, renewed every quarter.
  const intervalMs = 4_000;
  const env = { HEAPCAP_SAMPLE_INTERVAL: '4s', HEAPCAP_WATCH_INTERVAL: '4s' };
  const since = Date.now();
  const running = await Promise.all([serve(env), serve(env)]);
  const stored = async (): Promise<number[]> => (await queue.watch.samples('rolling', since, Date.now() + 60_000, 1_000)).map((s) => s.sample.t);
  const moreSamples = async (n: number, what: string): Promise<void> => {
    const have = (await stored()).length;
    await until(async () => (await stored()).length >= have + n, what, 60_000);
  };
  await moreSamples(2, 'the first samples');
  for (let restart = 1; restart <= 2; restart++) {
    // Right after a sample, so the other process takes the target over early in the interval: sampling it at once
    // there would put two samples a fraction of an interval apart.
    await moreSamples(1, `a sample before restart ${restart}`);
    const lease = await queue.watch.leaseOf('rolling');
    const holder = running.find((s) => lease?.holder.includes(`-${s.pid}-`) === true);
    assert.ok(holder !== undefined, `the sampler ${lease?.holder} is one of the serve processes (${running.map((s) => s.pid).join(', ')})`);
    await holder.stop();
    running.splice(running.indexOf(holder), 1, await serve(env));
    await moreSamples(2, `two samples after restart ${restart}`);
  }
  const t = await stored();
  const gaps = t.slice(1).map((x, i) => x - (t[i] as number));
  // A sample's time is taken when the target answers: under load that moves by a few hundred ms (a full run
  // read 3,688 ms between two samples of one sampler). Two samplers at once land within a tick (1 s) of each other.
  assert.ok(gaps.every((g) => g >= intervalMs * 0.85), `no two samples within one interval (${intervalMs} ms): gaps ${gaps.join(', ')} ms`);
  assert.ok(gaps.every((g) => g <= 2 * intervalMs), `no interval without a sample: gaps ${gaps.join(', ')} ms`);
  await Promise.all(running.map((s) => s.stop()));
});

void test('samples survive a serve restart, the stream is capped, a moved target is followed, and bad rules are refused with the field', async () => {
  const target = await growable();
  await writeFile(join(dir.path, 'targets.yaml'), `targets:\n  - id: sampled\n    kind: node\n    inspect: 127.0.0.1:${target.port}\n    labels: { app: sampled }\n  - id: other\n    kind: node\n    inspect: 127.0.0.1:1\n    labels: { app: other }\n`);
  // Keep 3 s at 200 ms: 15 samples.
  const env = { HEAPCAP_WATCH_INTERVAL: '200ms', HEAPCAP_WATCH_RETENTION: '3s' };
  const first = await serve(env);

  const bad: [string, object, string][] = [
    ['ratio above 1', { target: 'sampled', when: { metric: 'heapUsedRatio', above: 1.5, forSeconds: 5 } }, 'when.above'],
    ['ratio below 0', { target: 'sampled', when: { metric: 'heapUsedRatio', above: -0.1, forSeconds: 5 } }, 'when.above'],
    ['negative bytes', { target: 'sampled', when: { metric: 'heapUsedBytes', above: -1, forSeconds: 5 } }, 'when.above'],
    ['forSeconds 0', { target: 'sampled', when: { metric: 'heapUsedRatio', above: 0.8, forSeconds: 0 } }, 'when.forSeconds'],
    ['cooldown below the interval', { target: 'sampled', when: { metric: 'heapUsedRatio', above: 0.8, forSeconds: 5 }, cooldownSeconds: 0 }, 'cooldownSeconds'],
    ['unknown metric', { target: 'sampled', when: { metric: 'heapFree', above: 0.8, forSeconds: 5 } }, 'when.metric'],
    ['unknown target', { target: 'nope', when: { metric: 'heapUsedRatio', above: 0.8, forSeconds: 5 } }, 'target'],
    ['growth without a window', { target: 'sampled', when: { metric: 'heapGrowthBytes', above: 1e6, forSeconds: 5 } }, 'when.windowSeconds'],
    ['forcing the headroom gate', { target: 'sampled', when: { metric: 'heapUsedRatio', above: 0.8, forSeconds: 5 }, capture: { options: { forceHeadroom: true } } }, 'capture.options.forceHeadroom'],
    ['target and selector', { target: 'sampled', selector: { app: 'x' }, when: { metric: 'heapUsedRatio', above: 0.8, forSeconds: 5 } }, 'selector'],
  ];
  for (const [name, body, field] of bad) {
    const res = await api<{ error: { code: string; details?: { fields?: { path: string }[] } } }>(first, 'POST', '/v1/watch-rules', body);
    assert.equal(res.status, 400, `${name}: ${JSON.stringify(res.body)}`);
    assert.equal(res.body.error.code, 'validation_failed', name);
    const paths = (res.body.error.details?.fields ?? []).map((f) => f.path);
    assert.ok(paths.some((p) => p === field || p.endsWith(`.${field}`) || p.startsWith(`${field}`)), `${name}: fields ${JSON.stringify(paths)}, expected ${field}`);
  }
  assert.deepEqual((await api<{ items: unknown[] }>(first, 'GET', '/v1/watch-rules')).body.items, [], 'nothing created');

  // A selector: resolved against the registry at every tick.
  const created = await api(first, 'PUT', '/v1/watch-rules/never', { selector: { app: 'sampled' }, when: { metric: 'heapUsedRatio', above: 0.99, forSeconds: 60 }, cooldownSeconds: 60 });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  // Capped: more than 15 samples were taken, 15 are kept.
  const taken = await until(async () => {
    const r = await api<{ keep: number; stored: number; items: { t: number }[] }>(first, 'GET', '/v1/targets/sampled/samples');
    return r.body.stored >= r.body.keep && r.body.items.length >= r.body.keep && r.body.items[0]!.t > Date.now() - 30_000 ? r.body : undefined;
  }, 'a full stream');
  assert.equal(taken.keep, 15);
  await until(async () => (await queue.watch.sampleCount('sampled')) === 15 && (await api<{ items: { t: number }[] }>(first, 'GET', '/v1/targets/sampled/samples')).body.items[0]!.t > taken.items[0]!.t, 'the oldest sample to roll off');
  assert.equal((await api<{ items: unknown[] }>(first, 'GET', '/v1/targets/sampled/samples')).body.items.length, 15);

  // Paused before the restart, so that the new process does not sample (and roll the oldest off) before we read.
  assert.equal((await api(first, 'POST', '/v1/watch-rules/never/pause')).status, 200);
  await until(async () => (await queue.watch.leaseOf('sampled')) === null, 'the watcher to let the target go');
  await first.stop();
  const stoppedAt = Date.now();
  const kept = (await queue.watch.samples('sampled', 0, stoppedAt, 100)).map((x) => x.sample.t);
  assert.equal(kept.length, 15);
  const second = await serve(env);
  const served = await api<{ items: { t: number }[] }>(second, 'GET', `/v1/targets/sampled/samples?since=${new Date(kept[0]!).toISOString()}&until=${new Date(stoppedAt).toISOString()}`);
  assert.equal(served.status, 200);
  assert.deepEqual(served.body.items.map((x) => x.t), kept, 'the samples taken before the restart are served after it');
  assert.equal((await api(second, 'POST', '/v1/watch-rules/never/resume')).status, 200);
  // And sampling carries on.
  await until(async () => (await api<{ items: unknown[] }>(second, 'GET', `/v1/targets/sampled/samples?since=${new Date(stoppedAt).toISOString()}`)).body.items.length > 0, 'a sample after the restart');
  // The registry entry moves (here: behind a CDP proxy): the watcher follows it at its next sample.
  const proxy = await startCdpProxy(target.wsUrl!);
  try {
    const moved = await api(second, 'PUT', '/v1/targets/sampled', { id: 'sampled', kind: 'node', ws: proxy.url, labels: { app: 'sampled' } });
    assert.equal(moved.status, 200, JSON.stringify(moved.body));
    await until(async () => proxy.calls('Runtime.getHeapUsage') >= 2, 'samples through the new address');
  } finally {
    await proxy.close();
  }
  const unknown = await api<{ error: { code: string } }>(second, 'GET', '/v1/targets/nope/samples');
  assert.equal(unknown.status, 404);
  await api(second, 'DELETE', '/v1/watch-rules/never');
  await second.stop();
});

const cgroups = memoryCgroupLayout();

void test('the headroom gate refuses the snapshot (a real cgroup limit): the rule takes an allocation sampling profile instead', { skip: 'unsupported' in cgroups ? `needs a writable memory cgroup: ${cgroups.unsupported}` : false }, async () => {
  // ~67 MB of heap: its snapshot costs ~450 MB more, far above the 160 MiB the group allows (docs/headroom.md).
  const target = await startNodeTarget({ node: 'system', script: fixturePath('heap-holder.cjs'), env: { HEAP_MB: '60' } });
  targets.push(target);
  const group = await createMemoryCgroup(160 * 1024 * 1024);
  try {
    await group.moveIn(target.pid);
    // It allocates all the time (4 MiB alive at any moment), so the profile has live samples whenever it runs.
    await target.request('churn on', 'CHURN');
    await writeFile(join(dir.path, 'targets.yaml'), `targets:\n  - id: tight\n    kind: node\n    inspect: 127.0.0.1:${target.port}\n`);
    const s = await serve({ HEAPCAP_WATCH_INTERVAL: '500ms', HEAPCAP_WATCH_SAMPLING_DURATION: '3s' });
    const created = await api(s, 'POST', '/v1/watch-rules', { id: 'near', target: 'tight', when: { metric: 'heapUsedBytes', above: 30 * 1024 * 1024, forSeconds: 1 }, cooldownSeconds: 3600 });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const refused = await until(async () => {
      const c = await watchCaptures('near');
      return c.find((r) => r.status === 'failed');
    }, 'the refused snapshot', 60_000);
    assert.equal(refused.error?.code, 'insufficient_headroom');
    assert.equal(refused.options.kind, 'snapshot');
    const profile = await until(async () => (await watchCaptures('near')).find((r) => r.options.kind === 'sampling'), 'the sampling profile capture', 30_000);
    assert.equal(profile.trigger.fallbackOf, refused.id);
    assert.equal(profile.trigger.ruleId, 'near');
    const done = await until(async () => {
      const r = await queue.getCapture(profile.id);
      return r !== null && (r.status === 'succeeded' || r.status === 'failed') ? r : undefined;
    }, 'the sampling profile to finish', 60_000);
    assert.equal(done.status, 'succeeded', JSON.stringify(done.error));
    assert.equal(done.artifact?.kind, 'sampling-profile');
    const res = await fetch(`${s.url}/v1/captures/${profile.id}/artifact`);
    assert.equal(res.status, 200);
    const parsed = JSON.parse(await res.text()) as { head: { children: unknown[] }; samples: unknown[] };
    assert.ok(parsed.head !== undefined && Array.isArray(parsed.head.children), 'a SamplingHeapProfile: head');
    assert.ok(parsed.samples.length > 0, 'its samples are not empty');
    // The rule says what happened; the target is alive and answers.
    const st = await until(async () => {
      const v = await stateOf(s, 'near', 'tight');
      return v?.lastFiring?.outcome === 'sampled' ? v : undefined;
    }, 'the rule to show the sampled outcome');
    assert.ok(st.lastFiring !== null);
    assert.match(await target.request('hold 1', 'HELD'), /HELD/);
    assert.equal(target.child.exitCode, null, 'the target is alive');
    const metrics = await (await fetch(`${s.url}/metrics`)).text();
    assert.match(metrics, /heapcap_watch_firings_total\{outcome="refused_headroom"\} 1/);
    assert.match(metrics, /heapcap_watch_firings_total\{outcome="sampled"\} 1/);
    await s.stop();
  } finally {
    await target.kill('SIGKILL');
    await group.remove();
  }
});
