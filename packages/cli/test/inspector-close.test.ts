/**
 * `heapcap capture --pid` opens the target's inspector with SIGUSR1; after
 * the capture (success, failure, cancel, dry run) the port must be closed
 * again, so no local user can attach a debugger to the target. An inspector
 * that was open before heapcap came is left open. The port is probed with a
 * plain TCP connect: refused means closed.
 */
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { assertGoodArtifact, readManifests, fixturePath, freePort, runHeapcap, startNodeTarget, tmpDir, waitFor, type NodeTarget, type NodeVersion, type TmpDir } from '@heapcap/testkit';
import { EXIT } from '../src/exit-codes.ts';
import { listFiles, runCli, startCli } from './cli-harness.ts';

/** 'open' when 127.0.0.1:port accepts a TCP connection, 'refused' when it does not. */
function probe(port: number): Promise<'open' | 'refused'> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve('open');
    });
    socket.once('error', (err: NodeJS.ErrnoException) => (err.code === 'ECONNREFUSED' ? resolve('refused') : reject(err)));
  });
}

/** A heap-holder without an inspector; SIGUSR1 opens one on `port`. */
async function closedTarget(node: NodeVersion, port: number, heapMb = 5): Promise<NodeTarget> {
  // --inspect-port only says where SIGUSR1 opens the inspector: parallel tests never fight over 9229.
  return startNodeTarget({ node, script: fixturePath('heap-holder.cjs'), inspect: false, nodeFlags: [`--inspect-port=${port}`], env: { HEAP_MB: String(heapMb) } });
}

/** The target still runs JavaScript: its stdin command channel answers. */
async function assertResponsive(target: NodeTarget): Promise<void> {
  assert.equal(await target.request('ping', 'ERR ', 10_000), 'ERR ping');
}

void describe('capture --pid closes the inspector it opened', { timeout: 300_000 }, () => {
  let work: TmpDir;
  before(async () => {
    work = await tmpDir('heapcap-cli-inspector');
  });
  after(async () => {
    await work?.cleanup();
  });

  for (const node of ['system', '22'] as const) {
    void test(`Node ${node}: after a capture the port refuses connections, and the manifest says heapcap closed it`, async (t) => {
      const port = await freePort();
      const target = await closedTarget(node, port);
      t.after(() => target.kill());
      assert.equal(await probe(port), 'refused', 'no inspector before the capture');

      const res = await runCli(['--pid', String(target.pid), '--port', String(port), '--out', join(work.path, `ok-${node}`), '--json']);
      assert.equal(res.code, 0, `exit code; stderr:\n${res.stderr}`);
      // No waiting here: the CLI verified the close before it wrote the manifest.
      assert.equal(await probe(port), 'refused', 'the inspector port is closed again');
      const m = await readManifests(res.stdout);
      assert.deepEqual(m.inspector, { openedByHeapcap: true, closed: true, address: `127.0.0.1:${port}` });
      await assertGoodArtifact(m);
      await target.waitForStderr(new RegExp(`Debugger listening on ws://127\\.0\\.0\\.1:${port}/`), 5_000);
      await assertResponsive(target);

      // The target is as before: SIGUSR1 opens it again, for a dry run this time, which closes it too.
      const dry = await runCli(['--pid', String(target.pid), '--port', String(port), '--out', join(work.path, `dry-${node}`), '--dry-run']);
      assert.equal(dry.code, 0, dry.stderr);
      assert.match(dry.stdout, new RegExp(`^ {2}inspector +opened on 127\\.0\\.0\\.1:${port} for the capture \\(SIGUSR1\\), closed again$`, 'm'));
      assert.equal(await probe(port), 'refused', 'closed after the dry run');
      await assertResponsive(target);
    });
  }

  void test('an inspector that was open before the capture stays open', async (t) => {
    const port = await freePort();
    const target = await startNodeTarget({ script: fixturePath('heap-holder.cjs'), inspect: false, nodeFlags: [`--inspect=127.0.0.1:${port}`], env: { HEAP_MB: '5' } });
    t.after(() => target.kill());
    const res = await runCli(['--pid', String(target.pid), '--port', String(port), '--out', join(work.path, 'preopen'), '--json']);
    assert.equal(res.code, 0, res.stderr);
    const m = await readManifests(res.stdout);
    assert.deepEqual(m.inspector, { openedByHeapcap: false, closed: false });
    const list = (await (await fetch(`http://127.0.0.1:${port}/json/list`, { signal: AbortSignal.timeout(10_000) })).json()) as unknown[];
    assert.equal(list.length, 1, 'the inspector still answers');
  });

  void test('defect 9: --pid with a wrong --port closes the inspector SIGUSR1 opened on the target\'s own port, and says where it was', async (t) => {
    const actual = await freePort();
    const wrong = await freePort();
    const target = await closedTarget('system', actual);
    t.after(() => target.kill());
    const res = await runHeapcap(['capture', '--pid', String(target.pid), '--port', String(wrong), '--out', join(work.path, 'wrong-port')]);
    assert.equal(res.code, EXIT.target, res.stderr);
    // The inspector did open, on the target's port, not the asked one.
    await target.waitForStderr(new RegExp(`Debugger listening on ws://127\\.0\\.0\\.1:${actual}/`), 5_000);
    assert.match(res.stderr, new RegExp(`opened its inspector on 127\\.0\\.0\\.1:${actual}, not on port ${wrong}; heapcap closed it again`));
    assert.match(res.stderr, new RegExp(`--port ${actual}\\b`));
    assert.equal(await probe(actual), 'refused', 'the inspector heapcap opened is closed again');
    await assertResponsive(target);
  });

  void test('a failed capture (storage refused after the inspector opened) closes it too', async (t) => {
    const port = await freePort();
    const target = await closedTarget('system', port);
    t.after(() => target.kill());
    // The storage check runs after connect and preflight: the inspector is open by then.
    const res = await runCli(['--pid', String(target.pid), '--port', String(port), '--out', '/dev/null/heapcap']);
    assert.equal(res.code, EXIT.storage, res.stderr);
    await target.waitForStderr(new RegExp(`Debugger listening on ws://127\\.0\\.0\\.1:${port}/`), 5_000);
    assert.doesNotMatch(res.stderr, /still listening/);
    assert.equal(await probe(port), 'refused');
    await assertResponsive(target);
  });

  void test('a cancelled capture closes it too (once the target finished the snapshot it was making)', async (t) => {
    const port = await freePort();
    // ~50 MB of snapshot JSON: generation lasts long enough for the SIGINT to land in it.
    const target = await closedTarget('system', port, 30);
    t.after(() => target.kill());
    const out = join(work.path, 'cancel');
    const cli = startCli(['--pid', String(target.pid), '--port', String(port), '--out', out]);
    try {
      await waitFor(async () => (await listFiles(out)).some((f) => /(^|\/)\.[0-9A-Z]{26}\.[0-9a-f]+\.tmp$/.test(f)), {
        timeoutMs: 90_000,
        intervalMs: 5,
        what: 'the artifact temp file (the snapshot is being generated)',
      });
      process.kill(cli.pid, 'SIGINT');
      const res = await cli.done;
      assert.equal(res.code, EXIT.cancelled, res.stderr);
      assert.match(res.stderr, /^cancelled: /);
      // The target cannot act on the close request before its snapshot is done; it then closes the port.
      await waitFor(async () => (await probe(port)) === 'refused', { timeoutMs: 60_000, what: 'the inspector port to close' });
      await assertResponsive(target);
    } finally {
      cli.kill();
    }
  });
});
