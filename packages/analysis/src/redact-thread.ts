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
 * in order. After every message it posts it bumps `posted[0]` and notifies,
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

/** Main thread → thread. */
export type RedactCommand = { kind: 'bytes'; block: ArrayBuffer; length: number } | { kind: 'end' };

/** Thread → main thread. */
export type RedactMessage =
  | { kind: 'done'; block: ArrayBuffer; out: ArrayBuffer[] }
  | { kind: 'ended'; report: RedactionReport }
  | { kind: 'error'; code: string; message: string; hint?: string; details?: Record<string, unknown> };

if (parentPort === null) throw new Error('redact-thread.ts runs as a worker thread (RedactorThread starts it)');
const { port, posted } = workerData as RedactThreadData;
const redactor = new SnapshotRedactor();
let failed = false;

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
    // The redactor's buffer is reused after `emit` returns: each piece goes over in a buffer of its own.
    const out: ArrayBuffer[] = [];
    if (!failed) {
      try {
        redactor.write(Buffer.from(m.block, 0, m.length), (bytes) => {
          const copy = new ArrayBuffer(bytes.length);
          new Uint8Array(copy).set(bytes);
          out.push(copy);
        });
      } catch (err) {
        fail(err);
        out.length = 0;
      }
    }
    post({ kind: 'done', block: m.block, out }, [m.block, ...out]);
  } else if (!failed) {
    try {
      post({ kind: 'ended', report: redactor.end() });
    } catch (err) {
      fail(err);
    }
  }
});
