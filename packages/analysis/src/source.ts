/**
 * Reading a snapshot file: plain `.heapsnapshot` JSON or gzipped (detected by
 * its magic bytes, whatever the name), as a stream of Buffer chunks, with the
 * size gate the analysis needs before it allocates anything.
 */
import { createReadStream } from 'node:fs';
import { open, stat } from 'node:fs/promises';
import { createGunzip } from 'node:zlib';
import type { Readable } from 'node:stream';
import { CaptureError } from '@heapcap/errors';

/** What is known about a snapshot file before reading it. */
export interface SnapshotFileInfo {
  path: string;
  gzip: boolean;
  /** Bytes on disk. */
  fileBytes: number;
  /** Snapshot JSON bytes: the file size, or for gzip the trailer's ISIZE (exact below 4 GiB). */
  jsonBytes: number;
}

/** Stats a snapshot file and tells whether it is gzipped. */
export async function snapshotFileInfo(path: string): Promise<SnapshotFileInfo> {
  let fileBytes: number;
  try {
    const st = await stat(path);
    if (!st.isFile()) {
      throw new CaptureError('invalid_input', `${path} is ${st.isDirectory() ? 'a directory' : 'not a regular file'}, not a snapshot file`, {
        hint: 'pass the path of a .heapsnapshot or .heapsnapshot.gz file',
      });
    }
    fileBytes = st.size;
  } catch (err) {
    if (err instanceof CaptureError) throw err;
    throw new CaptureError('invalid_input', `cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`, {
      hint: 'pass the path of a .heapsnapshot or .heapsnapshot.gz file',
      cause: err,
    });
  }
  const handle = await open(path, 'r');
  try {
    const head = Buffer.alloc(2);
    await handle.read(head, 0, 2, 0);
    const gzip = head[0] === 0x1f && head[1] === 0x8b;
    let jsonBytes = fileBytes;
    if (gzip && fileBytes >= 18) {
      const tail = Buffer.alloc(4);
      await handle.read(tail, 0, 4, fileBytes - 4);
      jsonBytes = tail.readUInt32LE(0);
      // ISIZE is the size modulo 2^32: a gzip file much bigger than it has wrapped at least once. A tiny or
      // incompressible input legitimately gzips to a little more than itself (header, trailer, 5 bytes
      // per stored block, a file name), so only a file larger than that bound is taken to have wrapped.
      while (jsonBytes + gzipOverhead(jsonBytes) < fileBytes) jsonBytes += 2 ** 32;
    }
    return { path, gzip, fileBytes, jsonBytes };
  } finally {
    await handle.close();
  }
}

/** Most bytes gzip adds to `bytes` of input: deflate's stored-block worst case plus a header with a long file name. */
function gzipOverhead(bytes: number): number {
  return 5 * Math.ceil(bytes / 16_384) + 18 + 4_096;
}

/** `analysis_too_large` for a snapshot of `bytes` against `maxBytes`. */
export function tooLarge(path: string, bytes: number, maxBytes: number): CaptureError {
  return new CaptureError('analysis_too_large', `${path} holds ${bytes} bytes of snapshot JSON, above the analysis limit of ${maxBytes}`, {
    hint: 'raise the limit (heapcap analyze --max-bytes; HEAPCAP_ANALYSIS_MAX_BYTES for the service) on a machine with the memory for it (the analysis needs about 2x the snapshot size), or use the summary, which has no limit',
    details: { bytes, maxBytes },
  });
}

/**
 * Refuses a file whose snapshot JSON exceeds `maxBytes` (`analysis_too_large`)
 * before anything is allocated for it. A gzip trailer's ISIZE is only believed
 * after decompressing (and discarding) up to the limit: a truncated or corrupt
 * file ends in arbitrary bytes, and must fail as `snapshot_invalid`, not as
 * too large.
 */
export async function checkSnapshotSize(info: SnapshotFileInfo, maxBytes: number): Promise<void> {
  if (info.jsonBytes <= maxBytes) return;
  if (info.gzip) {
    // Decompressed in full within the limit: the trailer's size was a wrong guess, not the size.
    const bytes = await readSnapshot(info, () => {}, maxBytes, info.jsonBytes);
    info.jsonBytes = bytes;
    return;
  }
  throw tooLarge(info.path, info.jsonBytes, maxBytes);
}

/** The snapshot's JSON bytes as a stream (gunzipped when needed). */
export function openSnapshotStream(info: SnapshotFileInfo, highWaterMark = 1024 * 1024): Readable {
  const file = createReadStream(info.path, { highWaterMark });
  if (!info.gzip) return file;
  const gunzip = createGunzip({ chunkSize: 256 * 1024 });
  file.on('error', (err) => gunzip.destroy(err));
  return file.pipe(gunzip);
}

/** Feeds every chunk of the file to `write`; gzip errors become `snapshot_invalid`. */
export async function readSnapshot(info: SnapshotFileInfo, write: (chunk: Buffer) => void, limitBytes = Infinity, reportedBytes?: number): Promise<number> {
  const stream = openSnapshotStream(info);
  let bytes = 0;
  try {
    for await (const chunk of stream) {
      const buf = chunk as Buffer;
      bytes += buf.length;
      if (bytes > limitBytes) throw tooLarge(info.path, reportedBytes ?? bytes, limitBytes);
      write(buf);
    }
  } catch (err) {
    stream.destroy();
    if (err instanceof CaptureError) throw err;
    const code = (err as NodeJS.ErrnoException).code;
    if (typeof code === 'string' && code.startsWith('Z_')) {
      throw new CaptureError('snapshot_invalid', `${info.path} is not a complete gzip file at snapshot byte ${bytes}: ${(err as Error).message}`, {
        hint: 'the file is truncated or corrupt; download or capture it again',
        details: { offset: bytes, gzip: true },
        cause: err,
      });
    }
    throw err;
  }
  return bytes;
}
