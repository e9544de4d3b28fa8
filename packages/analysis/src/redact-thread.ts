/**
 * The redaction thread (a worker_threads Worker started by RedactorThread in
 * @heapcap/pipeline): runs a {@link SnapshotRedactor} on the snapshot's bytes
 * off the capture's main thread.
 *
 * Why a thread: the redactor parses every number of the nodes and edges
 * (~3.6 CPU-s per GB here). On the main thread it ran before the spill buffer,
 * between the transport and everything that absorbs a slow consumer, and that
 * thread also hashes and summarizes: the pipe's reading thread ran out of
 * blocks and the target's writeHeapSnapshot() waited (a redacted capture's
 * pause was 1.15-1.18× an unredacted one's, bench/redact.ts).
 *
 * Protocol: the main thread transfers each filled input block (`bytes`); the
 * thread redacts it and transfers it back with the redacted bytes (`done`),
 * in order: ranges of the block itself where the bytes pass unchanged (the
 * nodes and edges, ~80% of a snapshot), buffers of its own for the rewritten
 * table, which the main thread gives back (`spare`) once it pushed them. After every message it posts it bumps `posted[0]` and notifies,
 * so a main thread with every block out can sleep (Atomics.wait) until one
 * comes back and take it with receiveMessageOnPort: memory stays bounded by
 * the blocks. A malformed snapshot is one `error` message (its code and
 * offset), after which the thread only gives blocks back.
 *
 * Its own module, importing only the redactor: scripts/build.mjs bundles it as
 * dist/redact-thread.mjs; from the sources it loads through tsx
 * (module-thread.ts in @heapcap/capture).
 */
import { parentPort, workerData, type MessagePort } from 'node:worker_threads';
import { CaptureError } from '@heapcap/errors';
import { SnapshotRedactor, type RedactionReport } from './redact.ts';

/** What the thread is started with. */
export interface RedactThreadData {
  /** Where the thread posts (the main thread reads it with receiveMessageOnPort too). */
  port: MessagePort;
  /** [0]: messages posted so far on `port`. */
  posted: Int32Array;
}

/** Main thread → thread: a block to redact, output buffers given back, or the end. */
export type RedactCommand = { kind: 'bytes'; block: ArrayBuffer; length: number } | { kind: 'spare'; buffers: ArrayBuffer[] } | { kind: 'end' };

/**
 * A piece of the redacted output: bytes of the input block itself (the nodes
 * and edges pass through unchanged: nothing is copied for them), or a buffer
 * of the thread's (the rewritten strings table), to give back once pushed.
 */
export type RedactPiece = { start: number; end: number } | { buffer: ArrayBuffer; length: number };

/** Thread → main thread. */
export type RedactMessage =
  | { kind: 'done'; block: ArrayBuffer; out: RedactPiece[] }
  | { kind: 'ended'; report: RedactionReport }
  | { kind: 'error'; code: string; message: string; hint?: string; details?: Record<string, unknown> };

/** Output buffers: at least this big (a rewritten 1 MiB block is one piece, rarely more). */
const OUT_BYTES = 1024 * 1024;

if (parentPort === null) throw new Error('redact-thread.ts runs as a worker thread (RedactorThread starts it)');
const { port, posted } = workerData as RedactThreadData;
const redactor = new SnapshotRedactor();
let failed = false;
/** Output buffers the main thread gave back (as many as are in flight: bounded by its blocks). */
const spare: ArrayBuffer[] = [];

const post = (m: RedactMessage, transfer: ArrayBuffer[] = []): void => {
  port.postMessage(m, transfer);
  Atomics.add(posted, 0, 1);
  Atomics.notify(posted, 0);
};

const fail = (err: unknown): void => {
  failed = true;
  const e = err instanceof CaptureError ? err : new CaptureError('internal', `redaction failed: ${String((err as Error)?.message ?? err)}`);
  post({ kind: 'error', code: e.code, message: e.message, hint: e.hint, details: e.details });
};

parentPort.on('message', (m: RedactCommand) => {
  if (m.kind === 'bytes') {
    const out: RedactPiece[] = [];
    const transfer = [m.block];
    if (!failed) {
      try {
        redactor.write(Buffer.from(m.block, 0, m.length), (bytes) => {
          if (bytes.buffer === m.block) {
            out.push({ start: bytes.byteOffset, end: bytes.byteOffset + bytes.length });
            return;
          }
          // The redactor's buffer is reused after `emit` returns: copied into one of ours.
          let buffer = spare.pop();
          if (buffer === undefined || buffer.byteLength < bytes.length) buffer = new ArrayBuffer(Math.max(OUT_BYTES, bytes.length));
          new Uint8Array(buffer).set(bytes);
          out.push({ buffer, length: bytes.length });
          transfer.push(buffer);
        });
      } catch (err) {
        fail(err);
        out.length = 0;
        transfer.length = 1;
      }
    }
    post({ kind: 'done', block: m.block, out }, transfer);
  } else if (m.kind === 'spare') {
    spare.push(...m.buffers);
  } else if (!failed) {
    try {
      post({ kind: 'ended', report: redactor.end() });
    } catch (err) {
      fail(err);
    }
  }
});
