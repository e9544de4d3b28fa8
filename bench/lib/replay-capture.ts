/**
 * The capturer's hot path against the replaying stand-in inspector
 * (lib/replay-server.ts), in its own process, as it was before issue 14 and
 * as it is now:
 * - before: chrome-remote-interface (`ws` 7, UTF-8 validated in JavaScript,
 *   every message parsed whole), the engine's old chunk handler (chunk
 *   string → UTF-8 Buffer, head/tail kept as strings), the old SnapshotStream
 *   (one Buffer per chunk: snapshot-stream-before.ts), sha256,
 *   gzip level 4, a file;
 * - after: the engine's transport (its own WebSocket client reading into
 *   reused buffers, chunk frames decoded from their bytes into a reused
 *   buffer), SnapshotStream (reused 1 MiB blocks),
 *   sha256, the sink's gzip (level 2, giving blocks back), a file.
 * - pipe: what a local Node target uses since the pipe transport: the
 *   snapshot's bytes through a FIFO (written by lib/fifo-writer.ts at the same
 *   pace, in another process), read by the engine's FIFO reader (its own
 *   thread), then as after.
 * Prints {"cpuMs", "gcMs", "bytes", "spilledBytes", "wallMs"}: CPU of all
 * threads (gzip runs on libuv's pool) and the main thread's GC pauses.
 *
 * Usage: node --max-semi-space-size=2 --import tsx bench/lib/replay-capture.ts WS_URL before|after OUT_FILE
 *        node --max-semi-space-size=2 --import tsx bench/lib/replay-capture.ts SNAPSHOT_FILE pipe OUT_FILE MB_PER_S
 */
import { execFileSync, spawn } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import { PerformanceObserver, performance } from 'node:perf_hooks';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import { SnapshotStream } from '@heapcap/capture';
import { SnapshotStream as SnapshotStreamBefore } from './snapshot-stream-before.ts';
import { CdpTransport, openFifoReader } from '@heapcap/capture';
import { SnapshotDigest } from '@heapcap/storage';
import { createSnapshotGzip } from '@heapcap/storage';

interface CriClient {
  send(method: string, params?: object): Promise<unknown>;
  on(event: string, listener: (params: { chunk: string }) => void): unknown;
  close(): Promise<void>;
}
type Cri = (options: { target: string; local: boolean }) => Promise<CriClient>;

const [url, variant, out, rate] = process.argv.slice(2);
if (url === undefined || (variant !== 'before' && variant !== 'after' && variant !== 'pipe') || out === undefined) {
  throw new Error('usage: replay-capture.ts WS_URL before|after OUT_FILE, or SNAPSHOT_FILE pipe OUT_FILE MB_PER_S');
}

let gcMs = 0;
const gcObserver = new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) gcMs += entry.duration;
});
gcObserver.observe({ entryTypes: ['gc'] });

const cpu0 = process.cpuUsage();
const t0 = performance.now();
// Before: the stream as it was (one Buffer per chunk), so the comparison includes its change.
const after = variant === 'before' ? undefined : new SnapshotStream();
const stream = after ?? new SnapshotStreamBefore();
// After: gzip gives the stream's blocks back once consumed, as a store does with its `release` put option.
const consuming = pipeline(stream as NodeJS.ReadableStream, new SnapshotDigest(), after === undefined ? createGzip({ level: 4 }) : createSnapshotGzip((chunk) => after.release(chunk)), createWriteStream(out));
if (variant === 'before') {
  const cdp = createRequire(import.meta.url)('chrome-remote-interface') as Cri;
  const client = await cdp({ target: url, local: true });
  // The engine's chunk handler before issue 14: strings all the way to the stream.
  let head = '';
  let tail = '';
  client.on('HeapProfiler.addHeapSnapshotChunk', ({ chunk }) => {
    if (head.length < 64) head += chunk.slice(0, 64 - head.length);
    tail = (tail + chunk).slice(-64);
    stream.pushChunk(chunk);
  });
  await client.send('HeapProfiler.takeHeapSnapshot', { reportProgress: true });
  await client.close();
  if (!head.startsWith('{') || !tail.endsWith('}')) throw new Error('replay did not deliver a whole snapshot');
} else if (variant === 'pipe') {
  const dir = await mkdtemp(join(tmpdir(), 'heapcap-bench-fifo-'));
  const fifo = join(dir, 'snapshot.fifo');
  execFileSync('mkfifo', ['-m', '600', fifo]);
  const reader = openFifoReader(fifo, (bytes) => stream.pushChunk(bytes));
  const writer = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(new URL('./fifo-writer.ts', import.meta.url)), url, fifo, rate ?? '100'], { stdio: 'inherit' });
  const wrote = new Promise<void>((resolve, reject) => writer.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`fifo-writer exited with ${code}`)))));
  await wrote;
  reader.release();
  await reader.ended;
  reader.close();
  await rm(dir, { recursive: true, force: true });
} else {
  const transport = await CdpTransport.open(url);
  transport.setChunkSink((bytes) => stream.pushChunk(bytes));
  await transport.send('HeapProfiler.takeHeapSnapshot', { reportProgress: false });
  await transport.close();
}
stream.finish();
await consuming;
const cpu = process.cpuUsage(cpu0);
gcObserver.disconnect();
console.log(
  JSON.stringify({
    cpuMs: Math.round((cpu.user + cpu.system) / 1000),
    gcMs: Math.round(gcMs),
    bytes: stream.stats.bytes,
    spilledBytes: stream.stats.spilledBytes,
    wallMs: Math.round(performance.now() - t0),
  }),
);
