/**
 * Issue 25, defect 9: `kill -9` of serve during a pipe capture left its FIFO
 * directory (a 0700 directory per capture under the pipe dir). The
 * directories carry the host and pid of the process that made them; a serve
 * that starts removes those whose process is gone, and only those.
 */
import assert from 'node:assert/strict';
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fixturePath, FREE_PORT, startHeapcap, startNodeTarget, startRedis, tmpDir, waitFor } from '@heapcap/testkit';

void test('defect 9: a serve killed with SIGKILL during a pipe capture leaves its FIFO directory; the next serve removes it', async (t) => {
  const [redis, dir, target] = await Promise.all([startRedis(), tmpDir('heapcap-pipe-orphans'), startNodeTarget({ script: fixturePath('heap-holder.cjs'), env: { HEAP_MB: '60' } })]);
  t.after(async () => {
    await target.kill();
    await redis.stop();
    await dir.cleanup();
  });
  const pipes = join(dir.path, 'pipes');
  await mkdir(pipes);
  // Another live process's directory (this test's) is not touched.
  const host = hostname().replace(/[^A-Za-z0-9]/g, '_').slice(0, 40);
  const live = `heapcap-pipe-h${host}-p${process.pid}-live`;
  await mkdir(join(pipes, live));
  const targets = join(dir.path, 'targets.yaml');
  await writeFile(targets, `targets:\n  - id: big\n    kind: node\n    inspect: 127.0.0.1:${target.port}\n`);
  const env = {
    HEAPCAP_REDIS_URL: redis.url,
    HEAPCAP_TARGETS_FILE: targets,
    HEAPCAP_STORAGE: `file://${join(dir.path, 'captures')}`,
    HEAPCAP_SNAPSHOT_TRANSPORT: 'pipe',
    HEAPCAP_PIPE_DIR: pipes,
    HEAPCAP_LOG_LEVEL: 'info',
  };
  const first = await startHeapcap(['serve', '--dev'], { env: { ...env, HEAPCAP_PORT: FREE_PORT } });
  let firstAlive = true;
  t.after(async () => {
    if (firstAlive) await first.stop('SIGKILL');
  });
  const res = await fetch(`${first.url}/v1/captures`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ target: 'big' }) });
  assert.equal(res.status, 202, await res.text());
  const fifoDir = await waitFor(
    async () => {
      for (const name of await readdir(pipes)) {
        if (name !== live && (await readdir(join(pipes, name)).catch((): string[] => [])).includes('snapshot.fifo')) return name;
      }
      return undefined;
    },
    { timeoutMs: 60_000, intervalMs: 5, what: 'the capture FIFO' },
  );
  assert.match(fifoDir, new RegExp(`^heapcap-pipe-h${host}-p\\d+-`), 'named after its host and pid');
  await first.stop('SIGKILL');
  firstAlive = false;
  assert.ok((await readdir(pipes)).includes(fifoDir), 'the killed serve left its FIFO directory');

  const second = await startHeapcap(['serve', '--dev'], { env: { ...env, HEAPCAP_PORT: FREE_PORT } });
  t.after(() => second.stop('SIGKILL'));
  const line = await waitFor(() => second.stdout.lines().find((l) => l.includes('removed FIFO directories of pipe captures whose process is gone')), { timeoutMs: 30_000, what: 'the sweep log line' });
  assert.ok(line.includes(fifoDir), line);
  const left = await readdir(pipes);
  assert.ok(!left.includes(fifoDir), `swept: ${left.join(', ')}`);
  assert.ok(left.includes(live), 'a live process keeps its directory');
});
