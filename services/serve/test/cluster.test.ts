/**
 * heapcap on a Redis Cluster (three masters, packages/testkit): two
 * `heapcap serve --dev` processes (bin/heapcap) with HEAPCAP_REDIS_URL
 * `redis+cluster://…`, MinIO storage and a real Node target. Captures through
 * the API and the queue, a schedule run once across both replicas with
 * keep-last retention, a watch rule that fires once, and a restart of the
 * master that holds heapcap's slot, after which all of it carries on; a
 * second deployment with HEAPCAP_REDIS_PARTITION keeps its keys on another
 * master.
 */
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import {
  fixturePath,
  freePort,
  heapcapS3Env,
  runHeapcap,
  startDevServe,
  startMinio,
  startNodeTarget,
  startRedisCluster,
  tmpDir,
  waitFor,
  type MinioServer,
  type NodeTarget,
  type RedisCluster,
  type RunningHeapcap,
  type TmpDir,
} from '@heapcap/testkit';

let cluster: RedisCluster;
let minio: MinioServer;
let target: NodeTarget;
let dir: TmpDir;
let a: RunningHeapcap;
let b: RunningHeapcap;

/** Index of the master that serves heapcap's one slot (the `{heapcap}` hash tag). */
let home: number;

before(async () => {
  [cluster, minio, target, dir] = await Promise.all([
    startRedisCluster(),
    startMinio(),
    startNodeTarget({ script: fixturePath('heap-holder.cjs'), env: { HEAP_MB: '4' } }),
    tmpDir('heapcap-cluster'),
  ]);
  await minio.createBucket('heapcap');
  await writeFile(join(dir.path, 'targets.yaml'), `targets:\n  - id: app\n    kind: node\n    inspect: 127.0.0.1:${target.port}\n    labels: { service: app }\n`);
  const env = {
    ...heapcapS3Env(minio, 's3://heapcap/cluster'),
    HEAPCAP_SCHEDULE_MIN_INTERVAL: '1s',
    HEAPCAP_RETENTION_INTERVAL: '2s',
    HEAPCAP_WATCH_INTERVAL: '500ms',
    // A failure's report quotes what the schedule worker logged (its runs and turns are info lines).
    HEAPCAP_LOG_LEVEL: 'info',
  };
  [a, b] = await Promise.all([startDevServe(dir.path, cluster.url, env), startDevServe(dir.path, cluster.url, env)]);
  // `heapcap serve` uses the default prefix, which becomes the hash tag `{heapcap}` on a cluster.
  home = cluster.ports.indexOf(await cluster.masterOf('{heapcap}'));
});
after(async () => {
  await Promise.allSettled([a?.stop(), b?.stop()]);
  await Promise.allSettled([target?.kill(), minio?.stop()]);
  await cluster?.stop();
  await dir?.cleanup();
});

/** The fields of a capture record these tests read. */
interface CaptureRecord {
  id: string;
  targetId: string;
  status: string;
  createdAt: string;
  artifact: unknown;
  error?: { code: string; phase?: string; message: string } | null;
  trigger: { kind: string; scheduleId?: string; ruleId?: string };
}

async function api<T>(s: RunningHeapcap, method: string, path: string, body?: unknown): Promise<{ status: number; body: T }> {
  const res = await fetch(`${s.url}${path}`, {
    method,
    headers: body === undefined ? undefined : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(60_000),
  });
  const text = await res.text();
  return { status: res.status, body: (text === '' ? null : JSON.parse(text)) as T };
}

/** GET /v1/captures?trigger=KIND: the newest 100. */
async function list(trigger: string): Promise<CaptureRecord[]> {
  const res = await api<{ items: CaptureRecord[] }>(b, 'GET', `/v1/captures?trigger=${trigger}&limit=100`);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body.items;
}

/** How many memory samples of the target Redis holds (GET /v1/targets/app/samples). */
async function sampleCount(): Promise<number> {
  const res = await api<{ stored: number }>(a, 'GET', '/v1/targets/app/samples');
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body.stored;
}

/** POST /v1/captures?wait and the artifact's first bytes through the other replica. */
async function captureThroughApi(): Promise<CaptureRecord> {
  const res = await api<{ capture: CaptureRecord }>(a, 'POST', '/v1/captures?wait=90', { target: 'app', reason: 'cluster', force: true });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  const capture = res.body.capture;
  assert.equal(capture.status, 'succeeded', JSON.stringify(res.body));
  const artifact = await fetch(`${b.url}/v1/captures/${capture.id}/artifact`, { signal: AbortSignal.timeout(30_000) });
  assert.equal(artifact.status, 200);
  const snapshot = (await artifact.json()) as { snapshot?: { node_count?: number } };
  assert.ok((snapshot.snapshot?.node_count ?? 0) > 1000, 'a real heap snapshot');
  return capture;
}

/**
 * Every key on master `i` is in `slot`. Two reads of a live keyspace (samplers, leases, expiries) can straddle
 * a change, so the counts must agree on some pair of reads; a key outside the slot keeps them apart until the
 * deadline, and the error lists the master's keys.
 */
async function onlySlot(i: number, slot: string): Promise<void> {
  try {
    await waitFor(
      async () => {
        const inSlot = await cluster.cli(i, 'CLUSTER', 'COUNTKEYSINSLOT', slot);
        const total = await cluster.cli(i, 'DBSIZE');
        const again = await cluster.cli(i, 'CLUSTER', 'COUNTKEYSINSLOT', slot);
        return inSlot === total && total === again ? true : undefined;
      },
      { timeoutMs: 10_000, intervalMs: 100, what: `every key on master ${i} in slot ${slot}` },
    );
  } catch (err) {
    throw new Error(`${(err as Error).message}; its keys: ${await cluster.cli(i, '--scan')}`);
  }
}

void test('every heapcap key, ours and BullMQ\'s, is in one slot on one master; the other masters hold none', async () => {
  await captureThroughApi();
  for (let i = 0; i < cluster.ports.length; i++) {
    const keys = Number(await cluster.cli(i, 'DBSIZE'));
    if (i === home) assert.ok(keys > 10, `master ${i} holds ${keys} keys`);
    else assert.equal(keys, 0, `master ${i} holds keys: ${await cluster.cli(i, '--scan')}`);
  }
  const slot = await cluster.cli(home, 'CLUSTER', 'KEYSLOT', '{heapcap}');
  await onlySlot(home, slot);
  const page = await list('rest');
  assert.ok(page.some((r) => r.status === 'succeeded' && r.targetId === 'app'));
});

void test('a schedule on both replicas runs once per turn, and keep-last retention expires the older captures', async () => {
  const body = { target: 'app', every: '2s', retention: { keepLast: 2 } };
  const puts = await Promise.all([api(a, 'PUT', '/v1/schedules/twice', body), api(b, 'PUT', '/v1/schedules/twice', body)]);
  assert.deepEqual(puts.map((p) => p.status).sort(), [200, 201], `one created it, the other replaced it: ${JSON.stringify(puts)}`);
  const captures = async (): Promise<CaptureRecord[]> =>
    (await list('schedule')).filter((r) => r.trigger.scheduleId === 'twice').sort((x, y) => x.createdAt.localeCompare(y.createdAt));
  const all = await waitFor(
    async () => {
      const c = await captures();
      return c.filter((r) => r.status === 'expired').length >= 2 ? c : undefined;
    },
    { timeoutMs: 90_000, intervalMs: 250, what: 'two scheduled captures expired by keep-last retention' },
  );
  const pause = await api(a, 'POST', '/v1/schedules/twice/pause');
  assert.equal(pause.status, 200);
  const created = all.map((r) => Date.parse(r.createdAt));
  for (let i = 1; i < created.length; i++) assert.ok(created[i]! - created[i - 1]! >= 1_500, `two captures of one turn: ${JSON.stringify(all.map((r) => r.createdAt))}`);
  assert.ok(all.filter((r) => r.status === 'succeeded').length <= 2 + 1, 'keep-last 2 (one more may have finished since the janitor ran)');
  for (const r of all.filter((x) => x.status === 'expired')) assert.equal(r.artifact, null, `${r.id} expired but kept its artifact`);
});

void test('a watch rule samples the target from one replica and fires once', async () => {
  const created = await api<{ rule: { id: string } }>(b, 'POST', '/v1/watch-rules', {
    id: 'big-heap',
    target: 'app',
    when: { metric: 'heapUsedBytes', above: 1024 * 1024, forSeconds: 1 },
    cooldownSeconds: 3600,
    maxPerDay: 5,
  });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const fired = await waitFor(
    async () => {
      const items = (await list('watch')).filter((r) => r.trigger.ruleId === 'big-heap' && r.status === 'succeeded');
      return items.length > 0 ? items : undefined;
    },
    { timeoutMs: 60_000, intervalMs: 250, what: 'the watch rule to fire' },
  );
  assert.ok((await sampleCount()) >= 2, 'samples stored');
  // Two more intervals: the rule stays in its episode (cooldown), neither replica fires again.
  const samples = await sampleCount();
  await waitFor(async () => (await sampleCount()) >= samples + 3, { timeoutMs: 30_000, intervalMs: 100, what: 'three more samples' });
  assert.equal((await list('watch')).filter((r) => r.trigger.ruleId === 'big-heap').length, fired.length);
  assert.equal(fired.length, 1, 'fired once across both replicas');
  const paused = await api(b, 'POST', '/v1/watch-rules/big-heap/pause');
  assert.equal(paused.status, 200);
});

void test('the master holding heapcap\'s slot restarts: the data is back, captures and schedules carry on', async () => {
  const before = await captureThroughApi();
  const restartedAt = Date.now();
  await cluster.restartMaster(home);
  // Its data came back from its AOF: the record taken before is still there, through either replica.
  const again = await waitFor(
    async () => {
      const r = await api<{ capture: CaptureRecord }>(b, 'GET', `/v1/captures/${before.id}`);
      return r.status === 200 ? r.body.capture : undefined;
    },
    { timeoutMs: 30_000, intervalMs: 250, what: 'the API to answer again' },
  );
  assert.equal(again.status, 'succeeded');
  await captureThroughApi();
  // The paused schedule resumes and runs again on the restarted master. 120 s: a run whose job went missing
  // is healed by the schedule worker's reconcile pass (every 30 s) once it is 15 s overdue, and a schedule
  // worker that takes no jobs (run L: both serves' after the restart, BullMQ #4138) is replaced by the pass
  // after the one that first saw it idle with runs waiting.
  assert.equal((await api(b, 'POST', '/v1/schedules/twice/resume')).status, 200);
  try {
    await waitFor(
      async () => (await list('schedule')).some((r) => r.trigger.scheduleId === 'twice' && r.status === 'succeeded' && Date.parse(r.createdAt) > restartedAt),
      { timeoutMs: 120_000, intervalMs: 250, what: 'a scheduled capture after the restart' },
    );
  } catch (err) {
    const since = (await list('schedule')).filter((r) => Date.parse(r.createdAt) > restartedAt).map((r) => `${r.createdAt} ${r.status} ${JSON.stringify(r.error)}`);
    // The serves log at info here: what the schedule worker did with the run (planned, turns) shows below.
    const said = (x: RunningHeapcap): string => x.stdout.lines().filter((l) => !l.includes('"level":30') || /schedul|twice/i.test(l)).slice(-40).join('\n');
    // BullMQ's view of the schedules queue: jobs waiting, delayed, running, and the job schedulers.
    const q = '{heapcap}:heapcap-schedules';
    const counts = await Promise.all(
      [['wait', 'LLEN'], ['active', 'LLEN'], ['delayed', 'ZCARD'], ['prioritized', 'ZCARD'], ['repeat', 'ZCARD']].map(async ([k, op]) => `${k}=${await cluster.cli(home, op!, `${q}:${k}`).catch((e: Error) => e.message)}`),
    );
    throw new Error(`${(err as Error).message}; scheduled since the restart: ${since.join(' | ') || 'none'};\nschedule: ${JSON.stringify((await api(a, 'GET', '/v1/schedules/twice')).body)}\nschedules queue: ${counts.join(' ')}\nserve a:\n${said(a)}\nserve b:\n${said(b)}`);
  }
  assert.equal((await api(a, 'POST', '/v1/schedules/twice/pause')).status, 200);
  // Both replicas are still up.
  assert.equal(a.child.exitCode, null);
  assert.equal(b.child.exitCode, null);
});

void test('HEAPCAP_REDIS_PARTITION: a second deployment on the cluster keeps its keys in its own slot, on another master', async () => {
  // A partition name whose hash tag lands on a master other than heapcap's (three masters: the first few suffice).
  let partition: string | undefined;
  let master = -1;
  for (let i = 1; partition === undefined; i++) {
    master = cluster.ports.indexOf(await cluster.masterOf(`{heapcap-p${i}}`));
    if (master !== home) partition = `p${i}`;
  }
  const p = await startDevServe(dir.path, cluster.url, { ...heapcapS3Env(minio, 's3://heapcap/cluster-partition'), HEAPCAP_REDIS_PARTITION: partition });
  try {
    const res = await api<{ capture: CaptureRecord }>(p, 'POST', '/v1/captures?wait=90', { target: 'app', reason: 'partition', force: true });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.capture.status, 'succeeded', JSON.stringify(res.body));
    // Every key of the partition, ours and BullMQ's, is in its slot on its master; heapcap's master holds only heapcap's.
    const slot = await cluster.cli(master, 'CLUSTER', 'KEYSLOT', `{heapcap-${partition}}`);
    const keys = Number(await cluster.cli(master, 'DBSIZE'));
    assert.ok(keys > 10, `master ${master} holds ${keys} keys`);
    await onlySlot(master, slot);
    await onlySlot(home, await cluster.cli(home, 'CLUSTER', 'KEYSLOT', '{heapcap}'));
    // The deployments do not see each other's records.
    assert.equal((await api(b, 'GET', `/v1/captures/${res.body.capture.id}`)).status, 404);
    assert.equal((await api(p, 'GET', `/v1/captures/${res.body.capture.id}`)).status, 200);
  } finally {
    await p.stop();
  }
});

void test('serve with an unreachable cluster says so, with the cluster URL and its password masked', async () => {
  const port = await freePort();
  const res = await runHeapcap(['serve', '--dev'], { env: { HEAPCAP_REDIS_URL: `redis+cluster://app:s3cret@127.0.0.1:${port},127.0.0.1:${port}` }, timeoutMs: 60_000 });
  assert.equal(res.code, 1, res.stderr);
  assert.match(res.stderr, new RegExp(`Redis is not reachable at redis\\+cluster://app:xxxxx@127\\.0\\.0\\.1:${port},127\\.0\\.0\\.1:${port}\\.`));
  assert.doesNotMatch(res.stderr + res.stdout, /s3cret/);
});
