/**
 * Capturer CPU per GB of snapshot, per component, before issue 14 and now,
 * in the same run on the same bytes.
 *
 * One snapshot of a Node 22 heap holder (BENCH_CPU_HEAP_MB=300: ~525 MB) is
 * recorded as it came off the WebSocket (lib/frames.ts). Then:
 * - each component alone, on those bytes, in this process (best of 3, CPU time
 *   of all threads: gzip runs on libuv's pool): UTF-8 validation, frame → chunk
 *   bytes, sha256, gzip;
 * - the whole hot path in its own process against a stand-in inspector that
 *   replays the frames at a target's pace (lib/replay-server.ts, 100 MB/s of
 *   frames, the speed measured for a Node 22 target serializing over CDP),
 *   before and after, BENCH_CPU_REPS=3 times each, alternating
 *   (lib/replay-capture.ts). What the components do not explain is the rest:
 *   socket reads, WebSocket framing, stream plumbing, the event loop, GC.
 *
 * Then the hot path a local Node target uses since the pipe transport: the
 * snapshot's bytes through a FIFO at the same pace (lib/fifo-writer.ts).
 *
 * Checks: the whole hot path uses at most half the CPU per GB it used before,
 * over CDP and through the pipe.
 *
 * Run: npm run bench -- capturer-cpu
 */
import { spawn } from 'node:child_process';
import { closeSync, openSync, writeSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { fileURLToPath } from 'node:url';
import { createGzip } from 'node:zlib';
import { decodeChunkFrame, isChunkFrame } from '@heapcap/capture';
import { SnapshotDigest } from '@heapcap/storage';
import { createSnapshotGzip, SNAPSHOT_GZIP_LEVEL, SNAPSHOT_GZIP_WINDOW_BITS } from '@heapcap/storage';
import { loadChunkFrames, recordSnapshotFrames } from './lib/frames.ts';
import { Checks, mb, median, printTable, ratio, type Check } from './lib/report.ts';
import { heapHolderTarget, withTarget } from './lib/targets.ts';
import { withScratchDir } from './lib/tmp.ts';

const HEAP_MB = Number(process.env.BENCH_CPU_HEAP_MB ?? 300);
const REPS = Math.max(1, Number(process.env.BENCH_CPU_REPS ?? 3));
/** Frames per second a Node 22 target sent here: 559 MB of frames in 5.0-5.9 s. */
const RATE_MB_PER_S = 100;
const ROOT = fileURLToPath(new URL('../', import.meta.url));

/** `ws` 7's UTF-8 check as chrome-remote-interface ran it (JavaScript: the optional addon is not installed). */
function ws7IsValidUtf8(): (buf: Buffer) => boolean {
  const cri = createRequire(import.meta.url).resolve('chrome-remote-interface');
  return (createRequire(cri)('ws/lib/validation.js') as { isValidUTF8: (buf: Buffer) => boolean }).isValidUTF8;
}

/** CPU ms (all threads) of the best of 3 runs of `fn`. */
async function bestCpuMs(fn: () => unknown): Promise<number> {
  let best = Number.POSITIVE_INFINITY;
  for (let i = 0; i < 3; i++) {
    const c0 = process.cpuUsage();
    await fn();
    const c = process.cpuUsage(c0);
    best = Math.min(best, (c.user + c.system) / 1000);
  }
  return best;
}

const sink = (): Writable =>
  new Writable({
    write(_chunk, _enc, done) {
      done();
    },
  });

interface ReplayResult {
  cpuMs: number;
  gcMs: number;
  bytes: number;
  spilledBytes: number;
  wallMs: number;
}

/** Runs `bench/lib/<file>` with the CLI's young-generation setting; resolves with the JSON it prints last. */
function runNode<T>(file: string, args: string[]): Promise<T> {
  const child = spawn(process.execPath, ['--max-semi-space-size=2', '--import', 'tsx', fileURLToPath(new URL(file, import.meta.url)), ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (err = (err + d).slice(-10_000)));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 10 * 60_000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      if (code !== 0) reject(new Error(`${file} exited with ${code}: ${err}`));
      else resolve(JSON.parse(out.trim().split('\n').pop() ?? '') as T);
    });
  });
}

/** Starts the replaying stand-in inspector; resolves with its URL and a stop function. */
function startReplay(framesFile: string): Promise<{ url: string; stop(): void }> {
  const child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(new URL('./lib/replay-server.ts', import.meta.url)), framesFile, String(RATE_MB_PER_S)], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
  const stop = (): void => {
    child.kill('SIGKILL');
  };
  process.once('exit', stop);
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      out += d;
      const line = out.split('\n')[0];
      if (out.includes('\n') && line !== undefined) resolve({ url: line.trim(), stop });
    });
    child.once('exit', (code) => reject(new Error(`replay server exited with ${code}`)));
  });
}

/** Runs the capturer CPU bench; returns its checks. */
export async function capturerCpuBench(): Promise<Check[]> {
  const checks = new Checks('capturer-cpu');
  return withScratchDir('cpu', async (dir) => {
    const framesFile = join(dir, 'frames.bin');
    console.log(`recording one snapshot of a Node 22 heap holder with HEAP_MB=${HEAP_MB}`);
    await withTarget(heapHolderTarget('22', HEAP_MB), async ({ target }) => {
      const count = await recordSnapshotFrames(target.wsUrl ?? '', framesFile);
      console.log(`  ${count} messages recorded`);
    });

    const frames = loadChunkFrames(framesFile);
    if (frames.length === 0) throw new Error(`no chunk frames in the recording ${framesFile}`);
    const frameBytes = frames.reduce((n, f) => n + f.length, 0);
    // What the old path and the new one hand to the stream, decoded once for the stages after it.
    const chunks = frames.map((f) => Buffer.from((JSON.parse(f.toString('utf8')) as { params: { chunk: string } }).params.chunk, 'utf8'));
    const bytes = chunks.reduce((n, c) => n + c.length, 0);
    const perGb = (cpuMs: number): number => cpuMs / 1000 / (bytes / 1e9);
    console.log(`  ${frames.length} chunk frames, ${mb(frameBytes)} MB of frames, ${mb(bytes)} MB of snapshot; load average ${loadavg()[0]?.toFixed(1)}`);

    const ws7 = ws7IsValidUtf8();
    const components: [string, number, number][] = [];
    const measure = async (name: string, before: () => unknown, after: () => unknown): Promise<void> => {
      const b = await bestCpuMs(before);
      const a = await bestCpuMs(after);
      components.push([name, b, a]);
      console.log(`  ${name}: before ${perGb(b).toFixed(2)}, after ${perGb(a).toFixed(2)} CPU-s/GB`);
    };
    await measure(
      'UTF-8 validation of every frame (ws 7 in JavaScript → none apart: the decode checks chunk frames are ASCII, other messages get isUtf8)',
      () => frames.every((f) => ws7(f)),
      () => undefined,
    );
    let head = '';
    let tail = '';
    await measure(
      'frame → chunk bytes (whole-message JSON.parse + string → Buffer → the literal unescaped in WebAssembly memory)',
      () => {
        for (const f of frames) {
          const { chunk } = (JSON.parse(f.toString('utf8')) as { params: { chunk: string } }).params;
          if (head.length < 64) head += chunk.slice(0, 64 - head.length);
          tail = (tail + chunk).slice(-64);
          Buffer.byteLength(chunk, 'utf8');
          Buffer.from(chunk, 'utf8');
        }
      },
      () => {
        for (const f of frames) if (!isChunkFrame(f) || decodeChunkFrame(f) === undefined) throw new Error('not a chunk frame');
      },
    );
    const digest = (): Promise<void> => pipeline(Readable.from(chunks), new SnapshotDigest(), sink());
    await measure('sha256 + header parse (SnapshotDigest, unchanged)', digest, digest);
    await measure(
      `gzip (level 4 → level ${SNAPSHOT_GZIP_LEVEL}, windowBits ${SNAPSHOT_GZIP_WINDOW_BITS}, 256 KiB output), on libuv's pool`,
      () => pipeline(Readable.from(chunks), createGzip({ level: 4 }), sink()),
      // The sink's own stage (its settings; giving chunks back is a no-op for these).
      () => pipeline(Readable.from(chunks), createSnapshotGzip(), sink()),
    );

    console.log(`\nthe whole hot path against the replayed frames at ${RATE_MB_PER_S} MB/s, ${REPS}× each, alternating`);
    const replay = await startReplay(framesFile);
    const runs: Record<'before' | 'after', ReplayResult[]> = { before: [], after: [] };
    try {
      for (let rep = 0; rep < REPS; rep++) {
        for (const variant of rep % 2 === 0 ? (['before', 'after'] as const) : (['after', 'before'] as const)) {
          const out = join(dir, `replay-${variant}.gz`);
          const r = await runNode<ReplayResult>('./lib/replay-capture.ts', [replay.url, variant, out]);
          await rm(out, { force: true });
          if (r.bytes !== bytes) throw new Error(`replay ${variant} delivered ${r.bytes} bytes, expected ${bytes}`);
          runs[variant].push(r);
          console.log(`  ${variant}: ${(r.cpuMs / 1000).toFixed(2)} CPU-s (${perGb(r.cpuMs).toFixed(2)}/GB), GC pauses ${r.gcMs} ms, spilled ${mb(r.spilledBytes)} MB, ${r.wallMs} ms; load ${loadavg()[0]?.toFixed(1)}`);
        }
      }
    } finally {
      replay.stop();
    }

    // The pipe transport (local Node targets): the same bytes through a FIFO at the same pace.
    const snapshotFile = join(dir, 'snapshot.bin');
    const fd = openSync(snapshotFile, 'w');
    for (const c of chunks) writeSync(fd, c);
    closeSync(fd);
    const pipeRuns: ReplayResult[] = [];
    for (let rep = 0; rep < REPS; rep++) {
      const out = join(dir, 'replay-pipe.gz');
      const r = await runNode<ReplayResult>('./lib/replay-capture.ts', [snapshotFile, 'pipe', out, String(RATE_MB_PER_S)]);
      await rm(out, { force: true });
      if (r.bytes !== bytes) throw new Error(`pipe replay delivered ${r.bytes} bytes, expected ${bytes}`);
      pipeRuns.push(r);
      console.log(`  pipe: ${(r.cpuMs / 1000).toFixed(2)} CPU-s (${perGb(r.cpuMs).toFixed(2)}/GB), GC pauses ${r.gcMs} ms, spilled ${mb(r.spilledBytes)} MB, ${r.wallMs} ms; load ${loadavg()[0]?.toFixed(1)}`);
    }
    await rm(snapshotFile, { force: true });
    const pipeCpu = median(pipeRuns.map((r) => r.cpuMs));
    const pipeGc = median(pipeRuns.map((r) => r.gcMs));

    const e2e = (v: 'before' | 'after'): number => median(runs[v].map((r) => r.cpuMs));
    const gc = (v: 'before' | 'after'): number => median(runs[v].map((r) => r.gcMs));
    const sum = (i: 1 | 2): number => components.reduce((n, c) => n + c[i], 0);
    console.log('');
    printTable(
      ['component', 'before CPU-s/GB', 'after CPU-s/GB', 'after / before'],
      [
        ...components.map(([name, b, a]) => [name, perGb(b).toFixed(2), perGb(a).toFixed(2), ratio(a / b)]),
        ['rest: socket, framing, streams, event loop, GC (whole − components)', perGb(e2e('before') - sum(1)).toFixed(2), perGb(e2e('after') - sum(2)).toFixed(2), ratio((e2e('after') - sum(2)) / (e2e('before') - sum(1)))],
        ['  of which main-thread GC pauses', perGb(gc('before')).toFixed(2), perGb(gc('after')).toFixed(2), ratio(gc('after') / gc('before'))],
        [`whole hot path (median of ${REPS}, own process)`, perGb(e2e('before')).toFixed(2), perGb(e2e('after')).toFixed(2), ratio(e2e('after') / e2e('before'))],
        ['whole hot path through the pipe (local Node targets; no frames to validate or decode)', perGb(e2e('before')).toFixed(2), perGb(pipeCpu).toFixed(2), ratio(pipeCpu / e2e('before'))],
        ['  of which main-thread GC pauses', perGb(gc('before')).toFixed(2), perGb(pipeGc).toFixed(2), ratio(pipeGc / gc('before'))],
      ],
    );
    console.log(`\nsnapshot ${mb(bytes)} MB; load average now ${loadavg().map((l) => l.toFixed(1)).join(' ')} (2 cores)\n`);
    checks.expect(bytes >= 500e6, 'recorded snapshot is at least 500 MB', `${mb(bytes)} MB`);
    checks.expect(e2e('after') <= 0.5 * e2e('before'), 'the hot path (CDP) uses at most half the CPU per GB it used before', `${perGb(e2e('before')).toFixed(2)} → ${perGb(e2e('after')).toFixed(2)} CPU-s/GB (${ratio(e2e('after') / e2e('before'))})`);
    checks.expect(pipeCpu <= 0.5 * e2e('before'), 'the hot path through the pipe uses at most half the CPU per GB the CDP path used before', `${perGb(e2e('before')).toFixed(2)} → ${perGb(pipeCpu).toFixed(2)} CPU-s/GB (${ratio(pipeCpu / e2e('before'))})`);
    return checks.list;
  });
}

// Standalone: `node --import tsx bench/capturer-cpu.ts` (bench/run.ts imports capturerCpuBench instead).
if (process.argv[1] === fileURLToPath(import.meta.url)) {
  for (const sig of ['SIGINT', 'SIGTERM'] as const) process.once(sig, () => process.exit(130));
  const failed = (await capturerCpuBench()).filter((c) => !c.ok);
  process.exitCode = failed.length > 0 ? 1 : 0;
}
