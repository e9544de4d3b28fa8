/**
 * `heapcap schedules …` against a real `heapcap serve --dev` (bin/heapcap, real
 * Redis and Node target): create with a table and --json, list, pause, resume,
 * delete, and the API's refusals as `code: message` with exit code 2.
 */
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { after, before, test } from 'node:test';
import { schedulesMain } from '@heapcap/cli';
import { fixturePath, FREE_PORT, startHeapcap, startNodeTarget, startRedis, tmpDir, waitFor, type NodeTarget, type RedisServer, type RunningHeapcap, type TmpDir } from '@heapcap/testkit';

let redis: RedisServer;
let target: NodeTarget;
let dir: TmpDir;
let serve: RunningHeapcap;

before(async () => {
  [redis, target, dir] = await Promise.all([startRedis(), startNodeTarget({ script: fixturePath('heap-holder.cjs'), env: { HEAP_MB: '2' } }), tmpDir('heapcap-schedules-cli')]);
  const targets = join(dir.path, 'targets.yaml');
  await writeFile(targets, `targets:\n  - id: checkout-1\n    kind: node\n    inspect: 127.0.0.1:${target.port}\n    labels: { service: checkout, env: prod }\n`);
  serve = await startHeapcap(['serve', '--dev'], {
    cwd: dir.path,
    env: { HEAPCAP_REDIS_URL: redis.url, HEAPCAP_PORT: FREE_PORT, HEAPCAP_TARGETS_FILE: targets, HEAPCAP_SCHEDULE_MIN_INTERVAL: '1s' },
  });
});
after(async () => {
  await serve?.stop();
  await target?.kill();
  await redis?.stop();
  await dir?.cleanup();
});

/** Run `heapcap schedules ARGS` in-process against the service; exit code and output. */
async function schedules(...args: string[]): Promise<{ code: number; out: string; err: string }> {
  const out = new PassThrough();
  const err = new PassThrough();
  let o = '';
  let e = '';
  out.on('data', (d: Buffer) => (o += d.toString()));
  err.on('data', (d: Buffer) => (e += d.toString()));
  const code = await schedulesMain(args, { HEAPCAP_API_URL: serve.url }, { stdout: out, stderr: err });
  return { code, out: o, err: e };
}

void test('create, list, pause, resume and delete from the command line', async () => {
  const created = await schedules('create', '--id', 'checkout-30m', '--selector', 'service=checkout,env=prod', '--every', '30m', '--keep-last', '48', '--reason', 'leak hunt');
  assert.equal(created.code, 0, created.err);
  const lines = created.out.split('\n');
  assert.match(lines[0]!, /^ID\s+TARGETS\s+WHEN\s+STATE\s+SOURCE\s+NEXT RUN \(UTC\)\s+LAST TURN\s+LAST CAPTURE\s+KEEP$/);
  assert.match(lines[1]!, /^checkout-30m\s+service=checkout,env=prod \(1\)\s+every 30m\s+active\s+api\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\s+.*\s+48, 30d$/);
  assert.match(created.out, /next runs: \S+, \S+, \S+/);

  // The first run of an `every` schedule is right away: the list shows its turn and capture.
  const listed = await waitFor(async () => {
    const l = await schedules('list', '--json');
    const items = (JSON.parse(l.out) as { items: { lastCapture: { status: string } | null }[] }).items;
    return items[0]?.lastCapture?.status === 'succeeded' ? items : undefined;
  }, { timeoutMs: 60_000, intervalMs: 250, what: 'the first scheduled capture' });
  assert.equal(listed.length, 1);
  const table = await schedules('list');
  assert.equal(table.code, 0);
  assert.match(table.out, /checkout-30m .* created +\S+ succeeded +48, 30d/);

  const paused = await schedules('pause', 'checkout-30m');
  assert.equal(paused.code, 0, paused.err);
  assert.match(paused.out, /checkout-30m .* paused +api +- /);
  const resumed = await schedules('resume', 'checkout-30m', '--json');
  assert.equal((JSON.parse(resumed.out) as { state: string }).state, 'active');
  const deleted = await schedules('delete', 'checkout-30m');
  assert.equal(deleted.code, 0);
  assert.match(deleted.out, /schedule checkout-30m deleted/);
  assert.match((await schedules('list')).out, /^no schedules/);
});

void test('refusals: the API names the field (exit 2); bad flags are caught before any call', async () => {
  const low = await schedules('create', '--target', 'checkout-1', '--every', '500ms');
  assert.equal(low.code, 2);
  assert.match(low.err, /^validation_failed: invalid request: body\.every: 500ms is below the minimum interval 1s \(HEAPCAP_SCHEDULE_MIN_INTERVAL\)/);
  const unknown = await schedules('create', '--target', 'nope', '--cron', '*/5 * * * *');
  assert.equal(unknown.code, 2);
  assert.match(unknown.err, /body\.target: no target "nope" in the registry/);
  const nothing = await schedules('create', '--selector', 'service=chekout', '--every', '15m');
  assert.match(nothing.err, /body\.selector: matches no registered target/);
  const both = await schedules('create', '--target', 'checkout-1');
  assert.equal(both.code, 2);
  assert.match(both.err, /give one of --every/);
  const keep = await schedules('create', '--target', 'checkout-1', '--every', '1m', '--keep-last', '0');
  assert.match(keep.err, /--keep-last takes a whole number above 0/);
  assert.equal((await schedules('pause', 'no-such')).code, 2);
  assert.match((await schedules('pause', 'no-such')).err, /^not_found: no schedule no-such/);
  assert.equal((await schedules('frobnicate')).code, 2);
  assert.equal((await schedules()).code, 2);
  assert.match((await schedules('--help')).out, /heapcap schedules create/);
});
