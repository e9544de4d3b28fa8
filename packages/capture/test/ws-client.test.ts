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
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { describe, test } from 'node:test';
import { WebSocketServer } from 'ws';
import { waitFor } from '@heapcap/testkit';
import { WsClient, WsState } from '../src/ws-client.ts';

const GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';

/** An unmasked server frame. */
function serverFrame(opcode: number, payload: Buffer, fin = true, extra: { rsv?: boolean; masked?: boolean } = {}): Buffer {
  const len = payload.length;
  const lenBytes = len < 126 ? 0 : len < 65_536 ? 2 : 8;
  const head = Buffer.alloc(2 + lenBytes);
  head[0] = (fin ? 0x80 : 0) | (extra.rsv === true ? 0x40 : 0) | opcode;
  if (lenBytes === 0) head[1] = len;
  else if (lenBytes === 2) {
    head[1] = 126;
    head.writeUInt16BE(len, 2);
  } else {
    head[1] = 127;
    head.writeBigUInt64BE(BigInt(len), 2);
  }
  if (extra.masked === true) head[1] = (head[1] as number) | 0x80;
  return Buffer.concat([head, ...(extra.masked === true ? [Buffer.alloc(4)] : []), payload]);
}

/** A raw server: answers the upgrade (or `status`), then hands the socket to `then`. */
async function rawServer(then: (socket: Socket, received: Buffer[]) => void, status = 101): Promise<{ url: string; server: Server }> {
  const server = createServer((socket) => {
    let head = '';
    const received: Buffer[] = [];
    const onData = (d: Buffer): void => {
      head += d.toString('latin1');
      const end = head.indexOf('\r\n\r\n');
      if (end < 0) return;
      socket.off('data', onData);
      socket.on('data', (more: Buffer) => received.push(more));
      const rest = Buffer.from(head.slice(end + 4), 'latin1');
      if (rest.length > 0) received.push(rest);
      const key = /sec-websocket-key: (.*)\r\n/i.exec(head)?.[1] ?? '';
      if (status !== 101) {
        socket.end(`HTTP/1.1 ${status} Nope\r\nContent-Length: 0\r\n\r\n`);
        return;
      }
      const accept = createHash('sha1').update(key + GUID).digest('base64');
      socket.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`);
      then(socket, received);
    };
    socket.on('data', onData);
    socket.on('error', () => undefined);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { url: `ws://127.0.0.1:${(server.address() as AddressInfo).port}/x`, server };
}

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
    ['a fragmented ping', serverFrame(9, Buffer.from('x'), false), /fragmented or oversized control frame/],
    ['an unknown opcode', serverFrame(3, Buffer.from('x')), /unknown data opcode 3/],
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
