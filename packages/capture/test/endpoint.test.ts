/**
 * Endpoint discovery against real inspectors on awkward addresses: a port the
 * Fetch standard blocks (discovery must not use fetch) and a host name (Node's
 * inspector answers 400 to a Host header that is not an IP or `localhost`).
 */
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { chmod, copyFile, readFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { hostname } from 'node:os';
import { after, before, describe, test } from 'node:test';
import { fixturePath, freePort, startNodeTarget, startStubInspector, tmpDir, waitFor, type NodeTarget, type StubInspector } from '@heapcap/testkit';
import { runCli } from './run-cli.ts';
import { resolveEndpoint } from '../src/index.ts';

/** Ports fetch() refuses ("bad ports") that an inspector may legally use. */
const FETCH_BLOCKED_PORTS = [6000, 6665, 6666, 6667, 6668, 6669, 6697, 10080, 4190, 6679];

async function firstFreePort(ports: number[]): Promise<number> {
  for (const port of ports) {
    const free = await new Promise<boolean>((resolve) => {
      const srv = createServer();
      srv.once('error', () => resolve(false));
      srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
    });
    if (free) return port;
  }
  throw new Error(`none of ${ports.join(', ')} is free`);
}

void describe('endpoint discovery', () => {
  let target: NodeTarget;
  let port: number;

  before(async () => {
    port = await firstFreePort(FETCH_BLOCKED_PORTS);
    // inspect: false and our own flag, so the inspector listens on that exact port.
    target = await startNodeTarget({ script: fixturePath('heap-holder.cjs'), inspect: false, nodeFlags: [`--inspect=127.0.0.1:${port}`], env: { HEAP_MB: '1' } });
  });
  after(async () => {
    await target.kill();
  });

  void test('an inspector on a port fetch() refuses is found', async () => {
    const resolved = await resolveEndpoint({ kind: 'node', inspect: `127.0.0.1:${port}` }, { timeoutMs: 5_000 });
    assert.match(resolved.wsUrl, new RegExp(`^ws://127\\.0\\.0\\.1:${port}/`));
  });

  void test('an inspector named by host name is found (resolved to its address first)', async () => {
    const resolved = await resolveEndpoint({ kind: 'node', inspect: `${hostname()}:${port}` }, { timeoutMs: 5_000 });
    assert.match(resolved.wsUrl, new RegExp(`^ws://[\\d.]+:${port}/`));
  });
});

void describe('defect 6: the WebSocket is pinned to the registered host:port', () => {
  let decoy: StubInspector;
  let hostile: StubInspector;

  before(async () => {
    decoy = await startStubInspector();
    // An inspector whose /json/list sends the worker to another inspector (or any internal service).
    hostile = await startStubInspector({ listedWsUrl: `ws://127.0.0.1:${decoy.port}/t/default` });
  });
  after(async () => {
    await hostile.close();
    await decoy.close();
  });

  void test('defect 6: a /json/list webSocketDebuggerUrl naming another host:port is not followed (node)', async () => {
    const resolved = await resolveEndpoint({ kind: 'node', inspect: `127.0.0.1:${hostile.port}` }, { timeoutMs: 5_000 });
    assert.equal(resolved.wsUrl, `ws://127.0.0.1:${hostile.port}/t/default`);
  });

  void test('defect 6: the same for a browser target (chromium)', async (t) => {
    const tab = await startStubInspector({ listedType: 'page', listedWsUrl: `ws://127.0.0.1:${decoy.port}/t/default` });
    t.after(() => tab.close());
    const resolved = await resolveEndpoint({ kind: 'chromium', browser: `localhost:${tab.port}` }, { timeoutMs: 5_000 });
    assert.equal(resolved.wsUrl, `ws://localhost:${tab.port}/t/default`);
  });

  void test('defect 6: heapcap capture --node against it snapshots the registered inspector, never the one it names', async () => {
    const out = await tmpDir('heapcap-pinned');
    try {
      const run = await runCli(['--node', `127.0.0.1:${hostile.port}`, '--out', out.path, '--json'], 60_000);
      assert.equal(run.code, 0, run.stderr);
      assert.equal(hostile.stats().snapshots, 1);
      assert.equal(decoy.stats().connections, 0, 'nothing connected to the inspector /json/list named');
    } finally {
      await out.cleanup();
    }
  });

  void test('defect 6: a listed URL that is not ws:// is refused with target_not_found', async () => {
    const odd = await startStubInspector({ listedWsUrl: 'http://169.254.169.254/latest/meta-data' });
    try {
      await assert.rejects(resolveEndpoint({ kind: 'node', inspect: `127.0.0.1:${odd.port}` }, { timeoutMs: 5_000 }), (err: Error & { code?: string }) => err.code === 'target_not_found' && /not ws:\/\//.test(err.message));
    } finally {
      await odd.close();
    }
  });
});

void describe('defect 7: node-pid refuses a process that does not catch SIGUSR1', () => {
  void test('defect 7: a copy of sleep named node is refused with target_not_node and stays alive', async (t) => {
    const dir = await tmpDir('heapcap-fake-node');
    t.after(() => dir.cleanup());
    const fake = join(dir.path, 'node');
    await copyFile(execFileSync('sh', ['-c', 'command -v sleep'], { encoding: 'utf8' }).trim(), fake);
    await chmod(fake, 0o755);
    const child = spawn(fake, ['300'], { stdio: 'ignore' });
    const exited = new Promise<NodeJS.Signals | null>((resolve) => child.once('exit', (_code, signal) => resolve(signal)));
    t.after(() => child.kill('SIGKILL'));
    // Its exe is named node: the name check alone let it through.
    await waitFor(async () => (await readFile(`/proc/${child.pid}/cmdline`, 'utf8')).startsWith(fake), { timeoutMs: 5_000, what: 'the fake node to exec' });
    await assert.rejects(resolveEndpoint({ kind: 'node-pid', pid: child.pid!, port: 9 }, { timeoutMs: 2_000, pidInspectorWaitMs: 1_000 }), (err: Error & { code?: string }) => {
      assert.equal(err.code, 'target_not_node');
      assert.match(err.message, /does not catch SIGUSR1/);
      return true;
    });
    // Still alive: nothing was sent. (Before, SIGUSR1 killed it at once and the refusal came only after
    // the 1 s wait for an inspector, so its exit had been seen by now.)
    assert.equal(child.exitCode, null);
    assert.equal(child.signalCode, null);
    process.kill(child.pid!, 0);
    child.kill('SIGKILL');
    assert.equal(await exited, 'SIGKILL');
  });

  void test('defect 7: a real Node.js process passes the check and is opened with SIGUSR1', async (t) => {
    const port = await freePort();
    const target = await startNodeTarget({ script: fixturePath('heap-holder.cjs'), inspect: false, nodeFlags: [`--inspect-port=127.0.0.1:${port}`], env: { HEAP_MB: '1' } });
    t.after(() => target.kill());
    const resolved = await resolveEndpoint({ kind: 'node-pid', pid: target.pid, port }, { timeoutMs: 5_000 });
    assert.match(resolved.wsUrl, new RegExp(`^ws://127\\.0\\.0\\.1:${port}/`));
  });
});
