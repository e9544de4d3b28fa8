/**
 * A byte-level scanner for V8 heap snapshot JSON, fed Buffer chunks in order.
 *
 * A snapshot is one object: `{"snapshot":{…meta…},"nodes":[…],"edges":[…],
 * "trace_function_infos":[…],"trace_tree":[…],"samples":[…],"locations":[…],
 * "strings":[…]}`. The header is small and parsed with JSON.parse; the big
 * sections are not: `nodes` and `edges` are arrays of non-negative integers,
 * delivered to the handler in batches; `strings` is delivered string by string,
 * and only the strings the handler asks for are decoded. Everything else is
 * skipped with a bracket/quote counter. Chunk boundaries may fall anywhere
 * (inside a number, a string, an escape, a UTF-8 sequence): the scanner keeps
 * its state between chunks and copies only the bytes of wanted strings.
 *
 * Malformed or truncated input throws `snapshot_invalid` with the absolute
 * byte offset where parsing failed.
 */
import { CaptureError } from '@heapcap/errors';

/** The numeric sections the scanner parses (others are skipped). */
export type NumberSection = 'nodes' | 'edges';

/** What the scanner tells its consumer. */
export interface ScanHandler {
  /** The parsed `snapshot` header object (validated by the handler). */
  header(value: unknown, offset: number): void;
  /** Whether the handler wants the values of `section` (they are counted either way). */
  wants(section: NumberSection): boolean;
  /** `count` values of `section`, in order, in `values[0..count)`; the array is reused after the call. */
  numbers(section: NumberSection, values: Float64Array, count: number): void;
  /** Whether string `index` of the `strings` table should be decoded. */
  wantString(index: number): boolean;
  /** A wanted string, decoded. */
  string(index: number, value: string): void;
}

/** Counts of what was scanned. */
export interface ScanTotals {
  bytes: number;
  nodeValues: number;
  edgeValues: number;
  strings: number;
}

// Byte values.
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const LBRACKET = 0x5b;
const RBRACKET = 0x5d;
const LBRACE = 0x7b;
const RBRACE = 0x7d;

const isWs = (c: number): boolean => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;

const enum S {
  Begin, // expect '{'
  KeyOrEnd, // expect '"' (a key) or '}' (empty object)
  Key, // inside a key
  Colon, // expect ':'
  Value, // expect the value of `key`
  AfterValue, // expect ',' or '}'
  NextKey, // after ',': expect '"'
  Done, // only whitespace may follow
  // Numeric arrays.
  NumOpen, // expect '['
  NumStart, // expect a digit or ']' (only right after '[')
  NumIn, // inside a number
  NumAfter, // after a number: expect ',' or ']'
  NumNext, // after ',': expect a digit
  // The strings array.
  StrOpen,
  StrStart, // expect '"' or ']' (only right after '[')
  StrIn,
  StrEscape,
  StrAfter, // expect ',' or ']'
  StrNext, // after ',': expect '"'
  // Skipping (and optionally capturing) any other value.
  SkipStart,
  Skip,
  SkipStr,
  SkipStrEscape,
  SkipScalar,
}

const BATCH = 16_384;
/** The header is a few KB; anything bigger is not a V8 snapshot header. */
const MAX_HEADER_BYTES = 4 * 1024 * 1024;
const MAX_KEY_BYTES = 64;

/** Incremental scanner; call `write` for each chunk, then `end`. */
export class SnapshotScanner {
  private state = S.Begin;
  private consumed = 0;
  private key = '';
  private keyBytes: number[] = [];
  private readonly seen = new Set<string>();
  private headerSeen = false;
  // Numbers.
  private section: NumberSection | undefined;
  private deliver = false;
  private num = 0;
  private readonly batch = new Float64Array(BATCH);
  private batchLen = 0;
  private readonly counts = { nodes: 0, edges: 0 };
  // Strings.
  private stringIndex = 0;
  private wanted = false;
  private readonly pieces: Buffer[] = [];
  private escaped = false;
  // Skipping.
  private depth = 0;
  private capture: Buffer[] | undefined;
  private captureBytes = 0;

  constructor(private readonly handler: ScanHandler) {}

  /** Feed the next chunk. Throws `snapshot_invalid` at the first malformed byte. */
  write(chunk: Buffer): void {
    const n = chunk.length;
    let i = 0;
    while (i < n) {
      switch (this.state) {
        case S.NumIn:
        case S.NumStart:
        case S.NumNext:
        case S.NumAfter:
          i = this.scanNumbers(chunk, i);
          break;
        case S.StrIn:
        case S.StrEscape:
          i = this.scanString(chunk, i);
          break;
        case S.Skip:
        case S.SkipStr:
        case S.SkipStrEscape:
        case S.SkipScalar:
          i = this.scanSkip(chunk, i);
          break;
        default:
          i = this.scanStructure(chunk, i);
      }
    }
    this.consumed += n;
  }

  /** Call after the last chunk: fails when the JSON is not complete. */
  end(): ScanTotals {
    if (this.state !== S.Done) this.fail(this.consumed, 'the snapshot ends early (truncated)');
    return { bytes: this.consumed, nodeValues: this.counts.nodes, edgeValues: this.counts.edges, strings: this.stringIndex };
  }

  /** Bytes consumed so far. */
  get bytes(): number {
    return this.consumed;
  }

  private fail(offset: number, what: string): never {
    throw invalidSnapshot(offset, what);
  }

  private unexpected(chunk: Buffer, i: number, expected: string): never {
    const c = chunk[i] as number;
    const shown = c >= 0x20 && c < 0x7f ? `"${String.fromCharCode(c)}"` : `byte 0x${c.toString(16).padStart(2, '0')}`;
    this.fail(this.consumed + i, `expected ${expected}, found ${shown}`);
  }

  /** The object structure around the sections: keys, colons, commas. */
  private scanStructure(chunk: Buffer, i: number): number {
    const c = chunk[i] as number;
    switch (this.state) {
      case S.Begin:
        if (isWs(c)) return i + 1;
        if (c !== LBRACE) this.unexpected(chunk, i, 'a heap snapshot ("{")');
        this.state = S.KeyOrEnd;
        return i + 1;
      case S.KeyOrEnd:
      case S.NextKey:
        if (isWs(c)) return i + 1;
        if (c === RBRACE && this.state === S.KeyOrEnd) return this.finish(i);
        if (c !== QUOTE) this.unexpected(chunk, i, 'a key');
        this.keyBytes = [];
        this.state = S.Key;
        return i + 1;
      case S.Key:
        if (c === QUOTE) {
          this.key = Buffer.from(this.keyBytes).toString('latin1');
          this.state = S.Colon;
          return i + 1;
        }
        if (c === BACKSLASH || this.keyBytes.length >= MAX_KEY_BYTES) this.unexpected(chunk, i, 'a short plain key');
        this.keyBytes.push(c);
        return i + 1;
      case S.Colon:
        if (isWs(c)) return i + 1;
        if (c !== COLON) this.unexpected(chunk, i, '":"');
        this.state = S.Value;
        return i + 1;
      case S.Value:
        if (isWs(c)) return i + 1;
        return this.startValue(chunk, i);
      case S.AfterValue:
        if (isWs(c)) return i + 1;
        if (c === COMMA) {
          this.state = S.NextKey;
          return i + 1;
        }
        if (c === RBRACE) return this.finish(i);
        return this.unexpected(chunk, i, '"," or "}"');
      case S.Done:
        if (!isWs(c)) this.unexpected(chunk, i, 'nothing after the end of the snapshot');
        return i + 1;
      case S.NumOpen:
        if (isWs(c)) return i + 1;
        if (c !== LBRACKET) this.unexpected(chunk, i, `an array for "${this.key}"`);
        this.state = S.NumStart;
        this.num = 0;
        return i + 1;
      case S.StrOpen:
        if (isWs(c)) return i + 1;
        if (c !== LBRACKET) this.unexpected(chunk, i, 'an array for "strings"');
        this.state = S.StrStart;
        return i + 1;
      case S.StrStart:
      case S.StrNext:
        if (isWs(c)) return i + 1;
        if (c === RBRACKET && this.state === S.StrStart) return this.endValue(i);
        if (c !== QUOTE) this.unexpected(chunk, i, 'a string');
        this.wanted = this.handler.wantString(this.stringIndex);
        this.escaped = false;
        this.pieces.length = 0; // reused: one array per string would be millions of allocations
        this.state = S.StrIn;
        return i + 1;
      case S.StrAfter:
        if (isWs(c)) return i + 1;
        if (c === COMMA) {
          this.state = S.StrNext;
          return i + 1;
        }
        if (c === RBRACKET) return this.endValue(i);
        return this.unexpected(chunk, i, '"," or "]" in "strings"');
      case S.SkipStart:
        if (isWs(c)) return i + 1;
        this.depth = 0;
        if (c === LBRACE || c === LBRACKET) {
          this.depth = 1;
          this.state = S.Skip;
        } else if (c === QUOTE) {
          this.state = S.SkipStr;
        } else if (c === COMMA || c === RBRACE || c === RBRACKET || c === COLON) {
          this.unexpected(chunk, i, 'a value');
        } else {
          this.state = S.SkipScalar;
        }
        this.captureByte(chunk, i);
        return i + 1;
      default:
        throw new Error(`scanner in unexpected state ${this.state}`);
    }
  }

  private startValue(chunk: Buffer, i: number): number {
    const key = this.key;
    if (this.seen.has(key)) this.fail(this.consumed + i, `"${key}" appears twice`);
    this.seen.add(key);
    if (!this.headerSeen && key !== 'snapshot') this.fail(this.consumed + i, `"${key}" before the "snapshot" header`);
    if (key === 'nodes' || key === 'edges') {
      if (key === 'edges' && !this.seen.has('nodes')) this.fail(this.consumed + i, '"edges" before "nodes"');
      this.section = key;
      this.deliver = this.handler.wants(key);
      this.batchLen = 0;
      this.state = S.NumOpen;
      return i;
    }
    if (key === 'strings') {
      if (!this.seen.has('edges')) this.fail(this.consumed + i, '"strings" before "nodes" and "edges"');
      this.stringIndex = 0;
      this.state = S.StrOpen;
      return i;
    }
    if (key === 'snapshot') {
      this.capture = [];
      this.captureBytes = 0;
    }
    this.state = S.SkipStart;
    return i;
  }

  /** A section's value ended at byte `i` (its closing bracket, consumed). */
  private endValue(i: number): number {
    this.state = S.AfterValue;
    return i + 1;
  }

  private finish(i: number): number {
    for (const required of ['snapshot', 'nodes', 'edges', 'strings']) {
      if (!this.seen.has(required)) this.fail(this.consumed + i, `the snapshot has no "${required}"`);
    }
    this.state = S.Done;
    return i + 1;
  }

  private flushNumbers(): void {
    if (this.batchLen > 0 && this.deliver) this.handler.numbers(this.section as NumberSection, this.batch, this.batchLen);
    this.batchLen = 0;
  }

  /** The hot loop: a non-negative integer array. */
  private scanNumbers(chunk: Buffer, start: number): number {
    const n = chunk.length;
    const batch = this.batch;
    const deliver = this.deliver;
    let len = this.batchLen;
    let v = this.num;
    let state = this.state;
    let count = 0;
    let i = start;
    for (; i < n; i++) {
      const c = chunk[i] as number;
      const d = c - 48;
      if (d >= 0 && d <= 9) {
        if (state === S.NumAfter) break; // "1 2": a digit after whitespace ends in an error below
        v = v * 10 + d;
        state = S.NumIn;
        continue;
      }
      if (c === COMMA) {
        if (state !== S.NumIn && state !== S.NumAfter) break;
        count++;
        state = S.NumNext;
        // A section nobody wants (the summary's edges) is only counted.
        if (deliver) {
          batch[len++] = v;
          if (len === BATCH) {
            this.batchLen = len;
            this.flushNumbers();
            len = 0;
          }
        }
        v = 0;
        continue;
      }
      if (c === RBRACKET) {
        if (state === S.NumNext) break;
        if (state === S.NumIn || state === S.NumAfter) {
          if (deliver) batch[len++] = v;
          count++;
        }
        this.batchLen = len;
        this.flushNumbers();
        this.counts[this.section as NumberSection] += count;
        this.num = 0;
        return this.endValue(i);
      }
      if (isWs(c)) {
        if (state === S.NumIn) state = S.NumAfter;
        continue;
      }
      break;
    }
    this.batchLen = len;
    this.num = v;
    this.state = state;
    this.counts[this.section as NumberSection] += count;
    if (i < n) this.unexpected(chunk, i, `a non-negative integer, "," or "]" in "${this.section}"`);
    return i;
  }

  /** Inside a string of the strings table: find its closing quote, keep its bytes when wanted. */
  private scanString(chunk: Buffer, start: number): number {
    const n = chunk.length;
    let i = start;
    let escaped = this.state === S.StrEscape;
    for (; i < n; i++) {
      const c = chunk[i] as number;
      if (escaped) {
        escaped = false;
        continue;
      }
      if (c === BACKSLASH) {
        escaped = true;
        this.escaped = true;
        continue;
      }
      if (c === QUOTE) break;
      if (c < 0x20) this.fail(this.consumed + i, 'a control character inside a string');
    }
    if (this.wanted && i > start) this.pieces.push(chunk.subarray(start, i));
    if (i === n) {
      this.state = escaped ? S.StrEscape : S.StrIn;
      // The chunk may be reused by its producer: keep copies of what spans chunks.
      if (this.wanted && this.pieces.length > 0) this.pieces[this.pieces.length - 1] = Buffer.from(this.pieces[this.pieces.length - 1] as Buffer);
      return n;
    }
    if (this.wanted) this.handler.string(this.stringIndex, this.decode(i));
    this.stringIndex++;
    this.pieces.length = 0;
    this.state = S.StrAfter;
    return i + 1;
  }

  private decode(at: number): string {
    const bytes = this.pieces.length === 1 ? (this.pieces[0] as Buffer) : Buffer.concat(this.pieces);
    const text = bytes.toString('utf8');
    if (!this.escaped) return text;
    try {
      return JSON.parse(`"${text}"`) as string;
    } catch {
      return this.fail(this.consumed + at, `an invalid escape in string ${this.stringIndex}`);
    }
  }

  private captureByte(chunk: Buffer, i: number): void {
    if (this.capture !== undefined) this.captureRange(chunk, i, i + 1);
  }

  private captureRange(chunk: Buffer, from: number, to: number): void {
    if (this.capture === undefined || to <= from) return;
    this.captureBytes += to - from;
    if (this.captureBytes > MAX_HEADER_BYTES) this.fail(this.consumed + to, `a "snapshot" header larger than ${MAX_HEADER_BYTES} bytes`);
    this.capture.push(Buffer.from(chunk.subarray(from, to)));
  }

  /** Skips any JSON value (objects, arrays, strings, scalars), capturing it when it is the header. */
  private scanSkip(chunk: Buffer, start: number): number {
    const n = chunk.length;
    let i = start;
    let state = this.state;
    let depth = this.depth;
    let done = false;
    for (; i < n; i++) {
      const c = chunk[i] as number;
      if (state === S.SkipStr || state === S.SkipStrEscape) {
        if (state === S.SkipStrEscape) state = S.SkipStr;
        else if (c === BACKSLASH) state = S.SkipStrEscape;
        else if (c === QUOTE) {
          state = S.Skip;
          if (depth === 0) {
            i++;
            done = true;
            break;
          }
        }
        continue;
      }
      if (state === S.SkipScalar) {
        if (c === COMMA || c === RBRACE || isWs(c)) {
          done = true;
          break;
        }
        continue;
      }
      if (c === QUOTE) state = S.SkipStr;
      else if (c === LBRACE || c === LBRACKET) depth++;
      else if (c === RBRACE || c === RBRACKET) {
        depth--;
        if (depth === 0) {
          i++;
          done = true;
          break;
        }
      }
    }
    this.captureRange(chunk, start, i);
    this.depth = depth;
    this.state = state;
    if (!done) return i;
    this.state = S.AfterValue;
    if (this.capture !== undefined) this.endHeader(i);
    return i;
  }

  private endHeader(i: number): void {
    const text = Buffer.concat(this.capture as Buffer[]).toString('utf8');
    this.capture = undefined;
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (err) {
      this.fail(this.consumed + i, `a parsable "snapshot" header (${(err as Error).message})`);
    }
    this.headerSeen = true;
    this.handler.header(value, this.consumed + i);
  }
}

/** `snapshot_invalid` at `offset`, with what was wrong. */
export function invalidSnapshot(offset: number, what: string): CaptureError {
  return new CaptureError('snapshot_invalid', `not a valid heap snapshot at byte ${offset}: ${what}`, {
    hint: 'the file is truncated or is not a V8 heap snapshot (.heapsnapshot JSON, optionally gzipped); take a new capture, or check the file was fully downloaded',
    details: { offset },
  });
}
