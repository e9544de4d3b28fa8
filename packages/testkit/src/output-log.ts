import type { Readable } from 'node:stream';

// Fixtures print little, but a misbehaving child must not grow the test
// process without bound: keep only the tail of the text.
const MAX_TEXT = 1 << 20;

/** Collects a child's output stream as text and complete lines, with deadline-bound waits. */
export class OutputLog {
  #text = '';
  #partial = '';
  readonly #lines: string[] = [];
  readonly #listeners = new Set<() => void>();
  #ended = false;

  constructor(stream: Readable) {
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => this.#push(chunk));
    stream.on('close', () => {
      this.#ended = true;
      this.#notify();
    });
  }

  /** Everything read so far (the last MiB). */
  text(): string {
    return this.#text;
  }

  /** Complete lines read so far. */
  lines(): readonly string[] {
    return this.#lines;
  }

  /** Number of complete lines read so far; a cursor for {@link waitLine}. */
  lineCount(): number {
    return this.#lines.length;
  }

  /**
   * Resolves with the first complete line at index >= `from` that matches;
   * rejects at the deadline, or when the stream ends without one.
   */
  waitLine(match: (line: string) => boolean, from: number, timeoutMs: number, what: string): Promise<string> {
    return new Promise((resolve, reject) => {
      let next = from;
      const check = (): void => {
        for (; next < this.#lines.length; next++) {
          const line = this.#lines[next] as string;
          if (match(line)) return done(undefined, line);
        }
        if (this.#ended) done(new Error(`stream ended before ${what}`));
      };
      const timer = setTimeout(() => done(new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)), timeoutMs);
      const done = (err: Error | undefined, line?: string): void => {
        clearTimeout(timer);
        this.#listeners.delete(check);
        if (err) reject(err);
        else resolve(line as string);
      };
      this.#listeners.add(check);
      check();
    });
  }

  #push(chunk: string): void {
    this.#text += chunk;
    if (this.#text.length > MAX_TEXT) this.#text = this.#text.slice(-MAX_TEXT);
    const parts = (this.#partial + chunk).split('\n');
    this.#partial = parts.pop() ?? '';
    for (const p of parts) this.#lines.push(p.replace(/\r$/, ''));
    if (parts.length > 0) this.#notify();
  }

  #notify(): void {
    for (const l of [...this.#listeners]) l();
  }
}
