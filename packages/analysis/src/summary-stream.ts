/**
 * Stream adapters for the summarizer: a Writable for `stream.pipeline` (a tee
 * of the capture's bytes), and a file reader for local snapshots.
 */
import { Writable } from 'node:stream';
import { createSummarizer } from './summarizer.ts';
import { readSnapshot, snapshotFileInfo } from './source.ts';
import type { Summary, SummaryOptions } from './summary-schema.ts';

/** A Writable that summarizes the snapshot bytes written to it. */
export class SummaryWritable extends Writable {
  private readonly summarizer;
  private result: Summary | undefined;

  constructor(options: SummaryOptions = {}) {
    super({ decodeStrings: true });
    this.summarizer = createSummarizer(options);
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    try {
      this.summarizer.write(chunk);
      callback();
    } catch (err) {
      callback(err as Error);
    }
  }

  override _final(callback: (error?: Error | null) => void): void {
    try {
      this.result = this.summarizer.end();
      callback();
    } catch (err) {
      callback(err as Error);
    }
  }

  /** The summary; only after 'finish' (pipeline resolved). */
  get summary(): Summary {
    if (this.result === undefined) throw new Error('the summary stream has not finished');
    return this.result;
  }
}

/** Summarizes a `.heapsnapshot` or `.heapsnapshot.gz` file. */
export async function summarizeFile(path: string, options: SummaryOptions = {}): Promise<Summary> {
  const info = await snapshotFileInfo(path);
  const summarizer = createSummarizer(options);
  await readSnapshot(info, (chunk) => summarizer.write(chunk));
  return summarizer.end();
}
