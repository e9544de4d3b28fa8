/** A pino destination that keeps every JSON log line, for tests that assert on logs (redaction, outcome lines). */
import { Writable } from 'node:stream';

/** The stream to give pino, and the lines written to it so far. */
export interface JsonLogSink {
  stream: Writable;
  /** Raw lines, in order. */
  text(): string[];
  /** Lines parsed as JSON objects, in order. */
  lines(): Record<string, unknown>[];
}

/** A new sink; every `write` may carry several lines. */
export function jsonLogSink(): JsonLogSink {
  const raw: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, cb) {
      raw.push(...chunk.toString('utf8').split('\n').filter((l) => l !== ''));
      cb();
    },
  });
  return { stream, text: () => [...raw], lines: () => raw.map((l) => JSON.parse(l) as Record<string, unknown>) };
}
