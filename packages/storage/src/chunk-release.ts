/**
 * Giving the engine's snapshot blocks back once a sink has consumed them
 * (@heapcap/capture's chunk-pool.ts has the why and the contract). Found
 * through a global symbol so this package needs no dependency on the engine;
 * a chunk from anywhere else (a file, a test) is ignored.
 */
import type { Gzip } from 'node:zlib';
import type { Writable } from 'node:stream';

const REGISTRY = Symbol.for('heapcap.snapshotChunkPool');

type Release = { release(chunk: Uint8Array): void };

/** `chunk` is no longer used by anyone: its block may be refilled. */
export function releaseSnapshotChunk(chunk: Uint8Array): void {
  (globalThis as unknown as Record<symbol, Release | undefined>)[REGISTRY]?.release(chunk);
}

type WriteCallback = (error?: Error | null) => void;

/**
 * Makes `stream` give every chunk back once its write completed. Only for the
 * last stage to read the bytes (the file write), and only for one that copies
 * nothing it keeps.
 */
export function releaseAfterWrite<T extends Writable>(stream: T): T {
  const s = stream as unknown as {
    _write(chunk: Buffer, enc: BufferEncoding, cb: WriteCallback): void;
    _writev?: (chunks: { chunk: Buffer }[], cb: WriteCallback) => void;
  };
  const write = s._write.bind(stream);
  s._write = (chunk, enc, cb) =>
    write(chunk, enc, (err) => {
      releaseSnapshotChunk(chunk);
      cb(err);
    });
  const writev = s._writev?.bind(stream);
  if (writev !== undefined) {
    s._writev = (chunks, cb) =>
      writev(chunks, (err) => {
        for (const c of chunks) releaseSnapshotChunk(c.chunk);
        cb(err);
      });
  }
  return stream;
}

/** The same for gzip: zlib has consumed (copied into its window) every byte of a chunk when its transform callback runs. */
export function releaseAfterGzip(gzip: Gzip): Gzip {
  const z = gzip as unknown as { _transform(chunk: Buffer, enc: BufferEncoding, cb: (err?: Error | null, out?: Buffer) => void): void };
  const transform = z._transform.bind(gzip);
  z._transform = (chunk, enc, cb) =>
    transform(chunk, enc, (err, out) => {
      releaseSnapshotChunk(chunk);
      cb(err, out);
    });
  return gzip;
}
