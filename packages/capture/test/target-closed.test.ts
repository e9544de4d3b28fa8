/**
 * The engine, in process, when the target dies on the first snapshot chunk:
 * the capture rejects with `target_closed` in the serialize phase, the
 * consumer's stream errors (it never ends cleanly, so no sink can complete a
 * partial artifact), and the spill file is neither on disk nor held open.
 */
import assert from 'node:assert/strict';
import { readdir, readlink } from 'node:fs/promises';
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { after, before, describe, test } from 'node:test';
import { fixturePath, startCdpProxy, startNodeTarget, tmpDir, type NodeTarget, type TmpDir } from '@heapcap/testkit';
import { captureHeapSnapshot, isCaptureError, type CaptureError } from '../src/index.ts';

/** Paths of this process's open file descriptors (a deleted spill file shows as "… (deleted)"). */
async function openFiles(): Promise<string[]> {
  const fds = await readdir('/proc/self/fd');
  const paths = await Promise.all(fds.map((fd) => readlink(`/proc/self/fd/${fd}`).catch(() => '')));
  return paths;
}

void describe('target killed mid-serialization (engine)', { timeout: 180_000 }, () => {
  let target: NodeTarget;
  let spill: TmpDir;
  before(async () => {
    target = await startNodeTarget({ node: '22', script: fixturePath('heap-holder.cjs'), env: { HEAP_MB: '50' } });
    spill = await tmpDir('heapcap-engine-killed-spill');
  });
  after(async () => {
    await target?.kill();
    await spill?.cleanup();
  });

  void test('target_closed during serialize; the consumer sees the error; no spill file remains', async () => {
    let killedAt: { bytes: number; spilledBytes: number } | undefined;
    let consumerBytes = 0;
    let consumerError: unknown;
    let consumerEnded = false;
    const capturing = captureHeapSnapshot(
      {
        endpoint: { kind: 'node', inspect: `127.0.0.1:${target.port}` },
        // Below one chunk (100 KiB): every chunk goes through the spill file.
        memoryCeilingBytes: 64 * 1024,
        spillDir: spill.path,
        onProgress: (p) => {
          if (p.phase === 'serialize' && killedAt === undefined) {
            killedAt = { bytes: p.bytes, spilledBytes: p.spilledBytes };
            process.kill(target.pid, 'SIGKILL');
          }
        },
      },
      async (snapshot) => {
        try {
          await pipeline(
            snapshot,
            new Writable({
              write(chunk: Buffer, _enc, done) {
                consumerBytes += chunk.length;
                done();
              },
            }),
          );
          consumerEnded = true;
        } catch (err) {
          consumerError = err;
          throw err;
        }
      },
    );
    const error = await capturing.then(
      () => assert.fail('the capture of a killed target succeeded'),
      (err: unknown) => err,
    );
    assert.ok(isCaptureError(error, 'target_closed'), `got ${String(error)}`);
    assert.equal((error as CaptureError).phase, 'serialize');
    assert.ok(killedAt !== undefined && killedAt.spilledBytes > 0, 'the spill file was in use when the target died');

    assert.equal(consumerEnded, false, 'the consumer never saw a clean end');
    assert.ok(isCaptureError(consumerError, 'target_closed'), `consumer got ${String(consumerError)}`);
    assert.ok(consumerBytes < 80_000_000, `the consumer got only part of the snapshot (${consumerBytes} bytes)`);

    assert.deepEqual(await readdir(spill.path), [], 'nothing in the spill dir');
    const held = (await openFiles()).filter((p) => p.includes('heapcap-spill'));
    assert.deepEqual(held, [], 'the spill file descriptor was closed');
    assert.notEqual((await target.waitExit(10_000)).signal, null);
  });
});

void describe('target closed during preflight (engine)', { timeout: 60_000 }, () => {
  let target: NodeTarget;
  before(async () => {
    target = await startNodeTarget({ script: fixturePath('heap-holder.cjs'), env: { HEAP_MB: '2' } });
  });
  after(async () => {
    await target?.kill();
  });

  // Preflight sends Runtime.getHeapUsage beside its Runtime.evaluate. When the
  // connection dropped before either answered, the second rejection had no
  // handler: an unhandled rejection, which ends a Node.js worker process.
  void test('target_closed in preflight, and no unhandled rejection from the commands in flight', async () => {
    assert.ok(target.wsUrl !== undefined);
    const proxy = await startCdpProxy(target.wsUrl, { closeOn: 'Runtime.evaluate' });
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown): void => {
      unhandled.push(reason);
    };
    process.on('unhandledRejection', onUnhandled);
    try {
      const error = await captureHeapSnapshot({ endpoint: { kind: 'node', ws: proxy.url } }, () => assert.fail('no snapshot was expected')).then(
        () => assert.fail('the capture succeeded through a dropped connection'),
        (err: unknown) => err,
      );
      assert.ok(isCaptureError(error, 'target_closed'), `got ${String(error)}`);
      assert.equal((error as CaptureError).phase, 'preflight');
      assert.equal(proxy.calls('Runtime.getHeapUsage'), 1, 'getHeapUsage was in flight when the connection dropped');
      // Rejections without a handler are reported after the microtask queue drains: give them a turn of the event loop.
      await new Promise((resolve) => setImmediate(resolve));
      await new Promise((resolve) => setImmediate(resolve));
      assert.deepEqual(unhandled, []);
    } finally {
      process.off('unhandledRejection', onUnhandled);
      await proxy.close();
    }
  });
});
