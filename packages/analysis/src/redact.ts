/**
 * Redaction of a heap snapshot's string values while it streams (issue 27).
 *
 * The strings table comes last in V8's JSON, after the nodes and edges that
 * refer to it by index. So while the nodes and edges pass through unchanged,
 * the redactor marks in a bitset every string index used as a *name*: the name
 * of a node that is not a string (an object's class, a closure's function, a
 * code (a script's node is named after its URL: script names stay), hidden,
 * native or synthetic node, a symbol's description, a regexp's
 * source, a number's value when captured) and the name of every edge that has
 * one (property, internal, context, shortcut, weak; element and hidden edges
 * carry an index, not a string). When the table arrives, each string is
 * copied when a name uses it and replaced by {@link REDACTED_MARKER}
 * otherwise: the values of `string`, `concatenated string` and `sliced
 * string` nodes, and anything no node or edge names.
 *
 * DOM elements (issue 41): Chromium names each element's native node with
 * its opening tag, attribute values included. The names of native nodes are
 * marked in a second bitset, and each such literal is rewritten to the tag
 * and the attribute names (element-name.ts) instead of copied.
 *
 * Limits (docs/operations.md#redaction): V8 interns each distinct text once,
 * so a value equal to a name anywhere in the heap (a secret also used as an
 * object's key, a property name, a function name) is kept; names themselves
 * are never redacted. Only the table's text changes: node and edge counts,
 * ids, self sizes (in the nodes array) and therefore summaries, retained sizes
 * and diffs are those of the original snapshot.
 *
 * Memory: one bit per string index (a 500 MB snapshot has ~4 M strings:
 * 0.5 MB), a reused output buffer, nothing per string.
 */
import { CaptureError } from '@heapcap/errors';
import { invalidSnapshot, SnapshotScanner, type NumberSection, type ScanHandler } from './scanner.ts';
import { parseLayout, type SnapshotLayout } from './snapshot-meta.ts';
import { elementNameWithoutValues } from './element-name.ts';

/** How a snapshot is redacted: `none` keeps it as V8 wrote it, `strings` replaces every string value. */
export type RedactMode = 'none' | 'strings';

/** What replaces a redacted string (a JSON string literal, quotes included). */
export const REDACTED_MARKER = '"<redacted>"';

/** What the redactor did, for the manifest. */
export interface RedactionReport {
  mode: 'strings';
  marker: string;
  /** Entries of the strings table replaced. */
  redactedStrings: number;
  /** Entries kept because a node or edge uses them as a name. */
  keptStrings: number;
  /** Bytes of the replaced literals in the original (quotes included). */
  redactedBytes: number;
  /** Kept names rewritten: DOM elements' names without their attribute values. */
  rewrittenNames: number;
}

/** Node types whose name is the string's own text. */
const VALUE_TYPES = new Set(['string', 'concatenated string', 'sliced string']);
/** Edge types whose name_or_index is an index, not a string (V8's HeapSnapshotJSONSerializer). */
const INDEX_EDGE_TYPES = new Set(['element', 'hidden']);

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const RBRACKET = 0x5d;
const isWs = (c: number): boolean => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;

/** A growable bitset over string indices. */
class Bits {
  words: Uint32Array = new Uint32Array(1024);

  set(i: number): void {
    const w = i >>> 5;
    if (w >= this.words.length) this.grow(w);
    (this.words[w] as number) |= 1 << (i & 31);
  }

  /** Room for word `w`; returns the (new) words. */
  grow(w: number): Uint32Array {
    const grown = new Uint32Array(Math.max(w + 1, this.words.length * 2));
    grown.set(this.words);
    this.words = grown;
    return grown;
  }

  has(i: number): boolean {
    const w = i >>> 5;
    return w < this.words.length && ((this.words[w] as number) & (1 << (i & 31))) !== 0;
  }
}

/** Marks the names while the nodes and edges stream; notes where the strings table opens. */
class NameMarker implements ScanHandler {
  layout: SnapshotLayout | undefined;
  readonly names = new Bits();
  /** Names of native nodes (DOM elements among them): rewritten, not copied. */
  readonly natives = new Bits();
  stringsAt: number | undefined;
  /** Per node type / edge type: is the name field a name to keep. */
  private nodeKeeps = new Uint8Array(0);
  private edgeKeeps = new Uint8Array(0);
  /** The node type `native`'s index (-1: none). */
  private nativeType = -1;
  private field = { nodes: 0, edges: 0 };
  private type = { nodes: 0, edges: 0 };

  header(value: unknown, offset: number): void {
    const layout = parseLayout(value, offset);
    this.layout = layout;
    // 1: the name field of this type is a name to keep. A type beyond the list reads undefined: not kept.
    this.nodeKeeps = Uint8Array.from(layout.nodeTypes, (t) => (VALUE_TYPES.has(t) ? 0 : 1));
    this.edgeKeeps = Uint8Array.from(layout.edgeTypes, (t) => (INDEX_EDGE_TYPES.has(t) ? 0 : 1));
    this.nativeType = layout.nodeTypes.indexOf('native');
  }

  wants(): boolean {
    return true;
  }

  numbers(section: NumberSection, values: Float64Array, count: number): void {
    const layout = this.layout as SnapshotLayout;
    const nodes = section === 'nodes';
    const width = nodes ? layout.nodeFieldCount : layout.edgeFieldCount;
    const typeAt = nodes ? layout.nodeType : layout.edgeType;
    const nameAt = nodes ? layout.nodeName : layout.edgeNameOrIndex;
    const keeps = nodes ? this.nodeKeeps : this.edgeKeeps;
    const nativeType = nodes ? this.nativeType : -1;
    let k = 0;
    // A record begun in the previous batch, value by value.
    while (k < count && this.field[section] !== 0) this.one(section, values[k++] as number, width, typeAt, nameAt, keeps);
    // Whole records: only their type and name are read (a value loop cost ~2× more here).
    const end = k + Math.floor((count - k) / width) * width;
    // The bitset's words inline (a method call per record cost ~1/3 of this loop); grown when a name is past them.
    let words = this.names.words;
    for (let at = k; at < end; at += width) {
      const type = values[at + typeAt] as number;
      if (keeps[type] === 1) {
        const name = values[at + nameAt] as number;
        const w = name >>> 5;
        if (w >= words.length) words = this.names.grow(w);
        (words[w] as number) |= 1 << (name & 31);
        if (type === nativeType) this.natives.set(name);
      }
    }
    for (k = end; k < count; k++) this.one(section, values[k] as number, width, typeAt, nameAt, keeps);
  }

  /** One value of a record split between batches. */
  private one(section: NumberSection, v: number, width: number, typeAt: number, nameAt: number, keeps: Uint8Array): void {
    const field = this.field[section];
    if (field === typeAt) this.type[section] = v;
    // The type field comes before the name in every V8 layout (type, name, …); checked in `stringsOpen` otherwise.
    if (field === nameAt && keeps[this.type[section]] === 1) {
      this.names.set(v);
      if (section === 'nodes' && this.type[section] === this.nativeType) this.natives.set(v);
    }
    this.field[section] = field + 1 === width ? 0 : field + 1;
  }

  nextWantedString(): number {
    return Infinity;
  }

  string(): void {}

  stringsOpen(offset: number): boolean {
    const layout = this.layout as SnapshotLayout;
    if (layout.nodeType > layout.nodeName || layout.edgeType > layout.edgeNameOrIndex) {
      throw invalidSnapshot(offset, 'a layout whose type field follows the name field (not supported by redaction)');
    }
    this.stringsAt = offset;
    return true;
  }
}

const P = {
  Head: 0, // header, nodes, edges, …: passed through, scanned for names
  Between: 1, // in the strings table, between literals
  InKeep: 2, // inside a kept literal
  InDrop: 3, // inside a replaced literal
  InRewrite: 4, // inside a native node's name: collected, then rewritten
  Tail: 5, // after the table's `]`
} as const;
type P = (typeof P)[keyof typeof P];

/**
 * The redaction of one snapshot, fed its bytes in order. `write` hands the
 * redacted bytes to `emit` (synchronously; the buffer is reused after `emit`
 * returns: copy what you keep). Throws `snapshot_invalid` on malformed input,
 * so a capture never stores bytes it could not redact.
 */
export class SnapshotRedactor {
  private readonly marker = new NameMarker();
  private readonly scanner = new SnapshotScanner(this.marker);
  private phase: P = P.Head;
  private consumed = 0;
  private escaped = false;
  private index = 0;
  private out = Buffer.allocUnsafe(256 * 1024);
  private len = 0;
  private readonly markerBytes = Buffer.from(REDACTED_MARKER);
  private readonly report: RedactionReport = { mode: 'strings', marker: REDACTED_MARKER, redactedStrings: 0, keptStrings: 0, redactedBytes: 0, rewrittenNames: 0 };
  /** The parts of the native name being collected (a literal can span chunks). */
  private rewrite: Buffer[] = [];
  /** Where the current replaced literal started (its bytes counted when it closes). */
  private dropFrom = 0;

  /** Redact the next chunk. */
  write(chunk: Buffer, emit: (bytes: Buffer) => void): void {
    let from = 0;
    if (this.phase === P.Head) {
      const start = this.consumed;
      this.scanner.write(chunk);
      const at = this.marker.stringsAt;
      if (at === undefined || at >= start + chunk.length) {
        this.consumed += chunk.length;
        emit(chunk);
        return;
      }
      from = at - start + 1; // just after the table's `[`
      this.phase = P.Between;
      this.len = 0;
      this.put(chunk, 0, from);
    } else {
      this.len = 0;
    }
    if (this.phase === P.Tail) this.put(chunk, from, chunk.length);
    else this.table(chunk, from);
    this.consumed += chunk.length;
    if (this.len > 0) emit(this.out.subarray(0, this.len));
  }

  /** After the last chunk: the report, or `snapshot_invalid` when the strings table never closed. */
  end(): RedactionReport {
    if (this.phase !== P.Tail) throw invalidSnapshot(this.consumed, 'the snapshot ends before its strings table closes (nothing was redacted)');
    return { ...this.report };
  }

  /** What was redacted so far. */
  get redaction(): RedactionReport {
    return { ...this.report };
  }

  /**
   * The strings table, literal by literal. Per string (a 500 MB snapshot has
   * ~4 M) nothing is allocated and no native call is made for the short ones:
   * the marker and short kept literals are written byte by byte (a
   * `Buffer#copy` per string cost more than the copy).
   */
  private table(chunk: Buffer, start: number): void {
    const n = chunk.length;
    // The most one pass can write: the chunk, or a marker per literal when every one is `""` (12 bytes per 3 in).
    this.room(n + Math.ceil(n / 3) * this.markerBytes.length + 16);
    let out = this.out;
    const names = this.marker.names;
    const natives = this.marker.natives;
    const marker = this.markerBytes;
    const markerLen = marker.length;
    const report = this.report;
    let len = this.len;
    let i = start;
    while (i < n) {
      if (this.phase === P.Between) {
        const c = chunk[i] as number;
        if (c === QUOTE) {
          const index = this.index++;
          const keep = names.has(index);
          this.escaped = false;
          if (keep && natives.has(index)) {
            report.keptStrings++;
            this.phase = P.InRewrite;
            this.rewrite = [];
          } else if (keep) {
            report.keptStrings++;
            this.phase = P.InKeep;
            out[len++] = QUOTE;
          } else {
            report.redactedStrings++;
            this.phase = P.InDrop;
            this.dropFrom = this.consumed + i;
            for (let m = 0; m < markerLen; m++) out[len + m] = marker[m] as number;
            len += markerLen;
          }
          i++;
        } else if (c === COMMA || isWs(c)) {
          out[len++] = c;
          i++;
        } else if (c === RBRACKET) {
          this.phase = P.Tail;
          this.len = len;
          this.put(chunk, i, n);
          return;
        } else {
          this.len = len;
          throw invalidSnapshot(this.consumed + i, 'expected a string, "," or "]" in "strings"');
        }
        continue;
      }
      // Inside a literal: its end is the first quote not escaped.
      const keep = this.phase === P.InKeep;
      const rewrite = this.phase === P.InRewrite;
      let s = i;
      if (this.escaped) {
        s++; // the byte after a backslash that ended the previous chunk
        this.escaped = false;
      }
      const q = closingQuote(chunk, s, n);
      if (q < 0) {
        let k = n;
        while (k > s && chunk[k - 1] === BACKSLASH) k--;
        this.escaped = ((n - k) & 1) === 1; // an odd run of backslashes escapes the next chunk's first byte
        if (keep) len = copyInto(out, len, chunk, i, n);
        else if (rewrite) this.rewrite.push(Buffer.from(chunk.subarray(i, n)));
        this.len = len;
        return;
      }
      if (keep) len = copyInto(out, len, chunk, i, q + 1);
      else if (rewrite) {
        this.rewrite.push(chunk.subarray(i, q));
        this.len = len;
        this.putNative(this.consumed + q);
        len = this.len;
        out = this.out; // putNative may have grown it
      } else report.redactedBytes += this.consumed + q + 1 - this.dropFrom;
      this.phase = P.Between;
      i = q + 1;
    }
    this.len = len;
  }

  /**
   * The native name collected in `rewrite` (its text between the quotes), written as a literal without attribute
   * values. Room: the rewritten literal is never longer than the original's text plus its quotes.
   */
  private putNative(offset: number): void {
    const text = Buffer.concat(this.rewrite).toString('utf8');
    this.rewrite = [];
    let name: string;
    try {
      name = JSON.parse(`"${text}"`) as string;
    } catch {
      throw invalidSnapshot(offset, 'a string in "strings" that is not a valid JSON string');
    }
    const rewritten = elementNameWithoutValues(name);
    const literal = Buffer.from(rewritten === name ? `"${text}"` : JSON.stringify(rewritten));
    if (rewritten !== name) this.report.rewrittenNames++;
    this.room(literal.length);
    this.len += literal.copy(this.out, this.len);
  }

  private room(bytes: number): void {
    if (this.len + bytes <= this.out.length) return;
    const grown = Buffer.allocUnsafe(Math.max(this.len + bytes, this.out.length * 2));
    this.out.copy(grown, 0, 0, this.len);
    this.out = grown;
  }

  private put(from: Buffer, start: number, end: number): void {
    if (end <= start) return;
    this.room(end - start);
    this.len += from.copy(this.out, this.len, start, end);
  }

}

/** Kept literals up to this many bytes are copied in JavaScript (a native call per string cost more); longer ones natively. */
const SHORT_COPY = 16;

/**
 * The first unescaped quote in `chunk[from..n)`, or -1: native `indexOf`,
 * then the backslashes before the quote are counted. (A JavaScript scan of
 * the first bytes was slower: 124-134 ms against 107 for the 34 MB table of a
 * 171 MB snapshot, best of 12.)
 */
function closingQuote(chunk: Buffer, from: number, n: number): number {
  let s = from;
  while (s < n) {
    const found = chunk.indexOf(QUOTE, s);
    if (found < 0) return -1;
    let k = found;
    while (k > s && chunk[k - 1] === BACKSLASH) k--;
    if (((found - k) & 1) === 0) return found;
    s = found + 1; // an escaped quote
  }
  return -1;
}

/** `src[from..to)` into `out` at `at` (room made by the caller); returns the new end. */
function copyInto(out: Buffer, at: number, src: Buffer, from: number, to: number): number {
  const count = to - from;
  if (count > SHORT_COPY) return at + src.copy(out, at, from, to);
  for (let j = 0; j < count; j++) out[at + j] = src[from + j] as number;
  return at + count;
}

/** A redactor for `mode`, or undefined when nothing is redacted. */
export function createRedactor(mode: RedactMode): SnapshotRedactor | undefined {
  if (mode === 'none') return undefined;
  if (mode === 'strings') return new SnapshotRedactor();
  throw new CaptureError('invalid_input', `unknown redaction mode ${String(mode)}`);
}
