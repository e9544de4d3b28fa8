/**
 * The CDP transport against a scripted inspector (a `ws` server at the seam we
 * own: it answers commands and sends frames the way an inspector does) and,
 * for a peer that never answers, a real Node target stopped with SIGSTOP.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { readFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { WebSocketServer, type WebSocket } from 'ws';
import { fixturePath, startNodeTarget, waitFor, type NodeTarget } from '@heapcap/testkit';
import { CdpClosedError, CdpProtocolError, CdpTransport } from '../src/cdp-transport.ts';

/** A scripted inspector: `script(message, socket)` answers each command the client sends. */
async function fakeInspector(script: (msg: { id: number; method: string; params: unknown }, ws: WebSocket) => void): Promise<{ url: string; sockets: Set<WebSocket>; close(): Promise<void> }> {
  const server = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await once(server, 'listening');
  const sockets = new Set<WebSocket>();
  server.on('connection', (ws) => {
    sockets.add(ws);
    ws.on('message', (data: Buffer) => script(JSON.parse(data.toString('utf8')) as { id: number; method: string; params: unknown }, ws));
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `ws://127.0.0.1:${port}/fake`,
    sockets,
    close: async () => {
      for (const ws of sockets) ws.terminate();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

const chunkFrame = (chunk: string): string => JSON.stringify({ method: 'HeapProfiler.addHeapSnapshotChunk', params: { chunk } });

void describe('CdpTransport', { timeout: 60_000 }, () => {
  void test('commands resolve with their result; protocol errors keep code, message and data', async () => {
    const inspector = await fakeInspector((msg, ws) => {
      if (msg.method === 'Runtime.evaluate') ws.send(JSON.stringify({ id: msg.id, result: { result: { type: 'number', value: 42 } } }));
      else ws.send(JSON.stringify({ id: msg.id, error: { code: -32601, message: `'${msg.method}' wasn't found`, data: 'detail' } }));
    });
    const t = await CdpTransport.open(inspector.url);
    try {
      assert.deepEqual(await t.send('Runtime.evaluate', { expression: '6*7' }), { result: { type: 'number', value: 42 } });
      const err = await t.send('Nope.nothing').then(
        () => assert.fail('resolved'),
        (e: unknown) => e,
      );
      assert.ok(err instanceof CdpProtocolError);
      assert.equal(err.code, -32601);
      assert.equal(err.message, "'Nope.nothing' wasn't found (detail)");
    } finally {
      await t.close();
      await inspector.close();
    }
  });

  void test('chunks go to the sink as bytes, by the fast path or not; without a sink they are events', async () => {
    const text = '{"snapshot":{"x":"é\\"q"},\n"nodes":[1,2]}';
    const inspector = await fakeInspector((msg, ws) => {
      ws.send(chunkFrame(text.slice(0, 20)));
      // Same event, another shape (extra param): must still reach the sink, whole and in order.
      ws.send(JSON.stringify({ method: 'HeapProfiler.addHeapSnapshotChunk', params: { chunk: text.slice(20), extra: 'x' } }));
      ws.send(JSON.stringify({ method: 'HeapProfiler.reportHeapSnapshotProgress', params: { done: 1, total: 1 } }));
      ws.send(JSON.stringify({ id: msg.id, result: {} }));
    });
    const t = await CdpTransport.open(inspector.url);
    try {
      const bytes: Buffer[] = [];
      const progress: unknown[] = [];
      t.on('HeapProfiler.reportHeapSnapshotProgress', (p: unknown) => progress.push(p));
      // The transport reuses its buffer: keep copies.
      t.setChunkSink((b) => bytes.push(Buffer.from(b)));
      await t.send('HeapProfiler.takeHeapSnapshot');
      assert.deepEqual(Buffer.concat(bytes), Buffer.from(text, 'utf8'));
      assert.deepEqual(progress, [{ done: 1, total: 1 }]);

      t.setChunkSink(undefined);
      const events: unknown[] = [];
      t.on('HeapProfiler.addHeapSnapshotChunk', (p: unknown) => events.push(p));
      await t.send('HeapProfiler.takeHeapSnapshot');
      assert.deepEqual(events, [{ chunk: text.slice(0, 20) }, { chunk: text.slice(20), extra: 'x' }]);
    } finally {
      await t.close();
      await inspector.close();
    }
  });

  void test('the peer going away rejects pending commands with CdpClosedError and emits disconnect once', async () => {
    const inspector = await fakeInspector((_msg, ws) => ws.terminate());
    const t = await CdpTransport.open(inspector.url);
    let disconnects = 0;
    t.on('disconnect', () => (disconnects += 1));
    try {
      await assert.rejects(t.send('HeapProfiler.takeHeapSnapshot'), CdpClosedError);
      await waitFor(() => disconnects === 1, { timeoutMs: 5_000, what: 'disconnect' });
      await assert.rejects(t.send('Runtime.evaluate'), CdpClosedError);
      await t.close();
      assert.equal(disconnects, 1);
    } finally {
      await inspector.close();
    }
  });

  void test('a message that is not JSON drops the connection: nothing after it is delivered', async () => {
    const inspector = await fakeInspector((msg, ws) => {
      ws.send(chunkFrame('first'));
      ws.send('{"method":"HeapProfiler.addHeapSnapshotChunk","params":{"chunk":"broken\\u00"}}');
      ws.send(chunkFrame('after'));
      ws.send(JSON.stringify({ id: msg.id, result: {} }));
    });
    const t = await CdpTransport.open(inspector.url);
    try {
      const got: string[] = [];
      t.setChunkSink((b) => got.push(b.toString('utf8')));
      await assert.rejects(t.send('HeapProfiler.takeHeapSnapshot'), (err: unknown) => err instanceof CdpClosedError && /not valid JSON/.test(err.message));
      assert.deepEqual(got, ['first']);
    } finally {
      await t.close();
      await inspector.close();
    }
  });

  void test('open() rejects when nothing listens', async () => {
    const inspector = await fakeInspector(() => undefined);
    const url = inspector.url;
    await inspector.close();
    await assert.rejects(CdpTransport.open(url), /ECONNREFUSED/);
  });

  void describe('a frozen target (SIGSTOP)', () => {
    let target: NodeTarget;
    before(async () => {
      target = await startNodeTarget({ node: '22', script: fixturePath('heap-holder.cjs'), env: { HEAP_MB: '1' } });
    });
    after(async () => {
      if (target !== undefined) {
        process.kill(target.pid, 'SIGCONT');
        await target.kill();
      }
    });

    void test('close() returns within its grace period although the peer never answers the close frame', async () => {
      const t = await CdpTransport.open(target.wsUrl ?? assert.fail('no inspector URL'));
      process.kill(target.pid, 'SIGSTOP');
      await waitFor(async () => (await readFile(`/proc/${target.pid}/stat`, 'utf8')).split(') ')[1]?.startsWith('T') === true, { timeoutMs: 5_000, what: 'the target to be stopped' });
      const t0 = performance.now();
      await t.close();
      const took = performance.now() - t0;
      // 1 s of grace; ws alone would wait 30 s for the peer's close frame.
      assert.ok(took < 5_000, `close took ${Math.round(took)} ms`);
      await assert.rejects(t.send('Runtime.evaluate'), CdpClosedError);
    });
  });
});
