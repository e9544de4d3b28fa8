/**
 * The minimal WebSocket client under the CDP transport, against a raw TCP
 * server (the seam we own) that answers the upgrade and then writes crafted
 * frames: split at every byte, fragmented, with 16- and 64-bit lengths, pings,
 * the server's close, and the violations that must drop the connection.
 * A `ws` server checks the client's own frames (masked, as RFC 6455 requires).
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { describe, test } from 'node:test';
import { WebSocketServer } from 'ws';
import { waitFor } from '@heapcap/testkit';
import { CdpClosedError } from '../src/cdp-transport.ts';
import { CdpSession } from '../src/session.ts';
import { CaptureError } from '../src/errors.ts';
import { WsClient, WsError, WsState } from '../src/ws-client.ts';
import { GUID, rawServer, serverFrame } from './ws-raw-server.ts';

/** Collects messages (copied: the client reuses its buffer) until the socket closes. */
function collect(client: WsClient): { messages: { text: boolean; data: string }[]; closed: Promise<void> } {
  const messages: { text: boolean; data: string }[] = [];
  let onClose: () => void = () => undefined;
  const closed = new Promise<void>((resolve) => (onClose = resolve));
  client.listen((data, text) => messages.push({ text, data: data.toString('latin1') }), onClose);
  return { messages, closed };
}

/** Writes `bytes` one byte per write, each as its own TCP segment as far as Nagle allows. */
async function dribble(socket: Socket, bytes: Buffer): Promise<void> {
  socket.setNoDelay(true);
  for (let i = 0; i < bytes.length; i++) {
    await new Promise<void>((resolve) => socket.write(bytes.subarray(i, i + 1), () => resolve()));
  }
}

void describe('WsClient', { timeout: 60_000 }, () => {
  void test('messages split at every byte, fragmented, with 7-, 16- and 64-bit lengths arrive whole and in order', async () => {
    const big = Buffer.alloc(70_000, 'b');
    const mid = Buffer.alloc(300, 'm');
    const stream = Buffer.concat([
      serverFrame(1, Buffer.from('hello')),
      serverFrame(1, Buffer.from('frag-'), false),
      serverFrame(9, Buffer.from('ping!')), // a control frame between fragments
      serverFrame(0, Buffer.from('ment'), false),
      serverFrame(0, Buffer.from('ed'), true),
      serverFrame(2, mid),
      serverFrame(1, Buffer.alloc(0)),
    ]);
    let serverSide: Socket | undefined;
    const { url, server } = await rawServer((socket) => {
      serverSide = socket;
      void dribble(socket, stream).then(() => socket.write(serverFrame(1, big)));
    });
    try {
      const client = await WsClient.open(url, { maxPayload: 1 << 20 });
      const { messages } = collect(client);
      await waitFor(() => messages.length >= 5, { timeoutMs: 30_000, intervalMs: 10, what: 'five messages' });
      assert.deepEqual(messages, [
        { text: true, data: 'hello' },
        { text: true, data: 'frag-mented' },
        { text: false, data: mid.toString('latin1') },
        { text: true, data: '' },
        { text: true, data: big.toString('latin1') },
      ]);
      client.terminate();
      assert.ok(serverSide !== undefined);
    } finally {
      server.close();
    }
  });

  void test('a ping is answered with a pong carrying its payload; the client masks every frame it sends', async () => {
    const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
    await once(wss, 'listening');
    const pongs: string[] = [];
    const texts: string[] = [];
    wss.on('connection', (ws) => {
      ws.on('pong', (d: Buffer) => pongs.push(d.toString()));
      // `ws` refuses unmasked client frames (close 1002), so a text arriving proves the mask.
      ws.on('message', (d: Buffer) => {
        texts.push(d.toString());
        ws.ping('are you there');
      });
    });
    try {
      const client = await WsClient.open(`ws://127.0.0.1:${(wss.address() as AddressInfo).port}/`, { maxPayload: 1 << 20 });
      client.send(JSON.stringify({ id: 1, method: 'x', payload: 'é'.repeat(40_000) }));
      client.listen(() => undefined, () => undefined);
      await waitFor(() => pongs.length > 0, { timeoutMs: 30_000, intervalMs: 10, what: 'a pong' });
      assert.deepEqual(pongs, ['are you there']);
      assert.equal(JSON.parse(texts[0] ?? '{}').payload, 'é'.repeat(40_000));
      client.terminate();
    } finally {
      for (const c of wss.clients) c.terminate();
      wss.close();
    }
  });

  void test("the server's close is answered with the same code, then the socket closes", async () => {
    let answered: Buffer | undefined;
    const { url, server } = await rawServer((socket, received) => {
      socket.write(serverFrame(8, Buffer.from([0x03, 0xe9])));
      socket.on('end', () => {
        answered = Buffer.concat(received);
        socket.end();
      });
    });
    try {
      const client = await WsClient.open(url, { maxPayload: 1024 });
      const { closed } = collect(client);
      await closed;
      assert.equal(client.readyState, WsState.Closed);
      assert.ok(answered !== undefined && answered.length === 8, 'a masked close frame with a 2-byte code');
      assert.equal((answered[0] as number) & 0x0f, 8);
      const mask = answered.subarray(2, 6);
      assert.deepEqual([(answered[6] as number) ^ (mask[0] as number), (answered[7] as number) ^ (mask[1] as number)], [0x03, 0xe9]);
    } finally {
      server.close();
    }
  });

  for (const [what, bytes, reason] of [
    ['a masked frame', serverFrame(1, Buffer.from('x'), true, { masked: true }), /masked frame/],
    ['RSV bits', serverFrame(1, Buffer.from('x'), true, { rsv: true }), /RSV bits/],
    ['a message over maxPayload', serverFrame(1, Buffer.alloc(2_000, 'x')), /larger than 1024 bytes/],
    ['a continuation without a message', serverFrame(0, Buffer.from('x')), /continuation frame without a message/],
    ['a fragmented ping', serverFrame(9, Buffer.from('x'), false), /fragmented control frame/],
    ['an unknown opcode', serverFrame(3, Buffer.from('x')), /unknown opcode 3/],
  ] as const) {
    void test(`${what} drops the connection, and nothing after it is delivered`, async () => {
      const { url, server } = await rawServer((socket) => socket.write(Buffer.concat([bytes, serverFrame(1, Buffer.from('after'))])));
      try {
        const client = await WsClient.open(url, { maxPayload: 1024 });
        const { messages, closed } = collect(client);
        await closed;
        assert.deepEqual(messages, []);
        assert.match(client.dropReason ?? '', reason);
      } finally {
        server.close();
      }
    });
  }

  void test('a refused upgrade rejects open() with the status; frames in the same packet as the head are kept', async () => {
    const refused = await rawServer(() => undefined, 404);
    try {
      await assert.rejects(WsClient.open(refused.url, { maxPayload: 1024 }), /Unexpected server response: 404/);
    } finally {
      refused.server.close();
    }
    // The head and a first frame in one write.
    const server = createServer((socket) => {
      socket.once('data', (d: Buffer) => {
        const key = /sec-websocket-key: (.*)\r\n/i.exec(d.toString('latin1'))?.[1] ?? '';
        const accept = createHash('sha1').update(key + GUID).digest('base64');
        socket.write(Buffer.concat([Buffer.from(`HTTP/1.1 101 OK\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`), serverFrame(1, Buffer.from('early'))]));
      });
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    try {
      const client = await WsClient.open(`ws://127.0.0.1:${(server.address() as AddressInfo).port}/`, { maxPayload: 1024 });
      // The early frame was parsed before anyone listened: kept, and delivered by listen().
      await new Promise((resolve) => setImmediate(resolve));
      const { messages } = collect(client);
      assert.deepEqual(messages, [{ text: true, data: 'early' }]);
      client.terminate();
    } finally {
      server.close();
    }
  });
});

/** A close frame's body: a 2-byte code and a reason. */
function closeBody(code: number, reason: Buffer = Buffer.alloc(0)): Buffer {
  const b = Buffer.alloc(2);
  b.writeUInt16BE(code);
  return Buffer.concat([b, reason]);
}

/** Opens a client on a raw server that writes `bytes`, and waits for the close. */
async function outcomeOf(bytes: Buffer): Promise<{ client: WsClient; messages: { text: boolean; data: string }[] }> {
  const { url, server } = await rawServer((socket) => socket.write(bytes));
  try {
    const client = await WsClient.open(url, { maxPayload: 1024 });
    const { messages, closed } = collect(client);
    await closed;
    return { client, messages };
  } finally {
    server.close();
  }
}

void describe('issue 25 defect 10: the WebSocket client holds to what ws 8 accepts', { timeout: 60_000 }, () => {
  // RFC 6455 §7.4: 1004, 1005, 1006 and 1015 never come on the wire; <1000, 1016-2999 are reserved; ≥5000 undefined.
  for (const code of [0, 999, 1004, 1005, 1006, 1015, 1016, 2999, 5000, 65535]) {
    void test(`defect 10: a close frame with code ${code} is a protocol error (1002)`, async () => {
      const { client, messages } = await outcomeOf(Buffer.concat([serverFrame(8, closeBody(code)), serverFrame(1, Buffer.from('after'))]));
      assert.deepEqual(messages, []);
      assert.equal(client.dropStatus, 1002);
      assert.match(client.dropReason ?? '', new RegExp(`invalid code ${code}`));
    });
  }

  for (const [what, frame, status, reason] of [
    ['a close frame with a 1-byte body', serverFrame(8, Buffer.from([0x03])), 1002, /1-byte body/],
    ['a close frame over 125 bytes', serverFrame(8, closeBody(1000, Buffer.alloc(124, 'r'))), 1002, /oversized control frame/],
    ['a ping over 125 bytes', serverFrame(9, Buffer.alloc(126)), 1002, /oversized control frame/],
    ['a close reason that is not UTF-8', serverFrame(8, closeBody(1000, Buffer.from([0xc3, 0x28]))), 1007, /reason is not valid UTF-8/],
    ['a text message that is not UTF-8', serverFrame(1, Buffer.from([0x61, 0xff, 0x62])), 1007, /text message that is not valid UTF-8/],
  ] as const) {
    void test(`defect 10: ${what} drops the connection with status ${status}`, async () => {
      const { client, messages } = await outcomeOf(Buffer.concat([frame, serverFrame(1, Buffer.from('after'))]));
      assert.deepEqual(messages, []);
      assert.equal(client.dropStatus, status);
      assert.match(client.dropReason ?? '', reason);
    });
  }

  void test('defect 10: valid close codes and a UTF-8 reason are kept; nothing after the close frame is read', async () => {
    for (const [code, reason] of [
      [1000, ''],
      [1001, 'going away'],
      [1014, 'é'],
      [3000, 'lib'],
      [4999, 'app ✓'],
    ] as const) {
      const { client, messages } = await outcomeOf(Buffer.concat([serverFrame(1, Buffer.from('before')), serverFrame(8, closeBody(code, Buffer.from(reason))), serverFrame(1, Buffer.from('after'))]));
      assert.deepEqual(messages, [{ text: true, data: 'before' }], `code ${code}`);
      assert.equal(client.dropReason, undefined);
      assert.equal(client.closeCode, code);
      assert.equal(client.closeReason, reason);
    }
    const empty = await outcomeOf(serverFrame(8, Buffer.alloc(0)));
    assert.equal(empty.client.closeCode, 1005, 'a close frame without a code');
  });

  void test('defect 10: a header that breaks the rules is refused on its first two bytes, even if the stream ends there', async () => {
    // A ping announcing a 16-bit length: `ws` fails it before the length arrives; so must we.
    const { client } = await outcomeOf(Buffer.from([0x89, 126]));
    assert.equal(client.dropStatus, 1002);
  });

  void test('defect 10: a refused connection keeps its errno (ECONNREFUSED) in the WsError and in the capture error', async () => {
    const { server } = await rawServer(() => undefined);
    const port = (server.address() as AddressInfo).port;
    server.close();
    await once(server, 'close');
    const url = `ws://127.0.0.1:${port}/x`;
    const err = await WsClient.open(url, { maxPayload: 1024 }).then(
      () => assert.fail('opened'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof WsError);
    assert.equal(err.code, 'ECONNREFUSED');
    assert.equal((err.cause as NodeJS.ErrnoException).code, 'ECONNREFUSED');
    assert.match(err.message, /ECONNREFUSED/);
    const session = await CdpSession.connect(url, { commandTimeoutMs: 1_000, connectTimeoutMs: 5_000 }).then(
      () => assert.fail('connected'),
      (e: unknown) => e,
    );
    assert.ok(session instanceof CaptureError);
    assert.equal(session.code, 'target_unreachable');
    assert.match(session.message, /ECONNREFUSED/);
    assert.equal(session.details?.errno, 'ECONNREFUSED');
    assert.ok(session.cause instanceof WsError && session.cause.code === 'ECONNREFUSED');
  });

  void test('defect 10: a connection reset after the upgrade keeps ECONNRESET in the target_closed error a pending command gets', async () => {
    let reset: (() => void) | undefined;
    const { url, server } = await rawServer((socket) => {
      reset = () => socket.resetAndDestroy();
    });
    try {
      const session = await CdpSession.connect(url, { commandTimeoutMs: 10_000, connectTimeoutMs: 5_000 });
      const pending = session.send('Runtime.evaluate', { expression: '1' });
      await waitFor(() => reset !== undefined, { timeoutMs: 5_000, intervalMs: 5, what: 'the server side' });
      reset?.();
      const err = await pending.then(
        () => assert.fail('answered'),
        (e: unknown) => e,
      );
      assert.ok(err instanceof CaptureError);
      assert.equal(err.code, 'target_closed');
      assert.match(err.message, /ECONNRESET/);
      assert.equal(err.details?.errno, 'ECONNRESET');
      const closed = err.cause;
      assert.ok(closed instanceof CdpClosedError && closed.code === 'ECONNRESET');
      assert.ok(closed.cause instanceof WsError && (closed.cause.cause as NodeJS.ErrnoException).code === 'ECONNRESET');
    } finally {
      server.close();
    }
  });
});
