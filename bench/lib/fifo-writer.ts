/**
 * Writes a snapshot file into a FIFO at a target's pace, as the target's
 * `writeHeapSnapshot()` does with the pipe transport: blocking writes, so a
 * reader that falls behind slows the writer (V8 waits the same way).
 *
 * Usage: node --import tsx bench/lib/fifo-writer.ts SNAPSHOT_FILE FIFO MB_PER_S
 */
import { closeSync, openSync, readSync, writeSync } from 'node:fs';

const [file, fifo, rate] = process.argv.slice(2);
if (file === undefined || fifo === undefined || rate === undefined) throw new Error('usage: fifo-writer.ts SNAPSHOT_FILE FIFO MB_PER_S');
const bytesPerMs = (Number(rate) * 1e6) / 1000;
const input = openSync(file, 'r');
const out = openSync(fifo, 'w');
const buf = Buffer.allocUnsafe(64 * 1024);
const t0 = performance.now();
let sent = 0;
for (;;) {
  const n = readSync(input, buf, 0, buf.length, sent);
  if (n === 0) break;
  for (let w = 0; w < n; ) w += writeSync(out, buf, w, n - w);
  sent += n;
  // Ahead of the pace: wait (a busy target would not be faster either).
  const ahead = sent / bytesPerMs - (performance.now() - t0);
  if (ahead > 5) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ahead);
}
closeSync(out);
closeSync(input);
