/**
 * Redaction off the main thread: a SnapshotTransform (the engine's hook before
 * the spill buffer) that hands the bytes to a thread running the redactor
 * (redact-thread.ts in @heapcap/analysis, which says why) and emits the
 * redacted bytes, in order, as they come back.
 *
 * The main thread only copies: each chunk into one of a few 1 MiB blocks,
 * transferred to the thread when full; the redacted bytes into the spill
 * buffer. Bounded: with every block at the thread (it fell 8 MiB behind), a
 * write sleeps until one comes back, so the main thread then waits as it did
 * when it redacted itself, and nothing grows. The same guarantee as inline: no
 * byte reaches the spill buffer (its file), the summary or the store before it
 * was redacted; a snapshot the redactor refuses fails with its error
 * (`snapshot_invalid`), from the next write or from `end`.
 *
 * The thread starts when the engine is about to ask for the snapshot (`open`:
 * it loads while the target generates; a capture that fails before never
 * starts it) and goes with `close` (the engine calls it in any case).
 */
import { fileURLToPath } from 'node:url';
import { MessageChannel, receiveMessageOnPort, type MessagePort, type Worker } from 'node:worker_threads';
import { REDACTED_MARKER, type RedactionReport, type RedactMode } from '@heapcap/analysis';
import type { RedactCommand, RedactMessage, RedactThreadData } from '@heapcap/analysis/redact-thread';
import { startModuleThread, type SnapshotTransform } from '@heapcap/capture';
import { CaptureError, type ErrorCode } from '@heapcap/errors';

const BLOCK_BYTES = 1024 * 1024;
/** Blocks in flight: how far (8 MiB, ~80 ms of a target's output) the thread may fall behind before a write waits. */
const BLOCKS = 8;
/** A thread that answers nothing for this long is gone (it died, or its module failed to load). */
const STALL_MS = 60_000;

/** A redactor on its own thread; `redaction` is its report once `end` resolved. */
export class RedactorThread implements SnapshotTransform {
  #worker: Worker | undefined;
  #port: MessagePort | undefined;
  #posted = new Int32Array(new SharedArrayBuffer(4));
  /** Messages taken from the port so far (asynchronously or not). */
  #received = 0;
  #free: ArrayBuffer[] = [];
  #blocks = 0;
  #cur: ArrayBuffer | undefined;
  #used = 0;
  #emit: (bytes: Buffer) => void = () => undefined;
  #error: CaptureError | undefined;
  #report: RedactionReport = { mode: 'strings', marker: REDACTED_MARKER, redactedStrings: 0, keptStrings: 0, redactedBytes: 0 };
  #ended: { resolve: () => void; reject: (err: Error) => void } | undefined;
  #closed = false;

  /** Blocks allocated so far (never more than 8: the bound on what is in flight). */
  get blocksAllocated(): number {
    return this.#blocks;
  }

  /** What was redacted (complete once `end` resolved). */
  get redaction(): RedactionReport {
    return { ...this.#report };
  }

  write(chunk: Buffer, emit: (bytes: Buffer) => void): void {
    if (this.#error !== undefined) throw this.#error;
    this.#emit = emit;
    for (let at = 0; at < chunk.length; ) {
      this.#cur ??= this.#take();
      const n = Math.min(chunk.length - at, BLOCK_BYTES - this.#used);
      new Uint8Array(this.#cur, this.#used, n).set(chunk.subarray(at, at + n));
      this.#used += n;
      at += n;
      if (this.#used === BLOCK_BYTES) this.#send();
    }
  }

  /** Starts the thread before the snapshot is asked for: it loads while the target generates it. */
  open(): void {
    this.#start();
  }

  /** Resolves once the thread redacted and gave back every byte; rejects with its error. */
  end(): Promise<void> {
    if (this.#error !== undefined) return Promise.reject(this.#error);
    this.#start();
    this.#send();
    const ended = new Promise<void>((resolve, reject) => (this.#ended = { resolve, reject }));
    this.#port?.ref();
    this.#command({ kind: 'end' });
    return ended.finally(() => this.#port?.unref());
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#ended?.reject(new CaptureError('cancelled', 'the redaction thread was closed'));
    this.#port?.close();
    void this.#worker?.terminate();
  }

  #start(): void {
    if (this.#worker !== undefined) return;
    const { port1, port2 } = new MessageChannel();
    const data: RedactThreadData = { port: port2, posted: this.#posted };
    const source = (): string => fileURLToPath(import.meta.resolve('@heapcap/analysis/redact-thread'));
    this.#worker = startModuleThread('redact-thread', source, data, {
      transferList: [port2],
      // Small young generation, as bin/heapcap gives the main thread: little lives long here.
      resourceLimits: { maxYoungGenerationSizeMb: 4 },
      stdout: false,
      stderr: false,
    });
    this.#worker.on('error', (err) => this.#fail(new CaptureError('internal', `the redaction thread failed: ${err.message}`)));
    this.#worker.on('exit', () => this.#fail(new CaptureError('internal', 'the redaction thread exited before the end of the snapshot')));
    this.#worker.unref();
    this.#port = port1;
    port1.on('message', (m: RedactMessage) => this.#handle(m));
    // Only a pending `end` keeps the process alive (a caller that never closes it must not hang the process).
    port1.unref();
  }

  #command(m: RedactCommand, transfer: ArrayBuffer[] = []): void {
    this.#worker?.postMessage(m, transfer);
  }

  #send(): void {
    if (this.#cur === undefined || this.#used === 0) return;
    this.#command({ kind: 'bytes', block: this.#cur, length: this.#used }, [this.#cur]);
    this.#cur = undefined;
    this.#used = 0;
  }

  /** A free block: a new one while fewer than BLOCKS exist, else the next one the thread gives back (waiting for it). */
  #take(): ArrayBuffer {
    this.#start();
    let waited = 0;
    for (;;) {
      const free = this.#free.pop();
      if (free !== undefined) return free;
      if (this.#blocks < BLOCKS) {
        this.#blocks++;
        return new ArrayBuffer(BLOCK_BYTES);
      }
      if (this.#error !== undefined) throw this.#error;
      // Every block is at the thread: sleep until it posts, then take its messages now (the event loop is not running).
      if (Atomics.wait(this.#posted, 0, this.#received, 1_000) === 'timed-out') {
        waited += 1_000;
        if (waited >= STALL_MS) this.#fail(new CaptureError('internal', `the redaction thread gave no block back for ${STALL_MS} ms`));
      }
      for (let m = receiveMessageOnPort(this.#port as MessagePort); m !== undefined; m = receiveMessageOnPort(this.#port as MessagePort)) this.#handle(m.message as RedactMessage);
    }
  }

  #handle(m: RedactMessage): void {
    this.#received++;
    if (m.kind === 'done') {
      const spare: ArrayBuffer[] = [];
      for (const piece of m.out) {
        if ('start' in piece) this.#emit(Buffer.from(m.block, piece.start, piece.end - piece.start));
        else {
          this.#emit(Buffer.from(piece.buffer, 0, piece.length));
          spare.push(piece.buffer);
        }
      }
      // Pushed (the spill buffer copies): the block and the output buffers can be reused.
      this.#free.push(m.block);
      if (spare.length > 0) this.#command({ kind: 'spare', buffers: spare }, spare);
    } else if (m.kind === 'ended') {
      this.#report = m.report;
      this.#ended?.resolve();
    } else {
      this.#fail(new CaptureError(m.code as ErrorCode, m.message, { hint: m.hint, details: m.details }));
    }
  }

  #fail(err: CaptureError): void {
    if (this.#closed || this.#error !== undefined) return;
    this.#error = err;
    this.#ended?.reject(err);
  }
}

/** A redactor on its own thread for `mode`, or undefined when nothing is redacted. */
export function createRedactorThread(mode: RedactMode): RedactorThread | undefined {
  return mode === 'none' ? undefined : new RedactorThread();
}
