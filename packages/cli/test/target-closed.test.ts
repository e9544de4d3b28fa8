/**
 * The target dies while the CLI is receiving its snapshot: exit 3 with
 * `target_closed`, no artifact, no temp file under --out, no spill file.
 */
import assert from 'node:assert/strict';
import { mkdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fixturePath, startNodeTarget, tmpDir, waitFor, type NodeTarget, type TmpDir } from '@heapcap/testkit';
import { EXIT } from '../src/exit-codes.ts';
import { listFiles, startCli } from './cli-harness.ts';

void describe('target killed mid-serialization (CLI)', { timeout: 180_000 }, () => {
  let target: NodeTarget;
  let work: TmpDir;
  before(async () => {
    // ~85 MB of snapshot JSON: serialization lasts seconds, plenty of time to notice it started.
    target = await startNodeTarget({ node: '22', script: fixturePath('heap-holder.cjs'), env: { HEAP_MB: '50' } });
    work = await tmpDir('heapcap-cli-killed');
  });
  after(async () => {
    await target?.kill();
    await work?.cleanup();
  });

  void test('exit 3, target_closed, nothing left under --out or in the spill dir', async () => {
    const out = join(work.path, 'out');
    const spill = join(work.path, 'spill');
    await mkdir(spill);
    // A 1 MiB ceiling: the gzip sink falls behind the target, so the spill file is in use when the target dies.
    const cli = startCli(['--node', `127.0.0.1:${target.port}`, '--out', out, '--spill-dir', spill, '--memory-ceiling', '1'], { timeoutMs: 150_000 });
    try {
      // The sink opens its dot-prefixed .tmp file before generation; gzip output
      // only reaches it once snapshot bytes flow, i.e. once serialization started.
      await waitFor(
        async () => {
          for (const f of await listFiles(out)) {
            // `.<captureId>.<random>.tmp`, not the storage check's `.heapcap-probe.*.tmp`.
            if (/(^|\/)\.[0-9A-Z]{26}\.[0-9a-f]+\.tmp$/.test(f) && (await stat(join(out, f))).size > 0) return f;
          }
          return undefined;
        },
        { timeoutMs: 120_000, intervalMs: 5, what: 'the artifact temp file to receive bytes' },
      );
      process.kill(target.pid, 'SIGKILL');
      const res = await cli.done;
      assert.equal(res.code, EXIT.target, `exit code; stderr:\n${res.stderr}`);
      assert.match(res.stderr, /^target_closed: .*\(during serialize\)\n {2}check: \S/);
      assert.deepEqual(await listFiles(out), [], 'no artifact, no temp file');
      assert.deepEqual(await listFiles(spill), [], 'no spill file');
    } finally {
      cli.kill();
    }
  });
});
