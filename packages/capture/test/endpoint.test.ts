/**
 * Endpoint discovery against real inspectors on awkward addresses: a port the
 * Fetch standard blocks (discovery must not use fetch) and a host name (Node's
 * inspector answers 400 to a Host header that is not an IP or `localhost`).
 */
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { hostname } from 'node:os';
import { after, before, describe, test } from 'node:test';
import { fixturePath, startNodeTarget, type NodeTarget } from '@heapcap/testkit';
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
