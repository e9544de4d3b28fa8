/**
 * The filesystem sink's last stage: a Writable into an open file, from offset
 * 0, that hands each chunk to `release` once its bytes are written (the
 * producer may then refill the chunk's memory; PutOptions.release).
 *
 * Our own rather than fs.WriteStream because a WriteStream says when a chunk is
 * written only to the writer that passed a callback, and in a pipeline that is
 * the previous stage, not us. The file descriptor stays the caller's: it is
 * fsynced and closed by the sink, after this stream finished or was destroyed.
 */
import type { FileHandle } from 'node:fs/promises';
import { Writable } from 'node:stream';

export class FileWriter extends Writable {
  /** Bytes written to the file so far. */
  bytesWritten = 0;
  readonly #handle: FileHandle;
  readonly #release: ((chunk: Uint8Array) => void) | undefined;
  /** The write in flight: destroy() waits for it, so the caller's close or unlink comes after it. */
  #writing: Promise<void> | undefined;

  constructor(handle: FileHandle, release?: (chunk: Uint8Array) => void) {
    // A WriteStream's mark: one block (1 MiB) in flight, the next waits for 'drain'.
    super({ highWaterMark: 16 * 1024 });
    this.#handle = handle;
    this.#release = release;
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    const writing = this.#writeAll(chunk);
    this.#writing = writing;
    writing.then(
      () => {
        this.#release?.(chunk);
        callback();
      },
      (err: unknown) => callback(err as Error),
    );
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    const writing = this.#writing;
    if (writing === undefined) callback(error);
    else
      writing.then(
        () => callback(error),
        () => callback(error),
      );
  }

  /** Writes all of `chunk` at the end of what was written (a regular file may take less than asked). */
  async #writeAll(chunk: Buffer): Promise<void> {
    for (let done = 0; done < chunk.length; ) {
      const { bytesWritten } = await this.#handle.write(chunk, done, chunk.length - done, this.bytesWritten);
      done += bytesWritten;
      this.bytesWritten += bytesWritten;
    }
  }
}
