/**
 * Snapshot chunk frames, recognised by their bytes and decoded to bytes.
 *
 * Every chunk arrives as `{"method":"HeapProfiler.addHeapSnapshotChunk","params":{"chunk":"…"}}`,
 * where `…` is the snapshot text as a JSON string. V8 writes the snapshot in
 * ASCII (it escapes everything else itself), so the inspector only adds `\n`
 * and `\"` escapes (Node 22: one per ~16 bytes; Chromium 156: `\"` only, one
 * per ~75 bytes) and a rare `\\`. Chunks are 100 KiB (V8 12.4) or 1 MiB
 * (Chromium 156, V8 15.6) of snapshot text.
 *
 * The fast path decodes the string literal's body with a small WebAssembly
 * routine (unescape.wat: copy sixteen bytes at a time up to the next
 * backslash, turn each two-byte escape into its byte) into the module's
 * memory, and returns a view of it: no string, no message object, no Buffer
 * per chunk. It refuses, and the frame goes to the generic path, wherever its
 * output could differ from JSON.parse's: `\u` escapes, bytes outside ASCII,
 * raw control characters or quotes, unknown escapes. Measured on 5,129 recorded frames of a 525 MB Node 22 snapshot,
 * CPU-s per GB: the previous fast path (V8's JSON.parse on the literal in
 * 64 KiB latin1 slices, copied into a Buffer) 1.1-1.3, this one 0.51 (bench
 * capturer-cpu). A plain JavaScript loop measured 0.84-1.06 at best and 4.3
 * once V8 inlined it into its caller; WebAssembly is compiled once, ahead of
 * the first call, and has no such tiers to fall between.
 */
import { isAscii, isUtf8 } from 'node:buffer';
import { UNESCAPE_WASM } from './unescape-wasm.ts';

const PREFIX = Buffer.from('{"method":"HeapProfiler.addHeapSnapshotChunk","params":{"chunk":"', 'latin1');
const SUFFIX = Buffer.from('"}}', 'latin1');
const PAGE = 64 * 1024;

/** What this module uses of WebAssembly (the workspace's TypeScript libs do not declare it). */
interface Unescaper {
  memory: { readonly buffer: ArrayBuffer; grow(pages: number): number };
  unescape(len: number): number;
}
interface WasmApi {
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object) => { exports: Unescaper };
}
/** Instantiated on first use (a 276-byte module: compiled synchronously in well under a millisecond). */
let unescaper: Unescaper | undefined;

/** Whether `frame` looks like a chunk event in the exact shape the inspector sends. */
export function isChunkFrame(frame: Buffer): boolean {
  return (
    frame.length >= PREFIX.length + SUFFIX.length &&
    frame.compare(PREFIX, 0, PREFIX.length, 0, PREFIX.length) === 0 &&
    frame.compare(SUFFIX, 0, SUFFIX.length, frame.length - SUFFIX.length) === 0
  );
}

/**
 * The chunk's snapshot bytes (UTF-8), exactly `Buffer.from(JSON.parse(frame).params.chunk)`;
 * undefined when the frame only looked like a chunk (then parse it whole).
 * The common ASCII case is decoded into memory reused for the next call, and a
 * view of it is returned: copy what you keep before decoding the next frame.
 * `frame` itself is never changed.
 */
export function decodeChunkFrame(frame: Buffer): Buffer | undefined {
  const start = PREFIX.length;
  const end = frame.length - SUFFIX.length;
  try {
    // ASCII decodes to ASCII byte by byte; the routine refuses `\u` escapes (they may not), and those go the generic way.
    if (isAscii(frame)) {
      const bytes = unescapeAscii(frame, start, end);
      if (bytes !== undefined) return bytes;
    }
    // Not UTF-8: the generic path refuses the message (toString would replace the bad bytes silently).
    if (!isUtf8(frame)) return undefined;
    const chunk: unknown = JSON.parse(frame.toString('utf8', start - 1, end + 1));
    return typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : undefined;
  } catch {
    return undefined;
  }
}

/** The string body `frame[start, end)` unescaped in WebAssembly memory; undefined where it is not a plain JSON string body. */
function unescapeAscii(frame: Buffer, start: number, end: number): Buffer | undefined {
  unescaper ??= (() => {
    const wasm = (globalThis as unknown as { WebAssembly: WasmApi }).WebAssembly;
    const exports = new wasm.Instance(new wasm.Module(UNESCAPE_WASM)).exports;
    return { memory: exports.memory, unescape: exports.unescape };
  })();
  const { memory } = unescaper;
  const len = end - start;
  // The body at [0, len), the output after it (plus 16 bytes the routine may write past its end).
  // Grown to the largest chunk seen (100 KiB on V8 ≤ 12, 1 MiB on later V8), then reused.
  const need = 2 * len + 16;
  if (memory.buffer.byteLength < need) memory.grow(Math.ceil((need - memory.buffer.byteLength) / PAGE));
  new Uint8Array(memory.buffer, 0, len).set(frame.subarray(start, end));
  const decoded = unescaper.unescape(len);
  return decoded < 0 ? undefined : Buffer.from(memory.buffer, len, decoded);
}
