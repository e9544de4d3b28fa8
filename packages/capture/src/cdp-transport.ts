/**
 * The CDP wire: JSON-RPC over one WebSocket (ws-client.ts), plus a fast path
 * for snapshot chunks. `CdpSession` (session.ts) is the typed API on top of
 * it, with deadlines and typed errors; nothing else should talk to the socket.
 *
 * Why not chrome-remote-interface: it pins `ws` 7, which validates UTF-8 in
 * JavaScript unless an optional native addon is installed (the bundled CLI
 * has none), and it hands every message over as a string that it parses whole
 * and emits three times. A snapshot is ~5,000-10,000 such messages of
 * 100 KiB-1 MiB. Here a chunk frame is recognised by its bytes and only its
 * string is parsed (chunk-frame.ts), in a message buffer the WebSocket client
 * reuses; every other message is parsed whole (the client has checked its
 * UTF-8). We used no other part of it (protocol download, domain helpers).
 */
import { EventEmitter } from 'node:events';
import { decodeChunkFrame, isChunkFrame } from './chunk-frame.ts';
import { WsClient, WsState, type WsError } from './ws-client.ts';

/**
 * The socket closed (or never opened) while a command was pending. When the
 * socket failed, `code` is its errno name (ECONNRESET…) and `cause` its error.
 */
export class CdpClosedError extends Error {
  override readonly name = 'CdpClosedError';
  readonly code: string | undefined;
  constructor(message: string, cause?: WsError) {
    super(message, cause === undefined ? undefined : { cause });
    this.code = cause?.code;
  }
}

/** The target answered a command with a protocol error (`{code, message, data}`). */
export class CdpProtocolError extends Error {
  override readonly name = 'CdpProtocolError';
  readonly code: number | undefined;
  readonly data: unknown;
  constructor(error: { code?: unknown; message?: unknown; data?: unknown }) {
    const message = typeof error.message === 'string' ? error.message : 'protocol error';
    super(error.data === undefined ? message : `${message} (${String(error.data)})`);
    this.code = typeof error.code === 'number' ? error.code : undefined;
    this.data = error.data;
  }
}

interface Pending {
  resolve: (result: unknown) => void;
  reject: (err: Error) => void;
}

/**
 * How long `close()` waits for the peer to answer our close frame before it
 * drops the TCP connection. A frozen target (SIGSTOP, a 30 s GC) never answers,
 * and `ws` would otherwise keep the socket, and the process, for 30 s.
 */
const CLOSE_GRACE_MS = 1_000;

/**
 * Largest message accepted. Chunks are 100 KiB (V8 ≤ 12) or 1 MiB (later V8)
 * of snapshot text, escaped; nothing we ask for comes near this.
 */
const MAX_PAYLOAD = 64 * 1024 * 1024;

/**
 * One CDP connection. Emits each protocol event under its method name with its
 * params, and `disconnect` once when the socket closes (whoever closed it),
 * with the CdpClosedError that says why.
 */
export class CdpTransport extends EventEmitter {
  readonly #ws: WsClient;
  readonly #pending = new Map<number, Pending>();
  #nextId = 1;
  #closed = false;
  #chunkSink: ((bytes: Buffer) => void) | undefined;
  #dropReason: string | undefined;

  private constructor(ws: WsClient) {
    super();
    this.#ws = ws;
    // After open, socket errors are followed by the close; that is where pending calls fail.
    ws.listen(
      (data, isText) => {
        if (isText) this.#onMessage(data);
      },
      () => this.#onClose(),
    );
  }

  /**
   * Open a WebSocket to `url`; rejects with the socket's error (refused, 404, bad
   * handshake), or when the upgrade takes longer than `timeoutMs`.
   */
  static async open(url: string, timeoutMs?: number): Promise<CdpTransport> {
    // The inspector does not compress; no extension is asked for.
    return new CdpTransport(await WsClient.open(url, { maxPayload: MAX_PAYLOAD, timeoutMs }));
  }

  /**
   * Deliver `HeapProfiler.addHeapSnapshotChunk` as the snapshot's bytes instead
   * of as an event (undefined: back to events). The Buffer is valid only during
   * the call (it is reused for the next chunk): copy what you keep.
   */
  setChunkSink(sink: ((bytes: Buffer) => void) | undefined): void {
    this.#chunkSink = sink;
  }

  /** Send a command; resolves with its result, rejects with CdpProtocolError or CdpClosedError. */
  send(method: string, params: object = {}): Promise<unknown> {
    if (this.#closed || this.#ws.readyState !== WsState.Open) {
      return Promise.reject(new CdpClosedError(`the WebSocket is closed; ${method} was not sent`));
    }
    const id = this.#nextId++;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      this.#ws.send(JSON.stringify({ id, method, params }), (err) => {
        if (err === undefined || err === null) return;
        this.#pending.delete(id);
        reject(new CdpClosedError(`sending ${method} failed: ${err.message}`));
      });
    });
  }

  /** Close the socket; resolves once it is closed (at most CLOSE_GRACE_MS after the close frame). */
  close(): Promise<void> {
    const ws = this.#ws;
    if (ws.readyState === WsState.Closed) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(() => ws.terminate(), CLOSE_GRACE_MS);
      this.once('disconnect', () => {
        clearTimeout(timer);
        resolve();
      });
      ws.close();
    });
  }

  #onMessage(data: Buffer): void {
    // Dropped: `ws` may still hand over what it had already read; none of it counts.
    if (this.#dropReason !== undefined) return;
    const sink = this.#chunkSink;
    if (sink !== undefined && isChunkFrame(data)) {
      // Decoded into memory reused for the next chunk (the sink copies what it keeps).
      const bytes = decodeChunkFrame(data);
      if (bytes !== undefined) {
        sink(bytes);
        return;
      }
    }
    let message: { id?: unknown; method?: unknown; params?: unknown; result?: unknown; error?: unknown };
    try {
      message = JSON.parse(data.toString('utf8')) as typeof message;
    } catch {
      // It may have been a snapshot chunk: never carry on without it.
      this.#drop('the target sent a message that is not valid JSON');
      return;
    }
    if (typeof message.id === 'number') {
      const pending = this.#pending.get(message.id);
      if (pending === undefined) return;
      this.#pending.delete(message.id);
      if (typeof message.error === 'object' && message.error !== null) pending.reject(new CdpProtocolError(message.error));
      else pending.resolve(message.result ?? {});
    } else if (typeof message.method === 'string') {
      // A chunk in a shape the fast path does not recognise still goes to the sink.
      if (sink !== undefined && message.method === 'HeapProfiler.addHeapSnapshotChunk') {
        const chunk = (message.params as { chunk?: unknown } | undefined)?.chunk;
        if (typeof chunk === 'string') sink(Buffer.from(chunk, 'utf8'));
        else this.#drop('the target sent a snapshot chunk without its text');
        return;
      }
      this.emit(message.method, message.params);
    }
  }

  /** Destroy the socket now, without a close handshake (a frozen peer never answers one). */
  terminate(): void {
    this.#ws.terminate();
  }

  /** Drops the connection: what follows on it cannot be trusted to be complete. */
  #drop(reason: string): void {
    this.#dropReason ??= reason;
    this.#chunkSink = undefined;
    this.#ws.terminate();
  }

  /** Why the connection was dropped, by this side or by the WebSocket client. */
  get #why(): string | undefined {
    return this.#dropReason ?? this.#ws.dropReason;
  }

  #onClose(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#chunkSink = undefined;
    const why = this.#why;
    const failed = this.#ws.error;
    const err =
      why !== undefined
        ? new CdpClosedError(`the connection was dropped: ${why}`)
        : failed !== undefined
          ? new CdpClosedError(`the WebSocket failed: ${failed.message}`, failed)
          : new CdpClosedError('the WebSocket closed');
    for (const pending of this.#pending.values()) pending.reject(err);
    this.#pending.clear();
    this.emit('disconnect', err);
  }
}
