/**
 * Issue 25, defect 9: a HEAPCAP_TARGETS_FILE pointing at a missing file
 * silently removed the file's targets from the registry. Now an explicitly
 * set file that is not there refuses the start (the default path missing is
 * still an empty file), and a file that goes away while serve runs keeps the
 * targets last read from it when the registry must be re-synced (Redis lost
 * its data), with an error in the log.
 */
import assert from 'node:assert/strict';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { FREE_PORT, freePort, runHeapcap, startDevServe, startHeapcap, startRedis, tmpDir, waitFor, type RedisServer, type TmpDir } from '@heapcap/testkit';

let redis: RedisServer;
let dir: TmpDir;

before(async () => {
  [redis, dir] = await Promise.all([startRedis(), tmpDir('heapcap-targets-file')]);
});
after(async () => {
  await redis?.stop();
  await dir?.cleanup();
});

async function targetIds(url: string): Promise<string[]> {
  const res = await fetch(`${url}/v1/targets`, { signal: AbortSignal.timeout(5_000) });
  return ((await res.json()) as { items: { target: { id: string } }[] }).items.map((x) => x.target.id);
}

void test('defect 9: an explicitly set HEAPCAP_TARGETS_FILE that does not exist refuses the start (exit 2, invalid_config naming it); the default path missing is fine', async () => {
  const missing = join(dir.path, 'nope.targets.yaml');
  const res = await runHeapcap(['serve', '--dev'], { env: { HEAPCAP_REDIS_URL: redis.url, HEAPCAP_PORT: String(await freePort()), HEAPCAP_TARGETS_FILE: missing } });
  assert.equal(res.code, 2, res.stderr);
  assert.match(res.stderr, new RegExp(`^invalid_config: HEAPCAP_TARGETS_FILE: cannot read the targets file ${missing.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}: ENOENT`, 'm'));

  // No HEAPCAP_TARGETS_FILE, no ./heapcap.targets.yaml: an empty registry file, as before.
  const empty = join(dir.path, 'empty-cwd');
  await mkdir(empty);
  const serve = await startHeapcap(['serve', '--dev'], { cwd: empty, env: { HEAPCAP_REDIS_URL: redis.url, HEAPCAP_PORT: FREE_PORT, HEAPCAP_STORAGE: `file://${join(empty, 'captures')}` } });
  try {
    assert.deepEqual(await targetIds(serve.url), []);
  } finally {
    assert.equal(await serve.stop(), 0);
  }
});

void test('defect 9: a targets file that disappears while serve runs keeps its targets when Redis loses its data, and logs an error', async (t) => {
  const work = join(dir.path, 'gone');
  await mkdir(work);
  await writeFile(join(work, 'targets.yaml'), `targets:\n  - id: filed\n    kind: node\n    inspect: 127.0.0.1:${await freePort()}\n`);
  const serve = await startDevServe(work, redis.url);
  t.after(() => serve.stop());
  assert.deepEqual(await targetIds(serve.url), ['filed']);

  await rm(join(work, 'targets.yaml'));
  await redis.cli('FLUSHALL');
  // The keeper notices the lost registry (on its interval) and re-syncs: from what it last read, the file being gone.
  const line = await waitFor(() => serve.stdout.lines().find((l) => l.includes('the targets file cannot be used')), { timeoutMs: 30_000, what: 'the error line' });
  assert.match(line, /"level":50/);
  assert.match(line, /cannot be used \(missing\): keeping the 1 file targets last read from it/);
  await waitFor(async () => (await targetIds(serve.url)).includes('filed'), { timeoutMs: 10_000, what: 'the file target back in the registry' });
});
