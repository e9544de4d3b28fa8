/**
 * One heap snapshot on an already open session (HeapProfiler enabled), fed to
 * a consumer through the bounded spill buffer (snapshot-stream.ts). The one
 * path every snapshot takes: a capture's (capture.ts, which adds the phase
 * clock, progress and the pipe transport) and each of a leak hunt's three.
 *
 * The chunk listener goes on before the command and comes off in `finally`.
 * The consumer's stream ends only after the snapshot was validated (response
 * received after the last chunk, first chunk opens a snapshot object, last
 * chunk closes the JSON); otherwise it is destroyed with `snapshot_truncated`
 * or the session's error (`target_closed`, `protocol_timeout`, `cancelled`),
 * so no consumer ever completes a partial file or object.
 */
import { performance } from 'node:perf_hooks';
import type { Readable } from 'node:stream';
import { CaptureError, toCaptureError } from './errors.ts';
import type { CdpSession } from './session.ts';
import { SnapshotStream, type SnapshotStreamStats } from './snapshot-stream.ts';
import { withDeadline } from './deadline.ts';
import type { SnapshotFlags, SnapshotTransform } from './types.ts';


/**
 * Gives a chunk of the snapshot stream back to the engine's block pool once
 * the consumer's last stage is done with its bytes (chunk-pool.ts has the
 * contract); a chunk that is not one of the pool's blocks is ignored.
 */
export type ReleaseChunk = (chunk: Uint8Array) => void;

/** Receives the snapshot bytes; resolves when they are stored (the file closed, the upload complete). */
export type SnapshotConsumer<T> = (snapshot: Readable, release: ReleaseChunk) => Promise<T>;

export interface TakeSnapshotOptions {
  /** Flags for takeHeapSnapshot (send only what the target's V8 knows). */
  flags?: SnapshotFlags;
  /** Ask V8 for generation progress (costs the target a heap walk; see CaptureOptions). */
  reportProgress?: boolean;
  /**
   * Take the snapshot with `HeapProfiler.stopTrackingHeapObjects` instead of
   * `takeHeapSnapshot`: V8 streams one whole snapshot (with the allocation
   * tracker's trace sections) and then stops tracking, so a caller that
   * tracked allocations gets its snapshot and the stop for one snapshot's cost
   * (a `takeHeapSnapshot` then a stop would make the target pay for two).
   */
  stopTracking?: boolean;
  /** Deadline of the snapshot command, and of the consumer after the last chunk (default 30 min). */
  timeoutMs?: number;
  /** In-memory buffer ceiling before spilling to disk (default 16 MiB). */
  memoryCeilingBytes?: number;
  /** Directory of the spill file (default the OS temp dir). */
  spillDir?: string;
  /**
   * Rewrites every chunk before the spill buffer sees it (redaction). A throw
   * fails the snapshot with the transform's error: no byte it refused is kept.
   */
  transform?: SnapshotTransform;
  signal?: AbortSignal;
  /** Generation progress (only with `reportProgress`, before the first chunk). */
  onGenerateProgress?: (done: number, total: number) => void;
  /** After each chunk joined the stream; `at` on the monotonic clock. */
  onChunk?: (at: number, first: boolean, stats: SnapshotStreamStats) => void;
  /** The snapshot is complete and valid; the consumer's tail starts (`lastChunkAt` on the monotonic clock). */
  onComplete?: (lastChunkAt: number) => void;
}

/** What a snapshot took, and what the consumer returned. */
export interface TakenSnapshot<T> {
  stats: SnapshotStreamStats;
  /** When the consumer finished, on the monotonic clock. */
  finishedAtMs: number;
  consumed: T;
}

const DEFAULT_SNAPSHOT_MS = 30 * 60_000;

/**
 * How the chunks arrive when not as CDP events (the pipe transport): it pushes
 * the bytes, can fall back to `overCdp`, and stops at once when
 * `consumerFailed` rejects (no point in reading a snapshot nobody can store).
 */
export type SnapshotProducer = (io: {
  push: (chunk: Buffer) => void;
  overCdp: () => Promise<void>;
  consumerFailed: Promise<never>;
  /** Whether any chunk arrived yet (either way). */
  gotChunks: () => boolean;
  /** The consumer's error once it failed. */
  consumerError: () => unknown;
}) => Promise<void>;

/**
 * Take one heap snapshot on `session` (HeapProfiler already enabled) and feed
 * it to `consume`; resolves when the consumer has finished with a complete
 * snapshot. Rejects with a CaptureError (`snapshot_truncated`,
 * `target_closed`, …) or the consumer's own error, after the consumer has
 * seen the failure and cleaned up.
 */
export function takeSnapshot<T>(session: CdpSession, consume: SnapshotConsumer<T>, options: TakeSnapshotOptions = {}): Promise<TakenSnapshot<T>> {
  return takeSnapshotVia(session, consume, options, undefined);
}

/** {@link takeSnapshot}, the bytes coming from `produce` (default: CDP chunk events). */
export async function takeSnapshotVia<T>(session: CdpSession, consume: SnapshotConsumer<T>, options: TakeSnapshotOptions, produce: SnapshotProducer | undefined): Promise<TakenSnapshot<T>> {
  const timeoutMs = options.timeoutMs ?? DEFAULT_SNAPSHOT_MS;
  const stream = new SnapshotStream({
    memoryCeilingBytes: options.memoryCeilingBytes,
    spillDir: options.spillDir,
  });
  // Failures are reported through this function's rejection; the consumer may
  // not have attached its pipeline yet (it may still be opening a file or an
  // upload) when the stream is destroyed with an error, and an 'error' with no
  // listener would crash the process.
  stream.on('error', () => undefined);
  let firstChunkAt: number | undefined;
  let lastChunkAt = 0;
  const ends = new SnapshotEnds();
  let responded = false;
  let lateChunks = 0;
  const { transform } = options;
  let transformError: CaptureError | undefined;
  const push = (bytes: Buffer): void => stream.pushChunk(bytes);
  const onChunk = (chunk: Buffer): void => {
    if (responded) {
      lateChunks += 1;
      return;
    }
    const now = performance.now();
    const first = firstChunkAt === undefined;
    firstChunkAt ??= now;
    lastChunkAt = now;
    ends.add(chunk);
    if (transform === undefined) stream.pushChunk(chunk);
    else if (transformError === undefined) {
      try {
        transform.write(chunk, push);
      } catch (err) {
        // The consumer fails with it, which stops the snapshot (consumerFailed below).
        transformError = toCaptureError(err);
        stream.destroy(transformError);
      }
    }
    options.onChunk?.(now, first, stream.stats);
  };
  // Listeners go on before the command, and come off in `finally`.
  const offChunk = session.onSnapshotChunk(onChunk);
  const offProgress = session.on('HeapProfiler.reportHeapSnapshotProgress', ({ done, total }) => {
    if (firstChunkAt === undefined) options.onGenerateProgress?.(done, total);
  });
  const consuming = consume(stream, (chunk) => stream.release(chunk));
  // Observe the consumer's failure right away (no unhandled rejection while the snapshot runs).
  let consumeError: unknown;
  const consumerFailed = consuming.then(
    () => new Promise<never>(() => undefined),
    (err: unknown) => {
      consumeError = err;
      throw err;
    },
  );
  const overCdp = async (): Promise<void> => {
    const params = { reportProgress: options.reportProgress === true, ...options.flags };
    const snapshot = options.stopTracking === true ? session.send('HeapProfiler.stopTrackingHeapObjects', params, timeoutMs) : session.send('HeapProfiler.takeHeapSnapshot', params, timeoutMs);
    // A failing consumer stops the snapshot at once: no point in reading what cannot be stored.
    await Promise.race([snapshot, consumerFailed]);
  };
  try {
    if (produce === undefined) await overCdp();
    else await produce({ push: onChunk, overCdp, consumerFailed, gotChunks: () => firstChunkAt !== undefined, consumerError: () => consumeError });
    responded = true;
    const truncated = truncation(ends.head, ends.tail, firstChunkAt !== undefined);
    if (truncated !== undefined) throw truncated;
    if (transformError !== undefined) throw transformError;
    transform?.end();
    options.onComplete?.(lastChunkAt);
    stream.finish();
    const consumed = await withDeadline(consuming, timeoutMs, () => new CaptureError('storage_failed', `the sink did not complete within ${timeoutMs} ms after the last chunk`), options.signal);
    return { stats: { ...stream.stats }, finishedAtMs: performance.now(), consumed };
  } catch (err) {
    const error = transformError ?? consumeError ?? err;
    stream.destroy(toCaptureError(error));
    // Wait for the consumer to clean up (abort uploads, remove temp files) before reporting.
    await consuming.catch(() => undefined);
    throw error;
  } finally {
    offChunk();
    offProgress();
    if (lateChunks > 0) stream.destroy();
  }
}

/** The first and last 64 bytes of the snapshot, for the completeness check; copies nothing else. */
class SnapshotEnds {
  #head = Buffer.alloc(0);
  #tail = Buffer.alloc(0);

  add(chunk: Buffer): void {
    if (this.#head.length < 64) this.#head = Buffer.concat([this.#head, chunk.subarray(0, 64 - this.#head.length)]);
    this.#tail = chunk.length >= 64 ? Buffer.from(chunk.subarray(-64)) : Buffer.concat([this.#tail, chunk]).subarray(-64);
  }

  get head(): string {
    return this.#head.toString('utf8');
  }

  get tail(): string {
    return this.#tail.toString('utf8');
  }
}

/** A snapshot is complete only if it starts as a snapshot object and its JSON is closed. */
function truncation(head: string, tail: string, gotChunks: boolean): CaptureError | undefined {
  if (!gotChunks) {
    return new CaptureError('snapshot_truncated', 'the target answered takeHeapSnapshot without sending any snapshot data', {
      hint: 'the target may be out of memory; check its logs',
    });
  }
  if (!/^\s*\{\s*"snapshot"/.test(head) || !/\]\s*\}\s*$/.test(tail)) {
    return new CaptureError('snapshot_truncated', 'the snapshot JSON is incomplete (its last chunk does not close the document)', {
      hint: 'the connection or the target failed during serialization; retry the capture',
      details: { tail: tail.slice(-16) },
    });
  }
  return undefined;
}
