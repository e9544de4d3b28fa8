/**
 * Continuous allocation profiles (issue 38 item 2) through `bin/heapcap serve --dev` (real Redis, real Node
 * targets with --inspect, real serve processes): a target registered with `profile` gets V8's sampler kept on by
 * the watcher that holds it and a `.heapprofile` stored every `every` as a capture record (trigger `profile`); a
 * one-off sampling profile reads that sampler instead of stopping it; a snapshot gets a profile beside it, and
 * the diff of two such snapshots answers `allocations`, and its suspects name the grown site that constructs their
 * class (a scheduled snapshot's growth too). The sampler is stopped in the target when the profile is
 * switched off, when the target is deregistered, and when the serve holding it is SIGKILLed (V8 stops it with the
 * session), after which the next serve starts it again and records the gap. Each "stopped" is the target's own V8
 * answering a fresh session's getSamplingProfile with "not started".
 */
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { fixturePath, FREE_PORT, freePort, runHeapcap, samplingProfilerRunning, startHeapcap, startNodeTarget, startRedis, tmpDir, waitFor, type NodeTarget, type RedisServer, type RunningHeapcap, type TmpDir } from '@heapcap/testkit';

let redis: RedisServer;
let dir: TmpDir;
let target: NodeTarget;
let other: NodeTarget;
let sites: NodeTarget;

before(async () => {
  [redis, dir, target, other, sites] = await Promise.all([
    startRedis(),
    tmpDir('heapcap-continuous-profile'),
    startNodeTarget({ script: fixturePath('allocator.cjs') }),
    startNodeTarget({ script: fixturePath('allocator.cjs') }),
    startNodeTarget({ script: fixturePath('alloc-sites.cjs') }),
  ]);
});
after(async () => {
  await Promise.all([target?.kill('SIGKILL'), other?.kill('SIGKILL'), sites?.kill('SIGKILL')]);
  await redis?.stop();
  await dir?.cleanup();
});

/** A serve on `redisUrl` whose watcher ticks every 500 ms (HEAPCAP_WATCH_INTERVAL 2s); only profiled targets are held. */
async function serve(name: string, targetsYaml: string, redisUrl = redis.url, env: Record<string, string> = {}): Promise<RunningHeapcap> {
  const targetsFile = join(dir.path, `${name}.targets.yaml`);
  await writeFile(targetsFile, targetsYaml);
  return startHeapcap(['serve', '--dev'], {
    env: {
      HEAPCAP_REDIS_URL: redisUrl,
      HEAPCAP_PORT: FREE_PORT,
      HEAPCAP_TARGETS_FILE: targetsFile,
      HEAPCAP_STORAGE: `file://${join(dir.path, 'captures')}`,
      HEAPCAP_WATCH_INTERVAL: '2s',
      HEAPCAP_SAMPLE_INTERVAL: '0',
      ...env,
    },
  });
}

async function api<T>(s: RunningHeapcap, method: string, path: string, body?: unknown): Promise<{ status: number; body: T }> {
  const res = await fetch(`${s.url}${path}`, {
    method,
    headers: body === undefined ? undefined : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(120_000),
  });
  return { status: res.status, body: (await res.json()) as T };
}

interface Rec {
  id: string;
  status: string;
  options: { kind: string; readRunning?: boolean };
  trigger: { kind: string; besideOf?: string; profile?: { since: string; samplingIntervalBytes: number; gap?: { from: string; to: string; reason: string } } };
  error: { code: string; message: string } | null;
  artifact: { kind?: string } | null;
  profileCaptureId?: string;
  createdAt: string;
  growth?: { since: string | null; suspects?: { items: { class: string; allocated?: string }[] }; allocations?: { base: string; head: string; grown: { functionName: string; bytesDelta: number }[] } };
}
type ErrorBody = { error: { code: string; details: { fields?: { path: string; code?: string; message: string }[] } } };

async function profiles(s: RunningHeapcap, targetId: string): Promise<Rec[]> {
  const res = await api<{ items: Rec[] }>(s, 'GET', `/v1/captures?target=${targetId}&trigger=profile&limit=100`);
  assert.equal(res.status, 200);
  return res.body.items;
}

async function capture(s: RunningHeapcap, body: unknown): Promise<Rec> {
  const res = await api<{ capture: Rec }>(s, 'POST', '/v1/captures?wait=90', body);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.equal(res.body.capture.status, 'succeeded', JSON.stringify(res.body.capture.error));
  return res.body.capture;
}

const node = (id: string, t: NodeTarget, profile: unknown): Record<string, unknown> => ({ id, kind: 'node', inspect: `127.0.0.1:${t.port}`, ...(profile === undefined ? {} : { profile }) });

void test('profile on a target: sampler kept on, profiles stored every interval, a one-off reads it, a profile beside each snapshot, diff allocations, then switched off and deregistered', { timeout: 300_000 }, async () => {
  const ws = target.wsUrl!;
  // The probe can say "not running": nothing has started a sampler in this target yet.
  assert.equal(await samplingProfilerRunning(ws), false);
  const s = await serve('one', 'targets: []\n');
  try {
    const put = await api<unknown>(s, 'PUT', '/v1/targets/alloc', node('alloc', target, { every: '5s', samplingIntervalBytes: 65536 }));
    assert.equal(put.status, 201, JSON.stringify(put.body));
    // …and "running": the watcher that holds the target started V8's sampler.
    await waitFor(() => samplingProfilerRunning(ws), { timeoutMs: 60_000, intervalMs: 250, what: 'the continuous sampler to run in the target' });
    const first = await waitFor(async () => (await profiles(s, 'alloc')).find((r) => r.status === 'succeeded'), { timeoutMs: 90_000, intervalMs: 500, what: 'a stored continuous profile' });
    assert.equal(first.options.kind, 'sampling');
    assert.equal(first.options.readRunning, true);
    assert.equal(first.artifact?.kind, 'sampling-profile');
    assert.equal(first.trigger.profile?.samplingIntervalBytes, 65536);
    assert.equal(first.trigger.profile?.gap, undefined, 'the first sampler of the target has no gap');
    const download = await fetch(`${s.url}/v1/captures/${first.id}/artifact`, { signal: AbortSignal.timeout(30_000) });
    assert.deepEqual(Object.keys((await download.json()) as object).sort(), ['head', 'samples'], 'a .heapprofile DevTools loads');
    const summary = await api<{ summary: { sites: unknown[] } }>(s, 'GET', `/v1/captures/${first.id}/profile?format=summary`);
    assert.equal(summary.status, 200, JSON.stringify(summary.body));

    // A one-off sampling profile while the continuous one runs: it reads the running sampler and leaves it on.
    const oneOff = await capture(s, { target: 'alloc', options: { kind: 'sampling', samplingSeconds: 2 } });
    assert.equal(oneOff.artifact?.kind, 'sampling-profile');
    assert.equal(await samplingProfilerRunning(ws), true, 'the one-off did not stop the continuous sampler');
    const afterOneOff = Date.now();
    const later = await waitFor(async () => (await profiles(s, 'alloc')).find((r) => r.status !== 'queued' && r.status !== 'running' && Date.parse(r.createdAt) > afterOneOff), {
      timeoutMs: 60_000,
      intervalMs: 500,
      what: 'a continuous read after the one-off',
    });
    assert.equal(later.status, 'succeeded', `the read after the one-off found the sampler: ${JSON.stringify(later.error)}`);

    // Snapshots get a profile beside them, linked both ways; the diff of two answers allocations too.
    const snaps: Rec[] = [];
    for (let i = 0; i < 2; i++) {
      const snap = await capture(s, { target: 'alloc' });
      const linked = await waitFor(
        async () => {
          const r = (await api<{ capture: Rec }>(s, 'GET', `/v1/captures/${snap.id}`)).body.capture;
          if (r.profileCaptureId === undefined) return undefined;
          const p = (await api<{ capture: Rec }>(s, 'GET', `/v1/captures/${r.profileCaptureId}`)).body.capture;
          return p.status === 'succeeded' ? { r, p } : undefined;
        },
        { timeoutMs: 60_000, intervalMs: 250, what: 'the profile beside the snapshot' },
      );
      assert.equal(linked.p.trigger.besideOf, snap.id);
      snaps.push(linked.r);
    }
    const diff = await api<{ diff: unknown; allocations: { grown: unknown[]; head: { samples: number } } | null }>(s, 'GET', `/v1/diff?base=${snaps[0]!.id}&head=${snaps[1]!.id}`);
    assert.equal(diff.status, 200, JSON.stringify(diff.body));
    assert.ok(diff.body.diff !== null, 'the snapshot diff is there');
    assert.ok(diff.body.allocations !== null && diff.body.allocations.head.samples > 0, 'and the allocations between the profiles beside them');
    const cli = await runHeapcap(['diff', snaps[0]!.id, snaps[1]!.id], { env: { HEAPCAP_API_URL: s.url } });
    assert.equal(cli.code, 0, cli.stderr);
    assert.match(cli.stdout, new RegExp(`allocation sites from the profile beside capture ${snaps[0]!.id} \\(alloc\\) to the profile beside capture ${snaps[1]!.id}`), cli.stdout);

    // (a) Switched off: the target's V8 runs no sampler any more.
    const off = await api<unknown>(s, 'PUT', '/v1/targets/alloc', node('alloc', target, false));
    assert.equal(off.status, 200, JSON.stringify(off.body));
    await waitFor(async () => !(await samplingProfilerRunning(ws)), { timeoutMs: 30_000, intervalMs: 250, what: 'the sampler to stop once the profile is off' });

    // (b) On again, then deregistered: stopped again.
    assert.equal((await api<unknown>(s, 'PUT', '/v1/targets/alloc', node('alloc', target, { every: '1m' }))).status, 200);
    await waitFor(() => samplingProfilerRunning(ws), { timeoutMs: 30_000, intervalMs: 250, what: 'the sampler to run again' });
    const del = await fetch(`${s.url}/v1/targets/alloc`, { method: 'DELETE' });
    assert.equal(del.status, 204, await del.text());
    await waitFor(async () => !(await samplingProfilerRunning(ws)), { timeoutMs: 30_000, intervalMs: 250, what: 'the sampler to stop once the target is deregistered' });
  } finally {
    await s.stop('SIGTERM');
  }
});

void test('a profile the settings refuse: a sampling interval out of range and a node-pid target get stable codes that say how to fix it', { timeout: 120_000 }, async () => {
  const spare = await startRedis();
  const s = await serve('refuse', 'targets: []\n', spare.url);
  try {
    const small = await api<ErrorBody>(s, 'PUT', '/v1/targets/x', node('x', other, { every: '10m', samplingIntervalBytes: 1024 }));
    assert.equal(small.status, 400);
    assert.equal(small.body.error.code, 'validation_failed');
    const field = small.body.error.details.fields?.find((f) => f.path === 'profile.samplingIntervalBytes');
    assert.equal(field?.code, 'profile_interval_out_of_range', JSON.stringify(small.body));
    assert.match(field?.message ?? '', /between 16384 \(16 KiB\) and 16777216 \(16 MiB\)/);
    const pid = await api<ErrorBody>(s, 'PUT', '/v1/targets/p', { id: 'p', kind: 'node-pid', pid: other.pid, profile: { every: '10m' } });
    assert.equal(pid.status, 400);
    const pidField = pid.body.error.details.fields?.find((f) => f.path === 'profile');
    assert.equal(pidField?.code, 'profile_unsupported', JSON.stringify(pid.body));
    assert.match(pidField?.message ?? '', /register it as kind node/);
    const every = await api<ErrorBody>(s, 'PUT', '/v1/targets/x', node('x', other, { every: '1s' }));
    assert.equal(every.status, 400);
    assert.equal(every.body.error.details.fields?.[0]?.path, 'profile.every');
  } finally {
    await s.stop('SIGTERM');
    await spare.stop();
  }
});

void test('the serve holding the sampler is SIGKILLed: the sampler stops with its session; the next serve starts it again and records the gap', { timeout: 300_000 }, async () => {
  const spare = await startRedis();
  const ws = other.wsUrl!;
  const yaml = `targets:\n  - id: other\n    kind: node\n    inspect: "127.0.0.1:${other.port}"\n    profile: { every: 5s, samplingIntervalBytes: 131072 }\n`;
  const a = await serve('a', yaml, spare.url);
  let b: RunningHeapcap | undefined;
  try {
    await waitFor(() => samplingProfilerRunning(ws), { timeoutMs: 60_000, intervalMs: 250, what: 'the first serve to start the sampler' });
    await waitFor(async () => (await profiles(a, 'other')).some((r) => r.status === 'succeeded'), { timeoutMs: 90_000, intervalMs: 500, what: 'a first stored profile' });
    await a.stop('SIGKILL');
    // (c) Nobody holds it now: the target's V8 stopped the sampler when the killed process's session dropped.
    await waitFor(async () => !(await samplingProfilerRunning(ws)), { timeoutMs: 30_000, intervalMs: 250, what: 'the sampler to stop with the killed serve' });
    b = await serve('b', yaml, spare.url);
    await waitFor(() => samplingProfilerRunning(ws), { timeoutMs: 60_000, intervalMs: 250, what: 'the next serve to start the sampler again' });
    const resumed = await waitFor(async () => (await profiles(b!, 'other')).find((r) => r.status === 'succeeded' && r.trigger.profile?.gap !== undefined), { timeoutMs: 90_000, intervalMs: 500, what: 'a profile recording the gap' });
    const gap = resumed.trigger.profile!.gap!;
    assert.match(gap.reason, /^handover from /);
    assert.ok(Date.parse(gap.to) > Date.parse(gap.from), JSON.stringify(gap));
    assert.equal(resumed.trigger.profile?.since, gap.to, 'the new sampler started when the gap ended');
  } finally {
    await b?.stop('SIGTERM');
    await a.stop('SIGKILL').catch(() => undefined);
    await spare.stop();
  }
  // A serve stopped cleanly stops its sampler too.
  assert.equal(await samplingProfilerRunning(ws), false);
});

void test('a watch rule with a selector asks for the profile; a scheduled snapshot\'s growth names the allocation site that grew between the profiles beside two snapshots; deleting the rule stops the sampler', { timeout: 300_000 }, async () => {
  const spare = await startRedis();
  const ws = sites.wsUrl!;
  const yaml = `targets:\n  - id: sites\n    kind: node\n    inspect: "127.0.0.1:${sites.port}"\n    labels: { app: sites }\n`;
  const s = await serve('growth', yaml, spare.url, { HEAPCAP_SCHEDULE_MIN_INTERVAL: '1s' });
  try {
    const rule = await api<unknown>(s, 'POST', '/v1/watch-rules', {
      id: 'prof',
      selector: { app: 'sites' },
      when: { metric: 'heapUsedBytes', above: 64 * 1024 ** 3, forSeconds: 1 },
      cooldownSeconds: 3600,
      profile: { every: '1m', samplingIntervalBytes: 16384 },
    });
    assert.equal(rule.status, 201, JSON.stringify(rule.body));
    await waitFor(() => samplingProfilerRunning(ws), { timeoutMs: 60_000, intervalMs: 250, what: 'the rule\'s profile to start the sampler' });
    const sched = await api<unknown>(s, 'POST', '/v1/schedules', { id: 'every-10s', target: 'sites', every: '10s' });
    assert.equal(sched.status, 201, JSON.stringify(sched.body));
    const scheduled = async (): Promise<Rec[]> => (await api<{ items: Rec[] }>(s, 'GET', '/v1/captures?target=sites&trigger=schedule&limit=100')).body.items;
    const first = await waitFor(async () => (await scheduled()).find((r) => r.status === 'succeeded' && r.profileCaptureId !== undefined), { timeoutMs: 90_000, intervalMs: 250, what: 'a scheduled snapshot with a profile beside it' });
    await waitFor(async () => (await api<{ capture: Rec }>(s, 'GET', `/v1/captures/${first.profileCaptureId}`)).body.capture.status === 'succeeded', { timeoutMs: 60_000, intervalMs: 250, what: 'its profile' });
    // Between this snapshot and the next, the target keeps 20,000 Sessions: the site that grew. And 8,000 Orders
    // (a constructor V8 does not inline: a frame of its own) and 8,000 Tickets (no constructor of its own).
    await sites.request('orders 8000', 'ORDERED');
    await sites.request('tickets 8000', 'ISSUED');
    await sites.request('leak 20000', 'LEAKED');
    const leakedAt = Date.now();
    const grown = await waitFor(
      async () => (await scheduled()).find((r) => Date.parse(r.createdAt) > leakedAt && r.growth?.allocations !== undefined),
      { timeoutMs: 120_000, intervalMs: 500, what: 'a later scheduled snapshot whose growth has allocation sites' },
    );
    const allocations = grown.growth!.allocations!;
    assert.equal(allocations.head, grown.profileCaptureId, 'the head profile is the one beside this snapshot');
    // The Orders (~2 KiB each) may outgrow it: the leak's site is among the grown, not necessarily first.
    const top = allocations.grown.find((g) => ['Session', 'createSession', 'leakSessions'].includes(g.functionName));
    assert.ok(top !== undefined, JSON.stringify(allocations));
    assert.ok(top.bytesDelta > 1024 * 1024, JSON.stringify(top));
    // The suspects name the grown site that constructs their class: Order's constructor frame; Ticket has none.
    const ORDER_LINE = /^allocated at fixtures\/alloc-sites\.cjs:\d+ Order ← fixtures\/alloc-sites\.cjs:\d+ .*\(sampled: its constructor in the allocation profiles\)$/;
    const items = grown.growth!.suspects?.items ?? [];
    assert.match(items.find((i) => i.class === 'Order')?.allocated ?? '', ORDER_LINE, JSON.stringify(items));
    assert.equal(items.find((i) => i.class === 'Ticket')?.allocated, undefined, JSON.stringify(items));
    type DiffBody = { diff: { suspects: { suspects: { class: string; allocated?: string }[] } } };
    const diff = await api<DiffBody>(s, 'GET', `/v1/diff?base=${first.id}&head=${grown.id}`);
    assert.equal(diff.status, 200, JSON.stringify(diff.body));
    const named = diff.body.diff.suspects.suspects;
    assert.match(named.find((x) => x.class === 'Order')?.allocated ?? '', ORDER_LINE, JSON.stringify(named));
    const ticket = named.find((x) => x.class === 'Ticket');
    assert.ok(ticket !== undefined && ticket.allocated === undefined, JSON.stringify(named));
    const cli = await runHeapcap(['diff', first.id, grown.id], { env: { HEAPCAP_API_URL: s.url } });
    assert.equal(cli.code, 0, cli.stderr);
    assert.match(cli.stdout, /\d+\. .*Order.*\n(?: {6}.*\n)* {6}allocated at fixtures\/alloc-sites\.cjs:\d+ Order ← /, cli.stdout);
    assert.equal((await fetch(`${s.url}/v1/schedules/every-10s`, { method: 'DELETE' })).status, 204);
    // The rule was the only reason to profile (and to watch) the target: deleting it stops the sampler.
    assert.equal((await fetch(`${s.url}/v1/watch-rules/prof`, { method: 'DELETE' })).status, 204);
    await waitFor(async () => !(await samplingProfilerRunning(ws)), { timeoutMs: 30_000, intervalMs: 250, what: 'the sampler to stop once the rule is deleted' });
  } finally {
    await s.stop('SIGTERM');
    await spare.stop();
  }
});

/** The inspector WebSocket of whatever process listens on `port` now. */
async function wsAt(port: number): Promise<string> {
  const list = (await (await fetch(`http://127.0.0.1:${port}/json/list`, { signal: AbortSignal.timeout(10_000) })).json()) as { webSocketDebuggerUrl: string }[];
  return list[0]!.webSocketDebuggerUrl;
}

void test('the target restarts on its inspector address: the holder starts a sampler in the new process and the next profile records the gap', { timeout: 300_000 }, async () => {
  const spare = await startRedis();
  const port = await freePort();
  const start = (): Promise<NodeTarget> => startNodeTarget({ script: fixturePath('allocator.cjs'), inspect: false, nodeFlags: [`--inspect=127.0.0.1:${port}`] });
  let t = await start();
  const yaml = `targets:\n  - id: restarts\n    kind: node\n    inspect: "127.0.0.1:${port}"\n    profile: { every: 5s }\n`;
  const s = await serve('restart', yaml, spare.url);
  try {
    await waitFor(async () => samplingProfilerRunning(await wsAt(port)), { timeoutMs: 60_000, intervalMs: 250, what: 'the sampler in the first process' });
    await waitFor(async () => (await profiles(s, 'restarts')).some((r) => r.status === 'succeeded'), { timeoutMs: 90_000, intervalMs: 500, what: 'a first stored profile' });
    await t.kill('SIGKILL');
    t = await start();
    await waitFor(async () => samplingProfilerRunning(await wsAt(port)), { timeoutMs: 60_000, intervalMs: 250, what: 'the sampler in the restarted process' });
    const resumed = await waitFor(async () => (await profiles(s, 'restarts')).find((r) => r.status === 'succeeded' && r.trigger.profile?.gap !== undefined), { timeoutMs: 90_000, intervalMs: 500, what: 'a profile recording the gap' });
    assert.match(resumed.trigger.profile!.gap!.reason, /the sampler stopped/);
  } finally {
    await s.stop('SIGTERM');
    await t.kill('SIGKILL');
    await spare.stop();
  }
});
