/**
 * Our engine capturing a Node target into a plain file: the same byte path as
 * `v8.writeHeapSnapshot()` (uncompressed JSON on local disk), so a bench can
 * compare the two without gzip in the way.
 */
import { createWriteStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import { captureHeapSnapshot, type CaptureOptions, type CaptureResult } from '@heapcap/capture';

/** A finished capture and the size of the file it wrote. */
export interface FileCapture {
  result: CaptureResult<void>;
  fileBytes: number;
}

/** Capture the Node inspector at `inspect` (host:port) into `path`. */
export async function captureToFile(
  inspect: string,
  path: string,
  options: Omit<CaptureOptions, 'endpoint'> = {},
): Promise<FileCapture> {
  const result = await captureHeapSnapshot({ ...options, endpoint: { kind: 'node', inspect } }, async (snapshot) => {
    await pipeline(snapshot, createWriteStream(path));
  });
  return { result, fileBytes: (await stat(path)).size };
}
