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
 * Speed (the summary runs on the capture's main thread, issue 14): each hot
 * section has a fast path for the exact layout V8 writes, and falls back to
 * the byte-by-byte state machine for anything else (other whitespace, the
 * section's end, a chunk boundary, an error):
 * - numbers: `digits,` and `digits\n,` in WebAssembly (numbers.wat: counted
 *   16 bytes at a time with SIMD where nobody wants the values, parsed where
 *   the handler does), then in one tight JavaScript loop, no state per byte;
 * - strings nobody wants (nearly all of them): the closing quote is found with
 *   the native `Buffer#indexOf`, then the backslashes before it are counted;
 * - skipped values (`locations`): native `indexOf` jumps to the next quote or
 *   bracket.
 *
 * Malformed or truncated input throws `snapshot_invalid` with the absolute
 * byte offset where parsing failed. Not checked any more: raw control
 * characters inside strings that are skipped (V8 never writes them; a
 * corruption that breaks the structure is still reported at the control
 * character when it lies in the same chunk), and escapes in skipped strings
 * (never checked: only decoded strings are parsed).
 */
import { CaptureError } from '@heapcap/errors';
import { NUMBERS_BATCH, NumberKernel } from './numbers.ts';

/** The numeric sections the scanner parses (others are skipped). */
export type NumberSection = 'nodes' | 'edges';
/** Every flat integer array the scanner can parse: the trace's function infos only for a handler that reads them. */
type IntSection = NumberSection | 'trace_function_infos';

/** What the scanner tells its consumer. */
export interface ScanHandler {
  /** The parsed `snapshot` header object (validated by the handler). */
  header(value: unknown, offset: number): void;
  /** Whether the handler wants the values of `section` (they are counted either way). */
  wants(section: NumberSection): boolean;
  /** `count` values of `section`, in order, in `values[0..count)`; the array is reused after the call. */
  numbers(section: NumberSection, values: Float64Array, count: number): void;
  /**
   * The index of the next string of the `strings` table to decode, at or after
   * `from` (`Infinity` when none). Called with non-decreasing `from`, once when
   * the table starts and after each decoded string, so strings in between are
   * skipped without a call each.
   */
  nextWantedString(from: number): number;
  /** A wanted string, decoded. */
  string(index: number, value: string): void;
  /**
   * The `strings` table opens at absolute byte `offset` (its `[`). Returning
   * true stops the scanner there: it ignores every byte after (the redactor
   * rewrites the table itself).
   */
  stringsOpen?(offset: number): boolean;
  /**
   * Values of `trace_function_infos` (the allocation tracker's functions, in
   * the header's `trace_function_info_fields`), like {@link numbers}; the
   * section is skipped for a handler without this method.
   */
  traceFunctionInfos?(values: Float64Array, count: number): void;
  /**
   * The `trace_tree` (nested arrays: each node's fields then the array of its
   * children), as events: `[` opens an array, a value, `]` closes one. The
   * section is skipped for a handler without this method.
   */
  traceTree?(event: 'open' | 'close' | 'value', value: number): void;
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

const NEWLINE = 0x0a;

const isWs = (c: number): boolean => c === 0x20 || c === NEWLINE || c === 0x0d || c === 0x09;

const S = {
  Begin: 0, // expect '{'
  KeyOrEnd: 1, // expect '"' (a key) or '}' (empty object)
  Key: 2, // inside a key
  Colon: 3, // expect ':'
  Value: 4, // expect the value of `key`
  AfterValue: 5, // expect ',' or '}'
  NextKey: 6, // after ',': expect '"'
  Done: 7, // only whitespace may follow
  // Numeric arrays.
  NumOpen: 8, // expect '['
  NumStart: 9, // expect a digit or ']' (only right after '[')
  NumIn: 10, // inside a number
  NumAfter: 11, // after a number: expect ',' or ']'
  NumNext: 12, // after ',': expect a digit
  // The strings array.
  StrOpen: 13,
  StrStart: 14, // expect '"' or ']' (only right after '[')
  StrIn: 15,
  StrEscape: 16,
  StrAfter: 17, // expect ',' or ']'
  StrNext: 18, // after ',': expect '"'
  // Skipping (and optionally capturing) any other value.
  SkipStart: 19,
  Skip: 20,
  SkipStr: 21,
  SkipStrEscape: 22,
  SkipScalar: 23,
  Tree: 24, // inside trace_tree (nested integer arrays)
  Stopped: 25, // the handler took over at the strings table: nothing more is scanned
} as const;
type S = (typeof S)[keyof typeof S];

const BATCH = NUMBERS_BATCH;
/** Below this many bytes left in a chunk the JavaScript loops take the numbers (a copy into WebAssembly memory is not worth it). */
const KERNEL_MIN_BYTES = 64;
/**
 * Bytes one call of a number fast path takes at most. Why: the loops run for
 * a whole chunk per call, so V8 compiles them on-stack before the code after
 * the loop ever ran; that code then deoptimized at every chunk's end (1,312
 * deopts for a 518 MB snapshot in 100 KiB chunks, Node 20), ~100 ms. Short
 * calls reach the loop's exit before it is compiled.
 */
const SLICE = 8192;
/** The header is a few KB; anything bigger is not a V8 snapshot header. */
const MAX_HEADER_BYTES = 4 * 1024 * 1024;
const MAX_KEY_BYTES = 64;

/** Incremental scanner; call `write` for each chunk, then `end`. */
export class SnapshotScanner {
  private state: S = S.Begin;
  private consumed = 0;
  private key = '';
  private keyBytes: number[] = [];
  private readonly seen = new Set<string>();
  private headerSeen = false;
  // Numbers.
  private section: IntSection | undefined;
  private deliver = false;
  private num = 0;
  private readonly kernel = NumberKernel.take();
  private kernelReleased = false;
  /** In the kernel's memory: it parses straight into it. */
  private readonly batch = this.kernel.batch;
  private batchLen = 0;
  private readonly counts = { nodes: 0, edges: 0, trace_function_infos: 0 };
  // trace_tree: array depth, and whether a number is being read.
  private treeDepth = 0;
  private treeInNumber = false;
  // Strings.
  private stringIndex = 0;
  private nextWanted = Infinity;
  /** Absolute offset of the current (or last) string's first byte. */
  private stringStart = 0;
  private wanted = false;
  private readonly pieces: Buffer[] = [];
  private escaped = false;
  // Skipping.
  private depth = 0;
  private capture: Buffer[] | undefined;
  private captureBytes = 0;

  private readonly handler: ScanHandler;

  constructor(handler: ScanHandler) {
    this.handler = handler;
  }

  /** Feed the next chunk. Throws `snapshot_invalid` at the first malformed byte. */
  write(chunk: Buffer): void {
    const n = chunk.length;
    let i = 0;
    while (i < n) {
      switch (this.state) {
        case S.NumNext:
          i = this.fastNumbers(chunk, i);
          break;
        case S.NumIn:
        case S.NumStart:
        case S.NumAfter:
          i = this.scanNumbers(chunk, i);
          break;
        case S.StrIn:
        case S.StrEscape:
          i = this.wanted ? this.scanString(chunk, i) : this.skipStrings(chunk, i);
          break;
        case S.Skip:
        case S.SkipStr:
        case S.SkipStrEscape:
        case S.SkipScalar:
          i = this.scanSkip(chunk, i);
          break;
        case S.Tree:
          i = this.scanTree(chunk, i);
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
    this.releaseKernel();
    return { bytes: this.consumed, nodeValues: this.counts.nodes, edgeValues: this.counts.edges, strings: this.stringIndex };
  }

  /** Done: nothing reads the batch any more (a scanner that failed keeps its kernel, for the GC). */
  private releaseKernel(): void {
    if (!this.kernelReleased) {
      this.kernelReleased = true;
      this.kernel.release();
    }
  }

  /** Bytes consumed so far. */
  get bytes(): number {
    return this.consumed;
  }

  private fail(offset: number, what: string): never {
    throw invalidSnapshot(offset, what);
  }

  private unexpected(chunk: Buffer, i: number, expected: string): never {
    if (this.state === S.StrAfter) this.controlCharacter(chunk, i);
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
      case S.Stopped:
        return chunk.length;
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
        if (this.handler.stringsOpen?.(this.consumed + i) === true) {
          this.state = S.Stopped;
          this.releaseKernel();
          return chunk.length;
        }
        this.state = S.StrStart;
        this.nextWanted = this.handler.nextWantedString(0);
        return i + 1;
      case S.StrStart:
      case S.StrNext:
        if (isWs(c)) return i + 1;
        if (c === RBRACKET && this.state === S.StrStart) return this.endValue(i);
        if (c !== QUOTE) this.unexpected(chunk, i, 'a string');
        this.wanted = this.stringIndex === this.nextWanted;
        this.stringStart = this.consumed + i + 1;
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
    if (key === 'trace_function_infos' && this.handler.traceFunctionInfos !== undefined) {
      this.section = key;
      this.deliver = true;
      this.batchLen = 0;
      this.state = S.NumOpen;
      return i;
    }
    if (key === 'trace_tree' && this.handler.traceTree !== undefined) {
      this.treeDepth = 0;
      this.treeInNumber = false;
      this.num = 0;
      this.state = S.Tree;
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

  /** One value into the batch (the state machine's path; the fast path does this inline). */
  private push(v: number): void {
    this.batch[this.batchLen++] = v;
    if (this.batchLen === BATCH) this.flushNumbers();
  }

  private flushNumbers(): void {
    if (this.batchLen > 0 && this.deliver) {
      if (this.section === 'trace_function_infos') this.handler.traceFunctionInfos?.(this.batch, this.batchLen);
      else this.handler.numbers(this.section as NumberSection, this.batch, this.batchLen);
    }
    this.batchLen = 0;
  }

  /**
   * An integer array at the start of a value: a window of the chunk goes to
   * the WebAssembly kernel (numbers.wat), which takes whole `digits,` and
   * `digits\n,` values and stops at anything else. What it leaves (a chunk's
   * last bytes, the array's end, other whitespace, an error, a value of more
   * than 15 digits) goes to the JavaScript loops below, which go on until the
   * next comma: offsets and errors stay the state machine's.
   * Measured on the 153 MB of nodes and 235 MB of edges of a 525 MB Node 22
   * snapshot (Node 20.20, CPU, copies in included): nodes 137-158 ms parsed
   * against ~210 in JavaScript, edges 74-95 ms counted against ~230.
   */
  private fastNumbers(chunk: Buffer, start: number): number {
    if (chunk.length - start >= KERNEL_MIN_BYTES) {
      let taken: number;
      if (this.deliver) {
        // A batch nearly full would give the kernel a window too short for a value: hand it over first.
        if (this.batchLen > BATCH - 1024) this.flushNumbers();
        taken = this.kernel.parse(chunk, start, this.batchLen);
        this.batchLen += this.kernel.count;
        if (this.batchLen === BATCH) this.flushNumbers();
      } else {
        taken = this.kernel.skip(chunk, start);
      }
      if (taken > 0) {
        this.counts[this.section as IntSection] += this.kernel.count;
        return start + taken;
      }
    }
    return this.deliver ? this.parseNumbers(chunk, start) : this.countNumbers(chunk, start);
  }

  /**
   * The JavaScript loop of an integer array whose values are wanted, at the
   * start of a value: V8 writes `digits,` and `digits\n,` (a newline after
   * each node and edge), so those need no state per byte. Anything else
   * (other whitespace, the closing `]`, an error) goes to {@link scanNumbers}
   * with the state it expects.
   * Measured on a 518 MB Node 20 snapshot: ~1.4 ns per byte of nodes (values
   * delivered) against ~2.0 for the state machine (210 vs 310 ms for 153 MB).
   */
  private parseNumbers(chunk: Buffer, start: number): number {
    const n = Math.min(chunk.length, start + SLICE);
    const batch = this.batch;
    let len = this.batchLen;
    let count = 0;
    let state: S = S.NumNext;
    let v = 0;
    let i = start;
    while (i < n) {
      let c = chunk[i] as number;
      v = c - 48;
      if (v >>> 0 > 9) {
        v = 0;
        break; // whitespace or an error: the state machine decides
      }
      i++;
      state = S.NumIn;
      for (; i < n; i++) {
        c = chunk[i] as number;
        const d = c - 48;
        if (d >>> 0 > 9) break;
        v = v * 10 + d;
      }
      if (i === n) break;
      if (c === NEWLINE) {
        state = S.NumAfter;
        if (++i === n) break;
        c = chunk[i] as number;
      }
      if (c !== COMMA) break;
      i++;
      count++;
      state = S.NumNext;
      batch[len++] = v;
      if (len === BATCH) {
        this.batchLen = len;
        this.flushNumbers();
        len = 0;
      }
      v = 0;
    }
    this.batchLen = len;
    this.num = v;
    this.state = state;
    this.counts[this.section as IntSection] += count;
    return i < n ? this.scanNumbers(chunk, i) : i;
  }

  /**
   * {@link parseNumbers} for a section nobody wants (the summary's edges, 44%
   * of a snapshot): the values are only counted, so their digits are only
   * checked. Its own loop on purpose: ~1.0 ns per byte against ~1.16 with the
   * values computed and batched (230 vs 265 ms for the 229 MB of edges of a
   * 518 MB snapshot, Node 20).
   */
  private countNumbers(chunk: Buffer, start: number): number {
    const n = Math.min(chunk.length, start + SLICE);
    let count = 0;
    let state: S = S.NumNext;
    let i = start;
    while (i < n) {
      let c = chunk[i] as number;
      if ((c - 0x30) >>> 0 > 9) break;
      state = S.NumIn;
      for (i++; i < n; i++) {
        c = chunk[i] as number;
        if ((c - 0x30) >>> 0 > 9) break;
      }
      if (i === n) break;
      if (c === NEWLINE) {
        state = S.NumAfter;
        if (++i === n) break;
        c = chunk[i] as number;
      }
      if (c !== COMMA) break;
      i++;
      count++;
      state = S.NumNext;
    }
    this.num = 0; // nobody reads the values of a counted section
    this.state = state;
    this.counts[this.section as IntSection] += count;
    return i < n ? this.scanNumbers(chunk, i) : i;
  }

  /**
   * The state machine of an integer array, byte by byte: runs until a value
   * ended with a comma (then {@link fastNumbers} takes over again), the array
   * ended, or the chunk did.
   */
  private scanNumbers(chunk: Buffer, start: number): number {
    const n = chunk.length;
    const deliver = this.deliver;
    let v = this.num;
    let state = this.state;
    let count = 0;
    let bad = false;
    let i = start;
    for (; i < n; i++) {
      const c = chunk[i] as number;
      const d = c - 48;
      if (d >= 0 && d <= 9) {
        if (state === S.NumAfter) {
          bad = true; // "1 2": a digit after whitespace
          break;
        }
        v = v * 10 + d;
        state = S.NumIn;
        continue;
      }
      if (c === COMMA) {
        if (state !== S.NumIn && state !== S.NumAfter) {
          bad = true;
          break;
        }
        count++;
        state = S.NumNext;
        if (deliver) this.push(v);
        v = 0;
        i++;
        break; // back to the fast path
      }
      if (c === RBRACKET) {
        if (state === S.NumNext) {
          bad = true;
          break;
        }
        if (state === S.NumIn || state === S.NumAfter) {
          if (deliver) this.push(v);
          count++;
        }
        this.flushNumbers();
        this.counts[this.section as IntSection] += count;
        this.num = 0;
        return this.endValue(i);
      }
      if (isWs(c)) {
        if (state === S.NumIn) state = S.NumAfter;
        continue;
      }
      bad = true;
      break;
    }
    this.num = v;
    this.state = state;
    this.counts[this.section as IntSection] += count;
    if (bad) this.unexpected(chunk, i, `a non-negative integer, "," or "]" in "${this.section}"`);
    return i;
  }

  /**
   * The `trace_tree`: nested arrays of non-negative integers, byte by byte
   * (a few KB to a few MB: one node per distinct allocation stack), delivered
   * as open/value/close events; ends after the outermost `]`.
   */
  private scanTree(chunk: Buffer, start: number): number {
    const n = chunk.length;
    const handler = this.handler;
    for (let i = start; i < n; i++) {
      const c = chunk[i] as number;
      const d = c - 48;
      if (d >= 0 && d <= 9) {
        if (this.treeDepth === 0) this.unexpected(chunk, i, 'an array for "trace_tree"');
        this.num = this.treeInNumber ? this.num * 10 + d : d;
        this.treeInNumber = true;
        continue;
      }
      if (this.treeInNumber) {
        handler.traceTree?.('value', this.num);
        this.treeInNumber = false;
        this.num = 0;
      }
      if (c === LBRACKET) {
        this.treeDepth++;
        handler.traceTree?.('open', 0);
      } else if (c === RBRACKET) {
        if (this.treeDepth === 0) this.unexpected(chunk, i, 'an array for "trace_tree"');
        handler.traceTree?.('close', 0);
        if (--this.treeDepth === 0) return this.endValue(i);
      } else if (c !== COMMA && !isWs(c)) {
        this.unexpected(chunk, i, 'a non-negative integer, "[", "," or "]" in "trace_tree"');
      } else if (c === COMMA && this.treeDepth === 0) {
        this.unexpected(chunk, i, 'an array for "trace_tree"');
      }
    }
    return n;
  }

  /**
   * Inside a string nobody wants, and the unwanted strings after it: the
   * closing quote is the first `"` after an even run of backslashes (an odd
   * run escapes it). `indexOf` finds it natively: 55 ms for the 105 MB, 3.7 M
   * strings of a 518 MB snapshot, against 130 ms for a JavaScript loop over
   * the bytes. Between strings, V8's `,\n"` is taken here too; anything else
   * (the table's end, other whitespace, a wanted string) goes back to the
   * state machine.
   */
  private skipStrings(chunk: Buffer, start: number): number {
    const n = chunk.length;
    let i = start;
    if (this.state === S.StrEscape) {
      i++; // the byte after a backslash that ended the previous chunk
      this.state = S.StrIn;
    }
    while (i < n) {
      const q = chunk.indexOf(QUOTE, i);
      if (q < 0) {
        // The string goes on in the next chunk: does it end in an odd run of backslashes?
        let k = n;
        while (k > i && chunk[k - 1] === BACKSLASH) k--;
        if (((n - k) & 1) === 1) this.state = S.StrEscape;
        return n;
      }
      let k = q;
      while (k > i && chunk[k - 1] === BACKSLASH) k--;
      if (((q - k) & 1) === 1) {
        i = q + 1; // an escaped quote
        continue;
      }
      this.stringIndex++;
      if (chunk[q + 1] === COMMA) {
        let open = q + 2;
        if (chunk[open] === NEWLINE) open++;
        if (chunk[open] === QUOTE && this.stringIndex < this.nextWanted) {
          i = open + 1;
          this.stringStart = this.consumed + i;
          continue;
        }
      }
      this.state = S.StrAfter;
      return q + 1;
    }
    return i;
  }

  /**
   * Skipped strings are not checked for raw control characters (that would
   * cost a look at every byte). When the structure after one breaks, a
   * control character in it (still in this chunk) is the likelier culprit:
   * report that.
   */
  private controlCharacter(chunk: Buffer, at: number): void {
    const closing = at > 0 ? chunk.lastIndexOf(QUOTE, at - 1) : -1;
    for (let k = Math.max(0, this.stringStart - this.consumed); k < closing; k++) {
      if ((chunk[k] as number) < 0x20) this.fail(this.consumed + k, 'a control character inside a string');
    }
  }

  /** Inside a wanted string of the strings table: find its closing quote, keep its bytes, check them for control characters. */
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
    if (i > start) this.pieces.push(chunk.subarray(start, i));
    if (i === n) {
      this.state = escaped ? S.StrEscape : S.StrIn;
      // The chunk may be reused by its producer: keep copies of what spans chunks.
      if (this.pieces.length > 0) this.pieces[this.pieces.length - 1] = Buffer.from(this.pieces[this.pieces.length - 1] as Buffer);
      return n;
    }
    this.handler.string(this.stringIndex, this.decode(i));
    this.stringIndex++;
    this.nextWanted = this.handler.nextWantedString(this.stringIndex);
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
    // Where the next quote and brackets are (found natively, searched again once passed; -1: not yet).
    let quote = -1;
    let open = -1;
    let close = -1;
    let openBrace = -1;
    let closeBrace = -1;
    for (; i < n; i++) {
      let c = chunk[i] as number;
      if (state === S.Skip && c !== QUOTE && c !== LBRACKET && c !== RBRACKET && c !== LBRACE && c !== RBRACE) {
        // Jump to the next byte that opens or closes anything: `locations` (6% of a
        // Node snapshot, digits and commas) costs a few memchr calls per chunk.
        if (quote < i) quote = indexOr(chunk, QUOTE, i);
        if (open < i) open = indexOr(chunk, LBRACKET, i);
        if (close < i) close = indexOr(chunk, RBRACKET, i);
        if (openBrace < i) openBrace = indexOr(chunk, LBRACE, i);
        if (closeBrace < i) closeBrace = indexOr(chunk, RBRACE, i);
        i = Math.min(quote, open, close, openBrace, closeBrace);
        if (i === n) break;
        c = chunk[i] as number;
      }
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

/** The position of the first `byte` at or after `from` in `chunk`, or its length. */
function indexOr(chunk: Buffer, byte: number, from: number): number {
  const at = chunk.indexOf(byte, from);
  return at < 0 ? chunk.length : at;
}

/** `snapshot_invalid` at `offset`, with what was wrong. */
export function invalidSnapshot(offset: number, what: string): CaptureError {
  return new CaptureError('snapshot_invalid', `not a valid heap snapshot at byte ${offset}: ${what}`, {
    hint: 'the file is truncated or is not a V8 heap snapshot (.heapsnapshot JSON, optionally gzipped); take a new capture, or check the file was fully downloaded',
    details: { offset },
  });
}
