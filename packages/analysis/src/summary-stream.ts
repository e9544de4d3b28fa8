/**
 * Stream adapters for the summarizer: a Writable for `stream.pipeline` (a tee
 * of the capture's bytes), and a file reader for local snapshots.
 */
import { Transform, Writable } from 'node:stream';
import { toCaptureError, type CaptureError } from '@heapcap/errors';
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

/** What a {@link SummaryTee} produced: the summary, or why there is none. */
export type SummaryOutcome = { ok: true; summary: Summary } | { ok: false; error: CaptureError };

/**
 * A pass-through for the capture pipeline (`pipeline(snapshot, tee, sink)`):
 * every chunk goes on unchanged and is summarized on the way. A summary that
 * fails (an unexpected snapshot shape) never fails the capture: the tee stops
 * summarizing and `outcome` says why. Put it behind the engine's spill buffer
 * (it reads what the sink reads), so it can never slow the target's socket.
 */
export class SummaryTee extends Transform {
  private readonly summarizer;
  private state: SummaryOutcome | { ok: undefined; error?: undefined } = { ok: undefined };

  constructor(options: SummaryOptions = {}) {
    super();
    this.summarizer = createSummarizer(options);
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null, data?: Buffer) => void): void {
    if (this.state.ok === undefined) {
      try {
        this.summarizer.write(chunk);
      } catch (err) {
        this.state = { ok: false, error: toCaptureError(err) };
      }
    }
    callback(null, chunk);
  }

  override _flush(callback: (error?: Error | null) => void): void {
    if (this.state.ok === undefined) {
      try {
        this.state = { ok: true, summary: this.summarizer.end() };
      } catch (err) {
        this.state = { ok: false, error: toCaptureError(err) };
      }
    }
    callback();
  }

  /** The summary or its error; only after the stream finished. */
  get outcome(): SummaryOutcome {
    if (this.state.ok === undefined) throw new Error('the summary tee has not finished');
    return this.state;
  }
}

/** Summarizes a `.heapsnapshot` or `.heapsnapshot.gz` file. */
export async function summarizeFile(path: string, options: SummaryOptions = {}): Promise<Summary> {
  const info = await snapshotFileInfo(path);
  const summarizer = createSummarizer(options);
  await readSnapshot(info, (chunk) => summarizer.write(chunk));
  return summarizer.end();
}
