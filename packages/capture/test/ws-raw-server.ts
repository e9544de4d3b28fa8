/**
 * A raw WebSocket server for the client's tests (the seam we own): it answers
 * the upgrade by hand and then writes whatever bytes a test crafts, valid or not.
 */
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';

export const GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';

/** A server frame, as crafted as a test needs it. */
export interface FrameSpec {
  opcode: number;
  payload: Buffer;
  fin?: boolean;
  rsv?: number;
  masked?: boolean;
  /** Force the 16- or 64-bit length encoding (RFC 6455 does not require the shortest; neither does `ws`). */
  lenBytes?: 0 | 2 | 8;
  /** A raw 64-bit length (for lengths no payload is sent for). */
  rawLength?: bigint;
}

/** The bytes of a frame (a masked one gets the mask key 0: its payload is as is). */
export function encodeFrame(f: FrameSpec): Buffer {
  const len = f.payload.length;
  const lenBytes = f.rawLength !== undefined ? 8 : (f.lenBytes ?? (len < 126 ? 0 : len < 65_536 ? 2 : 8));
  const head = Buffer.alloc(2 + lenBytes + (f.masked === true ? 4 : 0));
  head[0] = (f.fin === false ? 0 : 0x80) | (f.rsv ?? 0) | f.opcode;
  if (lenBytes === 0) head[1] = len;
  else if (lenBytes === 2) {
    head[1] = 126;
    head.writeUInt16BE(len, 2);
  } else {
    head[1] = 127;
    head.writeBigUInt64BE(f.rawLength ?? BigInt(len), 2);
  }
  if (f.masked === true) head[1] = (head[1] as number) | 0x80; // mask key 0: the payload is as is
  return Buffer.concat([head, f.payload]);
}

/** A server frame, unmasked unless asked (the short form the tests use). */
export function serverFrame(opcode: number, payload: Buffer, fin = true, extra: { rsv?: boolean; masked?: boolean } = {}): Buffer {
  return encodeFrame({ opcode, payload, fin, rsv: extra.rsv === true ? 0x40 : 0, masked: extra.masked === true });
}

/** A raw server: answers the upgrade (or `status`), then hands the socket to `then`. */
export async function rawServer(then: (socket: Socket, received: Buffer[]) => void, status = 101): Promise<{ url: string; server: Server }> {
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
