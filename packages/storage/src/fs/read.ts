/** Reading a stored artifact back from the filesystem, optionally gunzipped. */
import { open } from 'node:fs/promises';
import { pipeline, type Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { CaptureError } from '@heapcap/errors';
import type { OpenOptions } from '../types.ts';
import { fsStorageError } from './errors.ts';

/**
 * Opens a stored artifact as a stream. The file is opened before this resolves,
 * so a missing or unreadable file rejects with `storage_failed` here instead
 * of surfacing later as a stream error.
 */
export async function openFileArtifact(path: string, options: OpenOptions = {}): Promise<Readable> {
  let stream: Readable;
  try {
    const handle = await open(path, 'r');
    // The stream owns the handle from here: it closes it on end, error or destroy.
    stream = handle.createReadStream({ highWaterMark: 256 * 1024, ...(options.range === undefined ? {} : { start: options.range.start, end: options.range.end }) });
  } catch (err) {
    throw fsStorageError(err, 'read', path, path);
  }
  if (options.decompress !== true || !path.endsWith('.gz')) return stream;
  if (options.range !== undefined) throw new CaptureError('invalid_input', 'a byte range of the stored bytes cannot be decompressed');
  // Errors of either stage destroy the returned stream with that error; the
  // caller sees them there, so the callback has nothing left to do.
  return pipeline(stream, createGunzip(), () => {});
}
