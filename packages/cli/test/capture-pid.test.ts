/**
 * `heapcap capture --pid`: a Node process started without --inspect is opened
 * with SIGUSR1 and captured; a process we may not signal, one that is not
 * Node.js and one that does not exist are refused with the right code.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmod } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { assertGoodArtifact, countObjects, fixturePath, freePort, heapHolderShape, startNodeTarget, tmpDir, waitFor, type NodeTarget, type TmpDir, readManifests } from '@heapcap/testkit';
import { EXIT } from '../src/exit-codes.ts';
import { alive, listFiles, runCli } from './cli-harness.ts';

const HEAP_MB = 10;
const NOBODY = 65534;

/** Checks the error shape every refused --pid capture shares; returns stderr. */
function assertRefused(res: { code: number | null; stderr: string }, code: string): string {
  assert.equal(res.code, EXIT.target, `exit code; stderr:\n${res.stderr}`);
  const [first, second] = res.stderr.split('\n');
  assert.ok(first?.startsWith(`${code}: `), `first stderr line: ${first}`);
  assert.match(second ?? '', /^ {2}check: \S/);
  return res.stderr;
}

void describe('capture by pid', { timeout: 180_000 }, () => {
  let work: TmpDir;
  before(async () => {
    work = await tmpDir('heapcap-cli-pid');
  });
  after(async () => {
    await work?.cleanup();
  });

  void test('a Node process started without --inspect is opened with SIGUSR1 and captured', async (t) => {
    // --inspect-port only sets where SIGUSR1 opens the inspector, so parallel tests never fight over 9229.
    const port = await freePort();
    const target: NodeTarget = await startNodeTarget({
      script: fixturePath('heap-holder.cjs'),
      inspect: false,
      nodeFlags: [`--inspect-port=${port}`],
      env: { HEAP_MB: String(HEAP_MB) },
    });
    t.after(() => target.kill());
    await assert.rejects(fetch(`http://127.0.0.1:${port}/json/list`, { signal: AbortSignal.timeout(5_000) }), 'no inspector before SIGUSR1');

    const out = join(work.path, 'ok');
    const res = await runCli(['--pid', String(target.pid), '--port', String(port), '--out', out, '--json']);
    assert.equal(res.code, 0, `exit code; stderr:\n${res.stderr}`);
    await target.waitForStderr(new RegExp(`Debugger listening on ws://127\\.0\\.0\\.1:${port}/`), 5_000);
    const m = await readManifests(res.stdout);
    assert.equal(m.target.kind, 'node-pid');
    assert.equal(m.runtime.pid, target.pid);
    const snapshot = await assertGoodArtifact(m);
    assert.equal(countObjects(snapshot, 'Order'), heapHolderShape(HEAP_MB).orders);
    assert.ok(alive(target.pid), 'the target survives its capture');
  });

  void test('a pid we may not signal → permission_denied, nothing written', async () => {
    // Run as nobody against a root-owned Node process: this test process.
    // tsx keeps a cache under TMPDIR, so nobody needs a writable one.
    // Its own directory: mkdtemp makes 0700 directories, which nobody cannot enter.
    const home = await tmpDir('heapcap-cli-nobody');
    try {
      await chmod(home.path, 0o777);
      const out = join(home.path, 'out');
      const res = await runCli(['--pid', String(process.pid), '--out', out], {
        uid: NOBODY,
        gid: NOBODY,
        env: { HOME: home.path, TMPDIR: home.path },
      });
      const stderr = assertRefused(res, 'permission_denied');
      assert.match(stderr, new RegExp(`process ${process.pid}`));
      assert.deepEqual(await listFiles(out), []);
    } finally {
      await home.cleanup();
    }
  });

  void test('a pid that is not Node.js → target_not_found, and it is not signalled', async (t) => {
    const sleeper = spawn('sleep', ['60'], { stdio: 'ignore' });
    const exited = new Promise((resolve) => sleeper.once('exit', resolve));
    t.after(async () => {
      sleeper.kill('SIGKILL');
      await exited;
    });
    const pid = sleeper.pid;
    assert.ok(pid !== undefined);
    const out = join(work.path, 'sleep');
    const stderr = assertRefused(await runCli(['--pid', String(pid), '--out', out]), 'target_not_found');
    assert.match(stderr, /"sleep", not Node\.js/);
    assert.deepEqual(await listFiles(out), []);
    // SIGUSR1 would have killed it (default action: terminate).
    await new Promise((r) => setTimeout(r, 200));
    assert.ok(alive(pid) && sleeper.exitCode === null && sleeper.signalCode === null, 'sleep is still running');
  });

  void test('a pid that does not exist → target_not_found', async () => {
    const gone = spawn('true', { stdio: 'ignore' });
    await new Promise((resolve) => gone.once('exit', resolve));
    const pid = gone.pid;
    assert.ok(pid !== undefined);
    await waitFor(() => !alive(pid), { timeoutMs: 5_000, what: `pid ${pid} to disappear` });
    const out = join(work.path, 'gone');
    const stderr = assertRefused(await runCli(['--pid', String(pid), '--out', out]), 'target_not_found');
    assert.match(stderr, new RegExp(`no process with pid ${pid}`));
    assert.deepEqual(await listFiles(out), []);
  });
});
