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
 * The fast path parses only the string literal, with V8's JSON parser, in
 * slices of at most 64 KiB, and copies each slice into one Buffer per chunk:
 * no message object, no event dispatch, and no string big enough for V8's
 * large-object space (a 1 MiB string is allocated and freed page by page).
 * Measured on recorded frames (Node 20.20, this 2-core VM, loaded, CPU-s per GB):
 * Chromium's 1 MiB chunks 1.8-2.3 whole, 1.0-1.1 in slices; Node's 100 KiB
 * chunks the same either way (~0.7 quiet, ~1.8 under load), the whole message
 * through JSON.parse no cheaper. A JavaScript loop that unescapes in place
 * (no allocation at all) measured 0.84-1.06 at best and 4.3 once V8 inlined
 * it into its caller: slower, and at the mercy of the JIT. The Buffer is sized
 * for the escaped text, so it holds up to ~7% more than its length.
 */
import { isAscii, isUtf8 } from 'node:buffer';

const PREFIX = Buffer.from('{"method":"HeapProfiler.addHeapSnapshotChunk","params":{"chunk":"', 'latin1');
const SUFFIX = Buffer.from('"}}', 'latin1');
const BACKSLASH_U = Buffer.from('\\u', 'latin1');
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
/** Slice length: the strings stay well under V8's regular object size limit (128 KiB). */
const SLICE = 64 * 1024;

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
 * Uses `frame` as scratch space; its bytes are as they were when it returns.
 * With `into` (at least as long as the frame), the common ASCII case is
 * decoded into it and a view of it is returned: no Buffer per chunk.
 */
export function decodeChunkFrame(frame: Buffer, into?: Buffer): Buffer | undefined {
  const start = PREFIX.length;
  const end = frame.length - SUFFIX.length;
  try {
    // ASCII without `\u` escapes decodes to ASCII, where Latin-1 and UTF-8 are the same
    // bytes and every conversion is a copy; slices can then be cut between any two escapes.
    if (isAscii(frame) && frame.indexOf(BACKSLASH_U, start) < 0) return decodeAsciiSlices(frame, start, end, into);
    // Not UTF-8: the generic path refuses the message (toString would replace the bad bytes silently).
    if (!isUtf8(frame)) return undefined;
    const chunk: unknown = JSON.parse(frame.toString('utf8', start - 1, end + 1));
    return typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : undefined;
  } catch {
    return undefined;
  }
}

/** Decodes the string body `frame[start, end)` slice by slice into one Buffer; throws on invalid JSON. */
function decodeAsciiSlices(frame: Buffer, start: number, end: number, into: Buffer | undefined): Buffer {
  // The decoded text is never longer than its escaped form.
  const out = into !== undefined && into.length >= end - start ? into : Buffer.allocUnsafe(end - start);
  let length = 0;
  for (let from = start; from < end; ) {
    let to = Math.min(from + SLICE, end);
    // Never cut an escape in two: after an odd run of backslashes the next byte belongs to it.
    let run = 0;
    while (to < end && frame[to - 1 - run] === BACKSLASH) run++;
    if (run % 2 === 1) to++;
    // Parse `"` + slice + `"`: borrow the bytes on either side of the slice for the quotes.
    const before = frame[from - 1] as number;
    const after = frame[to] as number;
    frame[from - 1] = QUOTE;
    frame[to] = QUOTE;
    try {
      length += out.write(JSON.parse(frame.toString('latin1', from - 1, to + 1)) as string, length, 'latin1');
    } finally {
      frame[from - 1] = before;
      frame[to] = after;
    }
    from = to;
  }
  return out.subarray(0, length);
}
