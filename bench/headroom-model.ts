/**
 * Headroom model measurement: how much resident memory a heap snapshot costs
 * the target, for Node 20, Node 22 and Chromium at several heap sizes. The
 * data behind packages/capture/src/headroom/memory-model.ts and docs/headroom.md.
 *
 * Per point: a fresh target holding HEAP_MB of objects (heap-holder.cjs, or the
 * leaky page in Chromium), idle for a moment; its RSS (VmRSS) is read, its
 * peak (VmHWM) reset through /proc/PID/clear_refs ("5"), then our engine
 * captures it with default options (warm auto, no gc) and drains the snapshot;
 * the target's VmHWM afterwards is the peak during the capture. For Chromium the
 * process measured is the renderer holding the page (the largest renderer of
 * the browser's process group). extra = peak − RSS before.
 *
 * Then, per family, a least-squares fit extra = factor × heapUsed + constant
 * (for reference), and each point's error for the coefficients shipped in
 * memory-model.ts. Checks: every point of the shipped model within 25%.
 *
 * Heap shape matters as much as heap size, so two more Node 20 targets hold the
 * same 300,000 small objects either in one flat array or in arrays of 100
 * (outside the fit, printed with the model's error, not checked).
 *
 * Run (as root, Linux): node --import tsx bench/headroom-model.ts
 *   BENCH_HEADROOM_SIZES=25,50,100,200   heap sizes in MB
 *   BENCH_HEADROOM_RUNTIMES=node20,node22,chromium
 *   BENCH_HEADROOM_SHAPES=0               skip the heap-shape targets
 *   BENCH_HEADROOM_JSON=FILE              also write the raw points as JSON
 */
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { captureHeapSnapshot } from '@heapcap/capture';
import { estimateExtraBytes, modelFamily, MEMORY_MODELS, type ModelFamily } from '@heapcap/capture';
import { startChromium, startNodeTarget, startPageServer, type Chromium, type PageServer } from '@heapcap/testkit';
import { heapHolderTarget, withTarget } from './lib/targets.ts';
import { withScratchDir } from './lib/tmp.ts';
import { Checks, mb, ms, printTable, type Check } from './lib/report.ts';

type Runtime = 'node20' | 'node22' | 'chromium';

/** Heap-shape targets: 300,000 objects `{ i, s: 's' + i }`, in one array or in arrays of 100. */
const SHAPES = {
  'flat array': 'globalThis.held = new Array(300000).fill(0).map((_, i) => ({ i, s: "s" + i }));',
  'arrays of 100': 'globalThis.held = Array.from({ length: 3000 }, (_, j) => Array.from({ length: 100 }, (_, k) => ({ i: j * 100 + k, s: "s" + (j * 100 + k) })));',
} as const;

/** One measured capture. */
interface Point {
  runtime: Runtime;
  family: ModelFamily;
  version: string;
  heapMb: number;
  heapUsedBytes: number;
  heapTotalBytes: number;
  rssBeforeBytes: number;
  peakBytes: number;
  extraBytes: number;
  snapshotBytes: number;
  captureMs: number;
}

const SIZES = (process.env.BENCH_HEADROOM_SIZES ?? '25,50,100,200').split(',').map(Number);
const RUNTIMES = (process.env.BENCH_HEADROOM_RUNTIMES ?? 'node20,node22,chromium').split(',') as Runtime[];
const TOLERANCE = 0.25;
/** Lets the target finish lazy compilation and background GC before RSS is read. */
const SETTLE_MS = 2_000;

function statusKb(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const m = new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (m?.[1] === undefined) throw new Error(`no ${field} for pid ${pid}`);
  return Number(m[1]);
}

/** "5" resets the process's peak RSS (VmHWM) to its current RSS (proc(5), clear_refs). */
function resetPeak(pid: number): void {
  writeFileSync(`/proc/${pid}/clear_refs`, '5');
}

/** Capture with the engine's defaults and drain the snapshot; returns heap facts and the measured peak. */
async function measure(runtime: Runtime, heapMb: number, pid: number, endpoint: Parameters<typeof captureHeapSnapshot>[0]['endpoint']): Promise<Point> {
  await sleep(SETTLE_MS);
  const rssBeforeBytes = statusKb(pid, 'VmRSS') * 1024;
  resetPeak(pid);
  const t0 = performance.now();
  const result = await captureHeapSnapshot({ endpoint, timeouts: { snapshotMs: 20 * 60_000 } }, async (snapshot) => {
    for await (const chunk of snapshot) void chunk;
  });
  const captureMs = performance.now() - t0;
  const peakBytes = statusKb(pid, 'VmHWM') * 1024;
  return {
    runtime,
    family: modelFamily(result.facts.product, result.facts.v8Version),
    version: result.facts.version,
    heapMb,
    heapUsedBytes: result.facts.heap.usedBytes,
    heapTotalBytes: result.facts.heap.totalBytes,
    rssBeforeBytes,
    peakBytes,
    extraBytes: peakBytes - rssBeforeBytes,
    snapshotBytes: result.stream.bytes,
    captureMs,
  };
}

async function measureShape(dir: string, shape: keyof typeof SHAPES): Promise<Point> {
  const script = join(dir, `${shape.replace(/\W+/g, '-')}.cjs`);
  writeFileSync(script, `${SHAPES[shape]}\nconsole.log('READY');\nsetInterval(() => {}, 1 << 30);\n`);
  const target = await startNodeTarget({ node: 'system', script });
  try {
    return await measure('node20', 0, target.pid, { kind: 'node', inspect: `127.0.0.1:${target.port!}` });
  } finally {
    await target.kill('SIGKILL');
  }
}

async function measureNode(runtime: 'node20' | 'node22', heapMb: number): Promise<Point> {
  return withTarget(heapHolderTarget(runtime === 'node20' ? 'system' : '22', heapMb), ({ target, inspect }) =>
    measure(runtime, heapMb, target.pid, { kind: 'node', inspect }),
  );
}

/** Renderer processes of the browser (same process group, `--type=renderer`), largest RSS first. */
export function renderers(pgid: number): number[] {
  const found: { pid: number; rss: number }[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      // Fields after the parenthesised command: state ppid pgrp ...
      const pgrp = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]);
      if (pgrp !== pgid) continue;
      if (!readFileSync(`/proc/${name}/cmdline`, 'utf8').includes('--type=renderer')) continue;
      found.push({ pid: Number(name), rss: statusKb(Number(name), 'VmRSS') });
    } catch {
      // The process ended while we looked.
    }
  }
  return found.sort((a, b) => b.rss - a.rss).map((r) => r.pid);
}

async function measureChromium(server: PageServer, heapMb: number): Promise<Point> {
  let browser: Chromium | undefined;
  try {
    browser = await startChromium();
    await browser.openPage(server.url(`/app/leaky?mb=${heapMb}`), { timeoutMs: 120_000 });
    const pid = renderers(browser.pid)[0];
    if (pid === undefined) throw new Error('no renderer process found');
    return await measure('chromium', heapMb, pid, { kind: 'chromium', browser: `127.0.0.1:${browser.port}`, select: { urlPattern: `mb=${heapMb}$` } });
  } finally {
    await browser?.close();
  }
}

/** Least squares for extra = factor × heapUsed + constant. */
function fit(points: Point[]): { factor: number; constantBytes: number } {
  const n = points.length;
  const mx = points.reduce((s, p) => s + p.heapUsedBytes, 0) / n;
  const my = points.reduce((s, p) => s + p.extraBytes, 0) / n;
  const sxy = points.reduce((s, p) => s + (p.heapUsedBytes - mx) * (p.extraBytes - my), 0);
  const sxx = points.reduce((s, p) => s + (p.heapUsedBytes - mx) ** 2, 0);
  const factor = sxx === 0 ? my / mx : sxy / sxx;
  return { factor, constantBytes: my - factor * mx };
}

function pct(x: number): string {
  return `${x >= 0 ? '+' : ''}${(100 * x).toFixed(1)}%`;
}

/** Measures every runtime and size, prints the table and the fits; returns the checks. */
export async function headroomModelBench(): Promise<Check[]> {
  const checks = new Checks('headroom-model');
  const points: Point[] = [];
  const server = await startPageServer();
  try {
    for (const runtime of RUNTIMES) {
      for (const heapMb of SIZES) {
        const p = runtime === 'chromium' ? await measureChromium(server, heapMb) : await measureNode(runtime, heapMb);
        console.log(
          `${runtime} ${p.version} HEAP_MB=${heapMb}: heap used ${mb(p.heapUsedBytes)} MB, RSS ${mb(p.rssBeforeBytes)} → peak ${mb(p.peakBytes)} MB ` +
            `(extra ${mb(p.extraBytes)} MB = ${(p.extraBytes / p.heapUsedBytes).toFixed(2)}× heap), snapshot ${mb(p.snapshotBytes)} MB in ${ms(p.captureMs)} ms`,
        );
        points.push(p);
      }
    }
  } finally {
    await server.close();
  }
  const shapes: (Point & { shape: string })[] = [];
  if (process.env.BENCH_HEADROOM_SHAPES !== '0') {
    await withScratchDir('headroom-shapes', async (dir) => {
      for (const shape of Object.keys(SHAPES) as (keyof typeof SHAPES)[]) {
        const p = { ...(await measureShape(dir, shape)), shape };
        console.log(`node20 shape "${shape}": heap used ${mb(p.heapUsedBytes)} MB, extra ${mb(p.extraBytes)} MB = ${(p.extraBytes / p.heapUsedBytes).toFixed(2)}× heap`);
        shapes.push(p);
      }
    });
  }
  if (process.env.BENCH_HEADROOM_JSON) writeFileSync(process.env.BENCH_HEADROOM_JSON, `${JSON.stringify({ points, shapes }, null, 2)}\n`);

  const families = [...new Set(points.map((p) => p.family))];
  const fits = new Map(families.map((f) => [f, fit(points.filter((p) => p.family === f))]));
  console.log('\nFits (extra = factor × heap used + constant):');
  for (const [f, c] of fits) {
    const shipped = MEMORY_MODELS[f];
    console.log(`  ${f}: fitted factor ${c.factor.toFixed(3)}, constant ${mb(c.constantBytes)} MB; shipped factor ${shipped.factor}, constant ${mb(shipped.constantBytes)} MB`);
  }
  console.log('');
  const rows = points.map((p) => {
    const c = fits.get(p.family)!;
    const fitted = c.factor * p.heapUsedBytes + c.constantBytes;
    const shipped = estimateExtraBytes(MEMORY_MODELS[p.family], p.heapUsedBytes);
    return [
      p.runtime,
      p.version,
      mb(p.heapUsedBytes),
      mb(p.rssBeforeBytes),
      mb(p.peakBytes),
      mb(p.extraBytes),
      (p.extraBytes / p.heapUsedBytes).toFixed(2),
      mb(p.snapshotBytes),
      mb(shipped),
      pct((shipped - p.extraBytes) / p.extraBytes),
      pct((p.rssBeforeBytes + shipped - p.peakBytes) / p.peakBytes),
      pct((fitted - p.extraBytes) / p.extraBytes),
    ];
  });
  printTable(
    ['runtime', 'version', 'heap used MB', 'RSS before MB', 'peak RSS MB', 'extra MB', 'extra/heap', 'snapshot MB', 'estimate MB', 'error (extra)', 'error (peak)', 'fit error'],
    rows,
  );
  if (shapes.length > 0) {
    console.log('\nHeap shape (Node 20, outside the fit):');
    printTable(
      ['shape', 'heap used MB', 'extra MB', 'extra/heap', 'snapshot MB', 'estimate MB', 'error (extra)'],
      shapes.map((p) => {
        const est = estimateExtraBytes(MEMORY_MODELS[p.family], p.heapUsedBytes);
        return [p.shape, mb(p.heapUsedBytes), mb(p.extraBytes), (p.extraBytes / p.heapUsedBytes).toFixed(2), mb(p.snapshotBytes), mb(est), pct((est - p.extraBytes) / p.extraBytes)];
      }),
    );
  }
  for (const p of points) {
    const shipped = estimateExtraBytes(MEMORY_MODELS[p.family], p.heapUsedBytes);
    const err = (shipped - p.extraBytes) / p.extraBytes;
    checks.expect(Math.abs(err) <= TOLERANCE, `${p.runtime} ${p.heapMb} MB: shipped model within 25% of the measured extra`, pct(err));
  }
  return checks.list;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  // Ctrl-C: exit through process.exit so the test kit's exit hook kills every target.
  for (const sig of ['SIGINT', 'SIGTERM'] as const) process.once(sig, () => process.exit(130));
  const list = await headroomModelBench();
  process.exitCode = list.some((c) => !c.ok) ? 1 : 0;
}
