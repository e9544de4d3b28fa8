/**
 * A minimal WebSocket client (RFC 6455) for the inspector's CDP socket: text
 * and binary messages, fragmentation, ping/pong, the close handshake; no
 * extensions (the inspector offers none; `permessage-deflate` is not asked for).
 *
 * Why not `ws` (8, which the transport used before): a snapshot is 5,000-10,000
 * messages of 100 KiB-1 MiB. `ws` reads the socket into a fresh 64 KiB Buffer
 * per read and assembles every message that spans reads (all of them) in a
 * fresh Buffer of its own; that garbage and its collection were most of what
 * the CDP path cost beyond the decode (1.6 of 7.0 CPU-s per GB, of which GC
 * 0.6). Here a plain `ws://` socket reads into one reused 64 KiB buffer
 * (`onread`) and each message is assembled in one reused buffer, grown to the
 * largest message seen: after the first chunks the hot path allocates nothing.
 * `wss://` goes through TLS with ordinary reads (no `onread` there).
 *
 * The message handed to `onMessage` is valid only during the call (the buffer
 * is reused): copy what you keep.
 *
 * What the peer sends is held to what `ws` 8 accepts (test/ws-client-fuzz.test.ts
 * compares the two on random frame sequences): RSV bits, opcodes, masked server
 * frames, control frames (≤ 125 bytes, not fragmented, a close of 0 or ≥ 2
 * bytes with a valid code and a UTF-8 reason), the message size, and the
 * UTF-8 of text messages (`isUtf8`, native: 3-5 µs per 100 KiB message,
 * 30-50 ms per GB of snapshot, under 1% of the CDP path's CPU). A violation
 * drops the connection with the status `ws` would send (`dropStatus`:
 * 1002, 1007, 1009); unlike `ws` no close frame is sent first, the socket is
 * destroyed (the inspector does not care, and a peer that breaks the
 * protocol gets no more of our time).
 */
import { isUtf8 } from 'node:buffer';
import { createHash, randomBytes, randomFillSync } from 'node:crypto';
import { connect as netConnect, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';

const GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';
const READ_BYTES = 64 * 1024;
/** An HTTP response head bigger than this is not an inspector's handshake. */
const MAX_HEAD_BYTES = 16 * 1024;

export const WsState = {
  Connecting: 0,
  Open: 1,
  Closing: 2,
  Closed: 3,
} as const;
export type WsState = (typeof WsState)[keyof typeof WsState];

const OP_CONTINUATION = 0x0;
const OP_TEXT = 0x1;
const OP_BINARY = 0x2;
const OP_CLOSE = 0x8;
const OP_PING = 0x9;
const OP_PONG = 0xa;

/** RFC 6455 §7.4.1 status codes used when the peer breaks the protocol. */
const STATUS_PROTOCOL_ERROR = 1002;
const STATUS_INVALID_DATA = 1007;
const STATUS_TOO_BIG = 1009;
/** `closeCode` when the close frame had no code (§7.1.5), and when none came (§7.1.5: abnormal closure). */
const STATUS_NO_CODE = 1005;
const STATUS_ABNORMAL = 1006;

export interface WsOpenOptions {
  /** Largest message accepted; a bigger one drops the connection. */
  maxPayload: number;
  /** Deadline for the TCP connect and the HTTP upgrade. */
  timeoutMs?: number;
  /**
   * `wss://` only: the certificate authorities to trust instead of Node's
   * defaults. Without it Node's roots plus NODE_EXTRA_CA_CERTS are trusted
   * (how a deployment adds its own CA).
   */
  ca?: string | Buffer | (string | Buffer)[];
}

/**
 * The socket failed (refused, reset, TLS) or the upgrade was refused. `code`
 * is the socket's errno name (ECONNREFUSED, ECONNRESET, …) or Node's TLS
 * code, also in the message; `cause` is the socket's own error.
 */
export class WsError extends Error {
  override readonly name = 'WsError';
  readonly code: string | undefined;
  /** The HTTP status the server answered the upgrade with, when it answered one other than 101. */
  readonly httpStatus: number | undefined;
  constructor(message: string, options: { cause?: unknown; code?: string | undefined; httpStatus?: number } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = options.code;
    this.httpStatus = options.httpStatus;
  }

  /** Wraps a socket error, keeping its errno in `code` and in the message. */
  static fromSocket(err: Error): WsError {
    const code = (err as NodeJS.ErrnoException).code;
    const message = code === undefined || err.message.includes(code) ? err.message : `${err.message} (${code})`;
    return new WsError(message, { cause: err, code });
  }
}

/** One WebSocket connection, client side. */
export class WsClient {
  #socket: Socket;
  #state: WsState = WsState.Connecting;
  readonly #maxPayload: number;
  #onMessage: ((data: Buffer, isText: boolean) => void) | undefined;
  #onClose: (() => void) | undefined;
  /** What came before `listen()` (frames in the same packet as the upgrade's head): copies, delivered by `listen()`. */
  #early: { data: Buffer; isText: boolean }[] = [];
  /** Why the connection was dropped by this side, if it was (a protocol violation). */
  dropReason: string | undefined;
  /** The status `ws` would have closed with for that violation (1002 protocol, 1007 bad UTF-8, 1009 too big). */
  dropStatus: number | undefined;
  /** The socket's error after the upgrade (ECONNRESET…), if it failed. */
  error: WsError | undefined;
  /** The code of the peer's close frame: 1005 when it had none, 1006 when no close frame came. */
  closeCode = STATUS_ABNORMAL;
  /** The reason in the peer's close frame (UTF-8, checked). */
  closeReason = '';
  /** A close frame came: nothing after it is read (RFC 6455 §5.5.1). */
  #closeReceived = false;

  // Frame parsing state, carried across reads.
  #head = Buffer.alloc(14);
  #headLen = 0;
  #headNeed = 2;
  #opcode = 0;
  #fin = false;
  #remaining = 0;
  #inPayload = false;
  // The message being assembled (data frames), and the current control frame.
  #message = Buffer.alloc(0);
  #messageLen = 0;
  #messageOpcode = -1;
  #control = Buffer.alloc(125);
  #controlLen = 0;

  private constructor(socket: Socket, maxPayload: number) {
    this.#socket = socket;
    this.#maxPayload = maxPayload;
  }

  get readyState(): WsState {
    return this.#state;
  }

  /**
   * Where messages go (`data` is valid only during the call: copy what you
   * keep) and who hears the close (once, whoever closed it). Whatever came
   * before this call is delivered now, in order.
   */
  listen(onMessage: (data: Buffer, isText: boolean) => void, onClose: () => void): void {
    this.#onMessage = onMessage;
    this.#onClose = onClose;
    const early = this.#early;
    this.#early = [];
    for (const m of early) onMessage(m.data, m.isText);
    if (this.#state === WsState.Closed) onClose();
  }

  /** Connects and upgrades; rejects with the socket's error or the server's refusal. */
  static open(url: string, options: WsOpenOptions): Promise<WsClient> {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      return Promise.reject(new WsError(`invalid WebSocket URL: ${url}`));
    }
    const secure = parsed.protocol === 'wss:';
    if (!secure && parsed.protocol !== 'ws:') return Promise.reject(new WsError(`not a ws:// or wss:// URL: ${url}`));
    const host = parsed.hostname.startsWith('[') ? parsed.hostname.slice(1, -1) : parsed.hostname;
    const port = parsed.port === '' ? (secure ? 443 : 80) : Number(parsed.port);
    const key = randomBytes(16).toString('base64');
    const headers = [
      `GET ${parsed.pathname}${parsed.search} HTTP/1.1`,
      `Host: ${parsed.host}`,
      'Upgrade: websocket',
      'Connection: Upgrade',
      `Sec-WebSocket-Key: ${key}`,
      'Sec-WebSocket-Version: 13',
    ];
    if (parsed.username !== '' || parsed.password !== '') {
      const auth = `${decodeURIComponent(parsed.username)}:${decodeURIComponent(parsed.password)}`;
      headers.push(`Authorization: Basic ${Buffer.from(auth).toString('base64')}`);
    }
    const request = `${headers.join('\r\n')}\r\n\r\n`;

    return new Promise((resolve, reject) => {
      let client: WsClient | undefined;
      let head: Buffer[] = [];
      let headBytes = 0;
      let settled = false;
      const fail = (err: Error): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        socket.destroy();
        reject(err);
      };
      // Until the upgrade: collect the response head; after it, frames.
      const onBytes = (buf: Buffer, n: number): void => {
        if (client !== undefined) {
          client.#parse(buf, 0, n);
          return;
        }
        head.push(Buffer.from(buf.subarray(0, n)));
        headBytes += n;
        const all = Buffer.concat(head);
        const end = all.indexOf('\r\n\r\n');
        if (end < 0) {
          if (headBytes > MAX_HEAD_BYTES) fail(new WsError('the server sent an HTTP response head larger than 16 KiB instead of upgrading'));
          return;
        }
        head = [];
        const problem = checkUpgrade(all.toString('latin1', 0, end), key);
        if (problem !== undefined) return fail(new WsError(problem.message, { httpStatus: problem.httpStatus }));
        settled = true;
        clearTimeout(timer);
        const opened = new WsClient(socket, options.maxPayload);
        client = opened;
        opened.#state = WsState.Open;
        socket.on('error', (err) => (opened.error ??= WsError.fromSocket(err)));
        socket.on('close', () => opened.#closed());
        resolve(opened);
        // Frames that came with the head.
        if (end + 4 < all.length) opened.#parse(all, end + 4, all.length);
      };
      // One buffer for every read (`onread`): no Buffer per read.
      const readBuffer = Buffer.allocUnsafeSlow(READ_BYTES);
      const socket: Socket = secure
        ? tlsConnect({ host, port, servername: isIp(host) ? '' : host, ALPNProtocols: ['http/1.1'], ...(options.ca === undefined ? {} : { ca: options.ca }) })
        : netConnect({ host, port, onread: { buffer: readBuffer, callback: (n: number) => (onBytes(readBuffer, n), true) } });
      if (secure) socket.on('data', (data: Buffer) => onBytes(data, data.length));
      socket.setNoDelay(true);
      socket.once(secure ? 'secureConnect' : 'connect', () => socket.write(request));
      socket.on('error', (err) => fail(WsError.fromSocket(err)));
      socket.on('close', () => fail(new WsError('the server closed the connection before the WebSocket upgrade')));
      const timer = setTimeout(() => fail(new WsError(`the WebSocket upgrade took longer than ${options.timeoutMs ?? 30_000} ms`)), options.timeoutMs ?? 30_000);
      timer.unref();
    });
  }

  /** Sends a text message; `done` gets the socket's write error, if any. */
  send(text: string, done?: (err?: Error | null) => void): void {
    if (this.#state !== WsState.Open) {
      done?.(new Error('the WebSocket is not open'));
      return;
    }
    this.#socket.write(frame(OP_TEXT, Buffer.from(text, 'utf8')), done);
  }

  /** Starts the close handshake (code 1000); the socket closes when the peer answers or goes away. */
  close(): void {
    if (this.#state === WsState.Connecting || this.#state === WsState.Open) {
      this.#state = WsState.Closing;
      this.#socket.write(frame(OP_CLOSE, Buffer.from([0x03, 0xe8])));
    }
  }

  /** Destroys the socket now, without a handshake. */
  terminate(): void {
    this.#socket.destroy();
  }

  #closed(): void {
    if (this.#state === WsState.Closed) return;
    this.#state = WsState.Closed;
    this.#onClose?.();
  }

  /** Parses frames in `buf[from, to)`, carrying partial headers and payloads across calls. */
  #parse(buf: Buffer, from: number, to: number): void {
    let i = from;
    while (i < to && !this.#closeReceived && this.#state !== WsState.Closed && !this.#socket.destroyed) {
      if (!this.#inPayload) {
        const take = Math.min(this.#headNeed - this.#headLen, to - i);
        buf.copy(this.#head, this.#headLen, i, i + take);
        this.#headLen += take;
        i += take;
        if (this.#headLen < this.#headNeed) return;
        if (this.#headNeed === 2) {
          // Checked before any extended length arrives, as `ws` does: a stream that ends there is still a violation.
          if (!this.#info()) return;
          // The 7-bit length says whether 2 or 8 bytes of extended length follow.
          const len7 = (this.#head[1] as number) & 0x7f;
          if (len7 >= 126) {
            this.#headNeed = len7 === 126 ? 4 : 10;
            continue;
          }
        }
        if (!this.#header()) return;
        if (!this.#inPayload) this.#frameDone();
        continue;
      }
      const take = Math.min(this.#remaining, to - i);
      if (this.#opcode >= OP_CLOSE) {
        buf.copy(this.#control, this.#controlLen, i, i + take);
        this.#controlLen += take;
      } else {
        buf.copy(this.#message, this.#messageLen, i, i + take);
        this.#messageLen += take;
      }
      this.#remaining -= take;
      i += take;
      if (this.#remaining === 0) this.#frameDone();
    }
  }

  /** Checks a frame's first two bytes (bits, opcode, control frame rules); false when the connection was dropped. */
  #info(): boolean {
    const b0 = this.#head[0] as number;
    const b1 = this.#head[1] as number;
    if ((b0 & 0x70) !== 0) return this.#fail('a frame with RSV bits set (no extension was negotiated)', STATUS_PROTOCOL_ERROR);
    const opcode = b0 & 0x0f;
    const len7 = b1 & 0x7f;
    if (opcode === OP_CONTINUATION) {
      if (this.#messageOpcode < 0) return this.#fail('a continuation frame without a message', STATUS_PROTOCOL_ERROR);
    } else if (opcode === OP_TEXT || opcode === OP_BINARY) {
      if (this.#messageOpcode >= 0) return this.#fail('a new message inside a fragmented one', STATUS_PROTOCOL_ERROR);
    } else if (opcode === OP_CLOSE || opcode === OP_PING || opcode === OP_PONG) {
      if ((b0 & 0x80) === 0) return this.#fail('a fragmented control frame', STATUS_PROTOCOL_ERROR);
      if (len7 > 125) return this.#fail('an oversized control frame (over 125 bytes)', STATUS_PROTOCOL_ERROR);
      // §5.5.1: a close body is empty or starts with a 2-byte code.
      if (opcode === OP_CLOSE && len7 === 1) return this.#fail('a close frame with a 1-byte body', STATUS_PROTOCOL_ERROR);
    } else return this.#fail(`an unknown opcode ${opcode}`, STATUS_PROTOCOL_ERROR);
    if ((b1 & 0x80) !== 0) return this.#fail('a masked frame', STATUS_PROTOCOL_ERROR);
    return true;
  }

  /** Reads the complete header in `#head` (already checked by `#info`); false when the connection was dropped. */
  #header(): boolean {
    const h = this.#head;
    const b0 = h[0] as number;
    this.#headLen = 0;
    this.#headNeed = 2;
    const opcode = b0 & 0x0f;
    const len7 = (h[1] as number) & 0x7f;
    let length: number;
    if (len7 === 126) length = h.readUInt16BE(2);
    else if (len7 === 127) {
      const big = h.readBigUInt64BE(2);
      if (big > BigInt(this.#maxPayload)) return this.#fail(`a message larger than ${this.#maxPayload} bytes`, STATUS_TOO_BIG);
      length = Number(big);
    } else length = len7;
    if (opcode >= OP_CLOSE) this.#controlLen = 0;
    else {
      if (opcode !== OP_CONTINUATION) {
        this.#messageOpcode = opcode;
        this.#messageLen = 0;
      }
      const total = this.#messageLen + length;
      if (total > this.#maxPayload) return this.#fail(`a message larger than ${this.#maxPayload} bytes`, STATUS_TOO_BIG);
      // Grown to the largest message seen (100 KiB chunks on V8 ≤ 12, 1 MiB on later V8), then reused.
      if (total > this.#message.length) {
        const grown = Buffer.allocUnsafeSlow(Math.max(total, Math.min(this.#maxPayload, this.#message.length * 2)));
        this.#message.copy(grown, 0, 0, this.#messageLen);
        this.#message = grown;
      }
    }
    this.#opcode = opcode;
    this.#fin = (b0 & 0x80) !== 0;
    this.#remaining = length;
    this.#inPayload = length > 0;
    return true;
  }

  /** A frame's payload is complete. */
  #frameDone(): void {
    this.#inPayload = false;
    const opcode = this.#opcode;
    if (opcode === OP_PING) {
      if (this.#state === WsState.Open) this.#socket.write(frame(OP_PONG, Buffer.from(this.#control.subarray(0, this.#controlLen))));
      return;
    }
    if (opcode === OP_PONG) return;
    if (opcode === OP_CLOSE) {
      this.#peerClosed();
      return;
    }
    if (!this.#fin) return;
    const isText = this.#messageOpcode === OP_TEXT;
    this.#messageOpcode = -1;
    const data = this.#message.subarray(0, this.#messageLen);
    // §8.1: a text message that is not UTF-8 fails the connection (checked whole, as `ws` does: fragments may split a character).
    if (isText && !isUtf8(data)) {
      this.#fail('a text message that is not valid UTF-8', STATUS_INVALID_DATA);
      return;
    }
    if (this.#onMessage === undefined) this.#early.push({ data: Buffer.from(data), isText });
    else this.#onMessage(data, isText);
  }

  /** The peer's close frame (in `#control`): checked, answered with its code, then the TCP connection ends. */
  #peerClosed(): void {
    const body = this.#control.subarray(0, this.#controlLen);
    let code = STATUS_NO_CODE;
    let reason = '';
    if (body.length >= 2) {
      code = body.readUInt16BE(0);
      if (!isValidCloseCode(code)) {
        this.#fail(`a close frame with the invalid code ${code}`, STATUS_PROTOCOL_ERROR);
        return;
      }
      const text = body.subarray(2);
      if (!isUtf8(text)) {
        this.#fail('a close frame whose reason is not valid UTF-8', STATUS_INVALID_DATA);
        return;
      }
      reason = text.toString('utf8');
    }
    this.#closeReceived = true;
    this.closeCode = code;
    this.closeReason = reason;
    if (this.#state === WsState.Open) this.#socket.write(frame(OP_CLOSE, Buffer.from(body.subarray(0, Math.min(2, body.length)))));
    this.#state = WsState.Closing;
    this.#socket.end();
  }

  /** Drops the connection for a protocol violation by the peer. */
  #fail(reason: string, status: number): false {
    if (this.dropReason === undefined) {
      this.dropReason = `the server sent ${reason}`;
      this.dropStatus = status;
    }
    this.#socket.destroy();
    return false;
  }
}

/**
 * A close code the peer may send (RFC 6455 §7.4, the same set as `ws`): 1000-1014
 * except 1004 (reserved), 1005 and 1006 (never on the wire); 3000-4999
 * (libraries, applications). 1015 and 1016-2999 are reserved.
 */
function isValidCloseCode(code: number): boolean {
  return (code >= 1000 && code <= 1014 && code !== 1004 && code !== 1005 && code !== 1006) || (code >= 3000 && code <= 4999);
}

/** A masked client frame (RFC 6455 5.3: every client frame is masked). */
function frame(opcode: number, payload: Buffer): Buffer {
  const len = payload.length;
  const extra = len < 126 ? 0 : len < 65_536 ? 2 : 8;
  const out = Buffer.allocUnsafe(2 + extra + 4 + len);
  out[0] = 0x80 | opcode;
  if (extra === 0) out[1] = 0x80 | len;
  else if (extra === 2) {
    out[1] = 0x80 | 126;
    out.writeUInt16BE(len, 2);
  } else {
    out[1] = 0x80 | 127;
    out.writeBigUInt64BE(BigInt(len), 2);
  }
  const maskAt = 2 + extra;
  randomFillSync(out, maskAt, 4);
  for (let k = 0; k < len; k++) out[maskAt + 4 + k] = (payload[k] as number) ^ (out[maskAt + (k & 3)] as number);
  return out;
}

/** Why the response head is not a valid upgrade (with the HTTP status when it was not 101), or undefined when it is. */
function checkUpgrade(head: string, key: string): { message: string; httpStatus?: number } | undefined {
  const lines = head.split('\r\n');
  const status = /^HTTP\/1\.[01] (\d{3})/.exec(lines[0] ?? '');
  if (status === null) return { message: `the server answered the WebSocket upgrade with something that is not HTTP: ${JSON.stringify((lines[0] ?? '').slice(0, 80))}` };
  if (status[1] !== '101') return { message: `Unexpected server response: ${status[1]}`, httpStatus: Number(status[1]) };
  const fields = new Map<string, string>();
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(':');
    if (colon > 0) fields.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
  }
  if (fields.get('upgrade')?.toLowerCase() !== 'websocket') return { message: 'the server did not upgrade to websocket (Upgrade header)' };
  const expected = createHash('sha1').update(key + GUID).digest('base64');
  if (fields.get('sec-websocket-accept') !== expected) return { message: 'the server sent a wrong Sec-WebSocket-Accept' };
  if (fields.has('sec-websocket-extensions')) return { message: 'the server enabled a WebSocket extension that was not asked for' };
  return undefined;
}

function isIp(host: string): boolean {
  return /^[\d.]+$/.test(host) || host.includes(':');
}
