/**
 * The settle wait after an abandoned snapshot (services/worker/src/settle.ts)
 * against what can stand in front of an inspector: a live Node target answers
 * (idle); a dead one refuses (gone); a proxy whose upstream is gone answers
 * the WebSocket upgrade with 502 or 503 (gone: before, it read as busy and the
 * worker held the target lock for the whole bound); a proxy timing out on a
 * frozen upstream answers 504 (busy, as a frozen target is).
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, test } from 'node:test';
import { fixturePath, startNodeTarget } from '@heapcap/testkit';
import { settleTarget } from '../src/settle.ts';

const servers: Server[] = [];
after(() => {
  for (const s of servers) s.close();
});

/** An HTTP server answering every WebSocket upgrade with `status`, as a proxy does; its ws:// URL. */
async function proxyAnswering(status: number): Promise<string> {
  const server = createServer((_req, res) => res.writeHead(status).end());
  server.on('upgrade', (_req, socket) => {
    // An upgrade's socket has no error listener of Node's, and the client drops the connection as soon as it has read
    // the answer (a reset when its bytes are still unread): without this the reset is an uncaught ECONNRESET here.
    socket.on('error', () => undefined);
    socket.end(`HTTP/1.1 ${status} Proxy Says So\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`);
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `ws://127.0.0.1:${(server.address() as AddressInfo).port}/devtools/page/x`;
}

// The bound: long enough that "busy" (the whole bound) and "gone" (the first answer) cannot be confused.
const BOUND_MS = 3_000;

for (const status of [502, 503]) {
  void test(`a proxy answering the upgrade with ${status}: gone at the first answer, not busy for the bound`, async () => {
    const r = await settleTarget({ kind: 'node', ws: await proxyAnswering(status) }, BOUND_MS);
    assert.equal(r.outcome, 'gone');
    assert.ok(r.waitedMs < BOUND_MS, `answered before the bound: ${r.waitedMs} ms`);
  });
}

void test('a proxy answering the upgrade with 504 (its frozen upstream timed out): busy until the bound', async () => {
  const r = await settleTarget({ kind: 'node', ws: await proxyAnswering(504) }, 1_000);
  assert.equal(r.outcome, 'busy');
  assert.ok(r.waitedMs >= 1_000, `waited the bound: ${r.waitedMs} ms`);
});

void test('a live target is idle; once killed it is gone', async () => {
  const target = await startNodeTarget({ script: fixturePath('heap-holder.cjs'), env: { HEAP_MB: '1' } });
  const endpoint = { kind: 'node' as const, inspect: `127.0.0.1:${target.port}` };
  try {
    assert.equal((await settleTarget(endpoint, 30_000)).outcome, 'idle');
  } finally {
    await target.kill('SIGKILL');
  }
  assert.equal((await settleTarget(endpoint, 30_000)).outcome, 'gone');
});
