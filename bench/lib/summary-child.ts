/**
 * One measurement of the summary bench in a process of its own (so VmHWM is
 * its own): reads a snapshot file in 100 KiB chunks (the size of CDP's
 * chunks) and
 *   read     does nothing else (the baseline: reading the file),
 *   inline   feeds the summarizer on the main thread,
 *   worker   posts every chunk to a worker thread running the summarizer,
 *   analyze  runs analyzeSnapshotFile instead (retained sizes).
 * Prints one JSON line: bytes, wall ms, CPU ms of the main thread
 * (schedstat) and of all threads (getrusage), VmHWM before the work and at the end, and what was computed.
 *
 * Usage: node --import tsx bench/lib/summary-child.ts MODE FILE
 */
import { createReadStream } from 'node:fs';
import { Worker } from 'node:worker_threads';
import { analyzeSnapshotFile, createSummarizer, type Summary } from '@heapcap/analysis';
import { peakRssKb } from '@heapcap/testkit';
import { cpuDeltaMs, sampleCpu } from './thread-cpu.ts';

const [mode, file] = process.argv.slice(2);
if (file === undefined || !['read', 'inline', 'worker', 'analyze'].includes(mode ?? '')) throw new Error('usage: summary-child.ts read|inline|worker|analyze FILE');
const CHUNK = 100 * 1024;

async function forEachChunk(fn: (chunk: Buffer) => void): Promise<number> {
  let bytes = 0;
  for await (const chunk of createReadStream(file as string, { highWaterMark: CHUNK })) {
    bytes += (chunk as Buffer).length;
    fn(chunk as Buffer);
  }
  return bytes;
}

/** Chunks in flight to the worker at most (3.2 MB): without a limit, reading a file outruns the worker and the queue grows. */
const MAX_IN_FLIGHT = 32;

async function inWorker(): Promise<{ bytes: number; summary: Summary }> {
  // The worker is TypeScript: register tsx in it first (Node 20 does not hand --import hooks to workers).
  const entry = JSON.stringify(new URL('./summary-worker.ts', import.meta.url).href);
  const worker = new Worker(`import('tsx/esm/api').then(({ register }) => { register(); return import(${entry}); });`, { eval: true });
  let inFlight = 0;
  let wake: (() => void) | undefined;
  const done = new Promise<Summary>((resolve, reject) => {
    worker.on('message', (m: { ack?: true; summary?: Summary; error?: string }) => {
      if (m.ack === true) {
        inFlight--;
        wake?.();
      } else if (m.summary !== undefined) resolve(m.summary);
      else reject(new Error(m.error));
    });
    worker.once('error', reject);
  });
  let bytes = 0;
  for await (const chunk of createReadStream(file as string, { highWaterMark: CHUNK })) {
    bytes += (chunk as Buffer).length;
    while (inFlight >= MAX_IN_FLIGHT) await new Promise<void>((resolve) => (wake = resolve));
    inFlight++;
    worker.postMessage(chunk);
  }
  worker.postMessage(null);
  const summary = await done;
  await worker.terminate();
  return { bytes, summary };
}

const startRssKb = peakRssKb(process.pid);
const cpu0 = sampleCpu(process.pid);
// getrusage counts threads that already exited (the worker); /proc/PID/task does not.
const usage0 = process.cpuUsage();
const t0 = performance.now();
let bytes = 0;
let extra: Record<string, unknown> = {};
if (mode === 'read') {
  bytes = await forEachChunk(() => {});
} else if (mode === 'inline') {
  const s = createSummarizer();
  bytes = await forEachChunk((chunk) => s.write(chunk));
  const summary = s.end();
  extra = { nodeCount: summary.nodeCount, edgeCount: summary.edgeCount, classes: summary.classes.length };
} else if (mode === 'worker') {
  const r = await inWorker();
  bytes = r.bytes;
  extra = { nodeCount: r.summary.nodeCount, edgeCount: r.summary.edgeCount, classes: r.summary.classes.length };
} else {
  const a = await analyzeSnapshotFile(file, { maxBytes: 4e9 });
  bytes = a.snapshotBytes;
  extra = { nodeCount: a.nodeCount, edgeCount: a.edgeCount, classes: a.classes.length, memory: a.memory, stringCount: undefined };
}
const wallMs = performance.now() - t0;
const cpu = cpuDeltaMs(cpu0, sampleCpu(process.pid));
const usage = process.cpuUsage(usage0);
console.log(JSON.stringify({ mode, bytes, wallMs, cpuMainMs: cpu.mainMs, cpuAllMs: (usage.user + usage.system) / 1000, startRssKb, peakRssKb: peakRssKb(process.pid), ...extra }));
