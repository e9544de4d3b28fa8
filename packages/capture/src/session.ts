/**
 * A typed CDP session over our own transport (cdp-transport.ts: our own WebSocket client, ws-client.ts, and a
 * fast path for snapshot chunks).
 *
 * Every command has a deadline. When the socket closes (target died, or we
 * closed it) every pending command and event wait is rejected with a typed
 * error, so nothing hangs. Listeners are owned: `on()` returns the function
 * that removes exactly that listener.
 */
import type { ProtocolMapping } from 'devtools-protocol/types/protocol-mapping.js';
import { CaptureError } from './errors.ts';
import { cancelledError, withDeadline } from './deadline.ts';
import { redactInspectorUrl } from './redact.ts';
import { CdpClosedError, CdpTransport } from './cdp-transport.ts';

type Commands = ProtocolMapping.Commands;
type Events = ProtocolMapping.Events;
/** Parameters of a CDP command. */
export type ParamsOf<M extends keyof Commands> = Commands[M]['paramsType'][0];
/** Result of a CDP command. */
export type ResultOf<M extends keyof Commands> = Commands[M]['returnType'];
/** Payload of a CDP event. */
export type EventOf<E extends keyof Events> = Events[E][0];

/** The part of the transport the session uses (it is an EventEmitter). */
type RawClient = Pick<CdpTransport, 'send' | 'on' | 'removeListener' | 'close' | 'terminate' | 'setChunkSink'>;

/**
 * How long a graceful WebSocket close may take before the socket is destroyed.
 * A responsive inspector answers the close frame in milliseconds.
 */
const CLOSE_GRACE_MS = 1_000;

export interface SessionOptions {
  /** Deadline for opening the WebSocket. */
  connectTimeoutMs: number;
  /** Default deadline for each command. */
  commandTimeoutMs: number;
  /** Aborting closes the session; pending calls reject with `cancelled`. */
  signal?: AbortSignal;
}

type State = 'open' | 'closing' | 'closed';

/** One CDP WebSocket session to one inspector target. */
export class CdpSession {
  readonly url: string;
  #client: RawClient;
  #state: State = 'open';
  #closeError: CaptureError | undefined;
  /** Set when a command got no answer in time: the peer is frozen or busy, courtesy waits are pointless. */
  #unresponsive = false;
  readonly #pending = new Set<(err: CaptureError) => void>();
  readonly #commandTimeoutMs: number;
  readonly #signal: AbortSignal | undefined;
  readonly #onAbort = (): void => {
    this.#fail(cancelledError(this.#signal));
  };

  private constructor(url: string, client: RawClient, options: SessionOptions) {
    this.url = url;
    const shown = redactInspectorUrl(url);
    this.#client = client;
    this.#commandTimeoutMs = options.commandTimeoutMs;
    this.#signal = options.signal;
    client.on('disconnect', (why?: CdpClosedError) => {
      // Why it closed (ECONNRESET, a protocol violation) stays in the message and as the cause.
      const detail = why === undefined || why.message === 'the WebSocket closed' ? '' : `: ${describe(why)}`;
      this.#fail(new CaptureError('target_closed', `the inspector connection to ${shown} closed (the target exited or dropped the debugger)${detail}`, {
        hint: 'check whether the target process crashed or was OOM-killed (dmesg, container events)',
        cause: why,
        details: why?.code === undefined ? undefined : { errno: why.code },
      }));
    });
    this.#signal?.addEventListener('abort', this.#onAbort, { once: true });
  }

  /** Open a session to an inspector WebSocket URL. */
  static async connect(url: string, options: SessionOptions): Promise<CdpSession> {
    const shown = redactInspectorUrl(url);
    const opening: Promise<RawClient> = CdpTransport.open(url, options.connectTimeoutMs);
    let client: RawClient;
    try {
      client = await withDeadline(
        opening,
        options.connectTimeoutMs,
        () => new CaptureError('target_unreachable', `opening the inspector WebSocket ${shown} took longer than ${options.connectTimeoutMs} ms`, {
          hint: 'the target may be frozen or another debugger may hold it; check it is responsive',
        }),
        options.signal,
      );
    } catch (err) {
      // A connection that opens after we gave up must not linger.
      opening.then((late) => late.close(), () => undefined).catch(() => undefined);
      if (err instanceof CaptureError) throw err;
      const errno = (err as NodeJS.ErrnoException).code;
      // An HTTP answer other than 101 to the upgrade (a proxy in front of the inspector saying its upstream is gone).
      const httpStatus = (err as { httpStatus?: unknown }).httpStatus;
      const details = { ...(errno === undefined ? {} : { errno }), ...(typeof httpStatus === 'number' ? { httpStatus } : {}) };
      throw new CaptureError('target_unreachable', `could not open the inspector WebSocket ${shown}: ${describe(err)}`, {
        cause: err,
        details: Object.keys(details).length === 0 ? undefined : details,
        hint: 'the target may have exited, or the URL is stale (inspector URLs change when the process restarts)',
      });
    }
    return new CdpSession(url, client, options);
  }

  /** 'open' until closed by us ('closing' → 'closed') or by the peer ('closed'). */
  get state(): State {
    return this.#state;
  }

  /** False once a command missed its deadline: the target is frozen or busy (e.g. still in a snapshot). */
  get responsive(): boolean {
    return !this.#unresponsive;
  }

  /** Send a command with a deadline (default: the session's command deadline). */
  async send<M extends keyof Commands>(method: M, params?: ParamsOf<M>, timeoutMs?: number): Promise<ResultOf<M>> {
    this.#assertOpen();
    const ms = timeoutMs ?? this.#commandTimeoutMs;
    return this.#track(
      this.#client.send(method, params ?? {}).then(
        (r) => r as ResultOf<M>,
        (err: unknown) => {
          throw this.#mapSendError(method, err);
        },
      ),
      ms,
      () => {
        this.#unresponsive = true;
        return new CaptureError('protocol_timeout', `${method} got no answer within ${ms} ms`, {
          hint: 'the target is busy or frozen; retry later or raise the deadline',
          details: { method, timeoutMs: ms },
        });
      },
    );
  }

  /** Listen to an event; returns a function that removes exactly this listener. */
  on<E extends keyof Events>(event: E, handler: (payload: EventOf<E>) => void): () => void {
    const listener = (payload: unknown): void => handler(payload as EventOf<E>);
    this.#client.on(event, listener);
    return () => {
      this.#client.removeListener(event, listener);
    };
  }

  /**
   * Receive `HeapProfiler.addHeapSnapshotChunk` as the snapshot's bytes (UTF-8)
   * instead of as events: decoded from the frame without a message object, into
   * a buffer reused for the next chunk (copy what you keep).
   * One receiver at a time; returns the function that removes it.
   */
  onSnapshotChunk(handler: (bytes: Buffer) => void): () => void {
    this.#client.setChunkSink(handler);
    return () => {
      this.#client.setChunkSink(undefined);
    };
  }

  /** Wait for an event, with a deadline; rejects if the session closes first. */
  async waitFor<E extends keyof Events>(event: E, timeoutMs: number, predicate: (p: EventOf<E>) => boolean = () => true): Promise<EventOf<E>> {
    this.#assertOpen();
    let off: (() => void) | undefined;
    try {
      return await this.#track(
        new Promise<EventOf<E>>((resolve) => {
          off = this.on(event, (p) => {
            if (predicate(p)) resolve(p);
          });
        }),
        timeoutMs,
        () => new CaptureError('protocol_timeout', `no ${event} event within ${timeoutMs} ms`, { details: { event, timeoutMs } }),
      );
    } finally {
      off?.();
    }
  }

  /** A promise that rejects with the close reason once the session closes (never resolves). */
  closed(): Promise<never> {
    return new Promise<never>((_, reject) => {
      if (this.#closeError !== undefined) reject(this.#closeError);
      else this.#pending.add(reject);
    });
  }

  /**
   * Close the session. Idempotent; pending calls reject with `cancelled` (or the given error).
   * Graceful when the peer answers, else the socket is destroyed: at most CLOSE_GRACE_MS.
   */
  async close(reason?: CaptureError): Promise<void> {
    if (this.#state !== 'open') return;
    this.#state = 'closing';
    this.#signal?.removeEventListener('abort', this.#onAbort);
    this.#rejectAll(reason ?? new CaptureError('cancelled', 'the inspector session was closed by heapcap'));
    const closing = this.#client.close();
    // A frozen peer would never answer the close frame: do not ask.
    if (this.#unresponsive) this.#terminate();
    try {
      await withDeadline(closing, CLOSE_GRACE_MS, () => new CaptureError('protocol_timeout', `closing the inspector WebSocket took longer than ${CLOSE_GRACE_MS} ms`));
    } catch {
      this.#terminate();
    } finally {
      this.#state = 'closed';
    }
  }

  /** Destroy the socket now (no close handshake); a no-op once it is closed. */
  #terminate(): void {
    try {
      this.#client.terminate();
    } catch {
      // Already destroyed.
    }
  }

  #fail(err: CaptureError): void {
    if (this.#state === 'closed') return;
    const wasOpen = this.#state === 'open';
    this.#rejectAll(err);
    if (wasOpen) {
      // Peer closed or abort: make sure the socket is released too.
      void this.close(err);
    }
  }

  #rejectAll(err: CaptureError): void {
    this.#closeError ??= err;
    for (const reject of this.#pending) reject(this.#closeError);
    this.#pending.clear();
  }

  #assertOpen(): void {
    if (this.#state !== 'open') {
      throw this.#closeError ?? new CaptureError('target_closed', `the inspector session to ${redactInspectorUrl(this.url)} is closed`);
    }
  }

  async #track<T>(promise: Promise<T>, timeoutMs: number, onTimeout: () => CaptureError): Promise<T> {
    let reject!: (err: CaptureError) => void;
    const onClose = new Promise<never>((_, r) => {
      reject = r;
    });
    this.#pending.add(reject);
    try {
      return await withDeadline(Promise.race([promise, onClose]), timeoutMs, onTimeout);
    } finally {
      this.#pending.delete(reject);
    }
  }

  #mapSendError(method: string, err: unknown): CaptureError {
    if (err instanceof CaptureError) return err;
    if (err instanceof CdpClosedError) {
      return this.#closeError ?? new CaptureError('target_closed', `the inspector connection closed while ${method} was pending`);
    }
    // CdpProtocolError carries the target's `{code, message, data}`.
    return new CaptureError('protocol_error', `${method} failed: ${describe(err)}`, { cause: err, details: { method } });
  }
}

function describe(err: unknown): string {
  if (err instanceof Error) {
    const code = (err as NodeJS.ErrnoException).code;
    return code === undefined || err.message.includes(String(code)) ? err.message : `${err.message} (${code})`;
  }
  return String(err);
}
