/**
 * Which gzip level can the sink afford? Generates a realistic heap snapshot
 * (~200 MB, written by a real Node process with v8.writeHeapSnapshot), then
 * gzips it through streams at several settings in the same run and prints
 * input MB/s (median of REPS runs) and compression ratio (relative to level 6).
 *
 * The sink must keep up with a target serializing at ~75 MB/s over CDP
 * (docs: INSPECTOR-FACTS), so a setting needs >= ~100 MB/s of input with margin.
 *
 * Run: node --import tsx bench/gzip-level.ts [--heap-mb 125] [--busy] [--keep]
 *   --busy  keep one core busy with a spinning child process during the
 *           measurements, as a target serializing its snapshot on the same
 *           2-core host would.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { constants, createGzip, type ZlibOptions } from 'node:zlib';
import { SnapshotDigest } from '@heapcap/storage';

/** CDP delivers chunks of at most 100 KiB; feed gzip the same way. */
const CDP_CHUNK = 100 * 1024;

/** The target process: holds mixed objects/strings until heapUsed reaches the goal, then snapshots itself. */
const TARGET_SCRIPT = `
const v8 = require('node:v8');
const goal = Number(process.argv[1]) * 1024 * 1024;
const words = ['order','customer','session','token','cart','item','price','sku','address','user'];
// On globalThis: a local that is dead after the loop would be collected before the snapshot.
const keep = (globalThis.keep = []);
let i = 0;
while (process.memoryUsage().heapUsed < goal) {
  const w = words[i % words.length];
  keep.push({
    id: i, name: w + '-' + i + '-' + Math.random().toString(36).slice(2),
    tags: [w, words[(i * 7) % 10]], price: i * 1.5, at: new Date(i * 1000),
    nested: { a: i, b: { c: w + ':' + i } },
    fn: () => i, m: i % 50 === 0 ? new Map([[w, i]]) : null,
    text: i % 100 === 0 ? 'lorem ipsum '.repeat(20 + (i % 50)) + i : undefined,
  });
  i++;
}
v8.writeHeapSnapshot(process.argv[2]);
`;

interface Setting {
  label: string;
  options: ZlibOptions;
}

const SETTINGS: Setting[] = [
  { label: 'level 1', options: { level: 1 } },
  { label: 'level 2', options: { level: 2 } },
  { label: 'level 3', options: { level: 3 } },
  { label: 'level 4', options: { level: 4 } },
  { label: 'level 5', options: { level: 5 } },
  { label: 'level 6 (zlib default)', options: { level: 6 } },
  { label: 'level 3, memLevel 9, chunk 64K', options: { level: 3, memLevel: 9, chunkSize: 64 * 1024 } },
  { label: 'level 4, chunk 64K', options: { level: 4, chunkSize: 64 * 1024 } },
  { label: 'level 4, memLevel 9, chunk 64K', options: { level: 4, memLevel: 9, chunkSize: 64 * 1024 } },
  // Node's zlib (Chromium's) takes another match finder below a 8 KiB window: cheaper and, on snapshots, smaller.
  { label: 'level 2, windowBits 13', options: { level: 2, windowBits: 13 } },
  { label: 'level 2, windowBits 12', options: { level: 2, windowBits: 12 } },
  { label: 'level 2, windowBits 11', options: { level: 2, windowBits: 11 } },
  { label: 'level 1, windowBits 12', options: { level: 1, windowBits: 12 } },
];

interface Result {
  label: string;
  gzipMBps: number;
  sinkMBps: number;
  /** Input MB per CPU-second on the sink path: what the sink can do with one whole core, whatever the load. */
  sinkMBperCpuS: number;
  outBytes: number;
}

function arg(name: string, fallback: string): string {
  const at = process.argv.indexOf(name);
  return at >= 0 ? (process.argv[at + 1] ?? fallback) : fallback;
}

/** Counts bytes and throws them away. */
function discard(): { sink: Writable; bytes: () => number } {
  let n = 0;
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      n += chunk.length;
      cb();
    },
  });
  return { sink, bytes: () => n };
}

/** The snapshot as CDP-sized chunks in memory, so the disk read is not measured. */
async function loadChunks(path: string): Promise<Buffer[]> {
  const chunks: Buffer[] = [];
  for await (const c of createReadStream(path, { highWaterMark: CDP_CHUNK })) chunks.push(c as Buffer);
  return chunks;
}

/** Repetitions per setting; the median is reported (single runs vary by ~20% on this VM). */
const REPS = 3;

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

interface Run {
  gzipMs: number;
  sinkMs: number;
  /** CPU time of this process (all threads: zlib runs on the libuv pool) for the sink path. */
  sinkCpuMs: number;
  outBytes: number;
}

function cpuMs(since: NodeJS.CpuUsage): number {
  const d = process.cpuUsage(since);
  return (d.user + d.system) / 1000;
}

/** One timed pass of a setting: gzip alone, then the sink's whole path. */
async function runOnce(setting: Setting, chunks: Buffer[], outPath: string): Promise<Run> {
  // gzip alone: the compressor's own throughput.
  const d = discard();
  let t0 = performance.now();
  await pipeline(Readable.from(chunks), createGzip(setting.options), d.sink);
  const gzipMs = performance.now() - t0;
  // The sink's whole path: sha256 + header parse, gzip, write to a file.
  t0 = performance.now();
  const cpu0 = process.cpuUsage();
  await pipeline(Readable.from(chunks), new SnapshotDigest(), createGzip(setting.options), createWriteStream(outPath));
  return { gzipMs, sinkMs: performance.now() - t0, sinkCpuMs: cpuMs(cpu0), outBytes: d.bytes() };
}

async function main(): Promise<void> {
  const heapMb = Number(arg('--heap-mb', '125'));
  const dir = await mkdtemp(join(tmpdir(), 'heapcap-gzip-bench-'));
  let busy: ChildProcess | undefined;
  try {
    const snap = join(dir, 'target.heapsnapshot');
    const t0 = performance.now();
    execFileSync(process.execPath, ['-e', TARGET_SCRIPT, String(heapMb), snap], { stdio: 'inherit' });
    const inBytes = (await stat(snap)).size;
    console.log(
      `snapshot: ${(inBytes / 1e6).toFixed(1)} MB from a ${heapMb} MB heap (${((performance.now() - t0) / 1000).toFixed(1)} s), ` +
        `node ${process.version}, zlib ${process.versions.zlib}, Z_DEFAULT_MEMLEVEL ${constants.Z_DEFAULT_MEMLEVEL}`,
    );
    console.log(`load average before: ${loadavg().map((x) => x.toFixed(2)).join(' ')}, ${cpus().length} CPUs`);
    const chunks = await loadChunks(snap);
    if (process.argv.includes('--busy')) {
      // Stands in for the target: V8 serialization keeps one core busy for the whole stream.
      busy = spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' });
      console.log(`--busy: one core spinning in pid ${busy.pid}`);
    }
    // Warm-up pass so the first setting does not pay for JIT and allocator growth.
    await runOnce(SETTINGS[0]!, chunks.slice(0, 100), join(dir, 'warm.gz'));

    // Round-robin over settings, starting one later each round, so a burst of
    // load from elsewhere (or a position effect) hits every setting alike.
    const runs: Run[][] = SETTINGS.map(() => []);
    for (let rep = 0; rep < REPS; rep++) {
      for (let k = 0; k < SETTINGS.length; k++) {
        const i = (k + rep) % SETTINGS.length;
        runs[i]!.push(await runOnce(SETTINGS[i]!, chunks, join(dir, 'out.gz')));
      }
    }
    const mb = inBytes / 1e6;
    const results: Result[] = SETTINGS.map((s, i) => {
      const r = runs[i]!;
      return {
        label: s.label,
        gzipMBps: mb / (median(r.map((x) => x.gzipMs)) / 1000),
        sinkMBps: mb / (median(r.map((x) => x.sinkMs)) / 1000),
        sinkMBperCpuS: mb / (median(r.map((x) => x.sinkCpuMs)) / 1000),
        outBytes: r[0]!.outBytes,
      };
    });
    console.log(`load average after: ${loadavg().map((x) => x.toFixed(2)).join(' ')} (other work on this host skews MB/s)`);
    const l6 = results.find((r) => r.label.startsWith('level 6'))!;
    console.log(
      '\n| setting | gzip MB/s (input) | sink path MB/s (digest+gzip+file) | sink path MB per CPU-s | CPU for 75 MB/s | stored MB | ratio (in/out) | size vs level 6 |',
    );
    console.log('|---|---:|---:|---:|---:|---:|---:|---:|');
    for (const r of results) {
      console.log(
        `| ${r.label} | ${r.gzipMBps.toFixed(0)} | ${r.sinkMBps.toFixed(0)} | ${r.sinkMBperCpuS.toFixed(0)} | ` +
          `${((75 / r.sinkMBperCpuS) * 100).toFixed(0)}% of a core | ${(r.outBytes / 1e6).toFixed(1)} | ` +
          `${(inBytes / r.outBytes).toFixed(2)} | ${(r.outBytes / l6.outBytes).toFixed(2)}x |`,
      );
    }
  } finally {
    busy?.kill('SIGKILL');
    if (!process.argv.includes('--keep')) await rm(dir, { recursive: true, force: true });
    else console.log(`kept ${dir}`);
  }
}

await main();
