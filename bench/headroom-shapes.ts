/**
 * Headroom by heap shape: per shape of packages/testkit/fixtures/heap-shapes.cjs
 * (and the bundle fixture), a fresh Node target; the snapshot's node and edge
 * counts (its JSON header), heap used, and the peak extra RSS of the capture
 * (VmHWM reset through /proc/PID/clear_refs, as bench/headroom-model.ts does).
 * Each shape runs in two fresh processes: the first is estimated by the
 * model, the second from the first's measured extra (`headroom.previous`, as
 * the worker does from its per-target record). Prints the engine's estimate
 * and error per capture; the data behind the shape table in docs/headroom.md.
 *
 * Run (as root, Linux): node --import tsx bench/headroom-shapes.ts
 *   BENCH_SHAPES=flat,strings,maps,closures,typed,nested,bundle
 *   BENCH_SHAPES_NODE=system,22
 *   BENCH_SHAPES_DOM=20000    also Chromium pages with a large DOM (N rows of a div and 10 spans), model only:
 *                             a page cannot read its renderer's peak, so no previous capture is recorded
 *   BENCH_SHAPES_JSON=FILE    also write the raw points
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { captureHeapSnapshot, type CaptureOptions, type PreviousCapture } from '@heapcap/capture';
import { fixturePath, startChromium, startNodeTarget, type Chromium, type NodeVersion } from '@heapcap/testkit';
import { renderers } from './headroom-model.ts';
import { withScratchDir } from './lib/tmp.ts';
import { mb, printTable } from './lib/report.ts';

const SHAPES = (process.env.BENCH_SHAPES ?? 'flat,strings,maps,closures,typed,nested,bundle').split(',').filter((x) => x !== '');
const NODES = (process.env.BENCH_SHAPES_NODE ?? 'system,22').split(',') as NodeVersion[];

function statusKb(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const m = new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (m?.[1] === undefined) throw new Error(`no ${field} for pid ${pid}`);
  return Number(m[1]);
}

/** A snapshot consumer that drains the stream and keeps its first bytes, where the header's counts are. */
function headKeeper(): { consume: (snapshot: AsyncIterable<unknown>) => Promise<void>; count: (k: 'node_count' | 'edge_count') => number } {
  let head = '';
  return {
    consume: async (snapshot) => {
      for await (const chunk of snapshot) if (head.length < 4096) head += Buffer.from(chunk as Uint8Array).toString('utf8');
    },
    count: (k) => Number(new RegExp(`"${k}":(\\d+)`).exec(head)?.[1] ?? NaN),
  };
}

interface ShapePoint {
  shape: string;
  node: string;
  version: string;
  heapUsedBytes: number;
  nodeCount: number;
  edgeCount: number;
  extraBytes: number;
  /** The engine's estimate: the model on the first process, the first process's capture scaled on the second. */
  estimateBytes: number;
  source: string;
  snapshotBytes: number;
}

/** One capture of `endpoint` with the peak RSS of process `pid` reset first: the point's extra memory, counts and estimate. */
async function measurePoint(pid: number, endpoint: CaptureOptions['endpoint'], shape: string, node: string, previous?: PreviousCapture): Promise<ShapePoint> {
  const rssBefore = statusKb(pid, 'VmRSS') * 1024;
  writeFileSync(`/proc/${pid}/clear_refs`, '5');
  const head = headKeeper();
  const result = await captureHeapSnapshot({ endpoint, timeouts: { snapshotMs: 20 * 60_000 }, headroom: { previous } }, head.consume);
  const extraBytes = statusKb(pid, 'VmHWM') * 1024 - rssBefore;
  return {
    shape,
    node,
    version: result.facts.version,
    heapUsedBytes: result.facts.heap.usedBytes,
    nodeCount: head.count('node_count'),
    edgeCount: head.count('edge_count'),
    extraBytes,
    estimateBytes: result.headroom.estimate.extraBytes,
    source: result.headroom.estimate.source,
    snapshotBytes: result.stream.bytes,
  };
}

async function measureShape(node: NodeVersion, shape: string, bundleDir: string, previous?: PreviousCapture): Promise<ShapePoint> {
  const target = await startNodeTarget(
    shape === 'bundle'
      ? { node, script: fixturePath('bundle-target.cjs'), env: { BUNDLE_DIR: bundleDir, BUNDLE_FUNCTIONS: '40000' }, readyTimeoutMs: 180_000 }
      : { node, script: fixturePath('heap-shapes.cjs'), env: { SHAPE: shape }, readyTimeoutMs: 180_000 },
  );
  try {
    await sleep(2_000);
    const endpoint = { kind: 'node' as const, inspect: `127.0.0.1:${target.port!}` };
    return await measurePoint(target.pid, endpoint, shape, node, previous);
  } finally {
    await target.kill('SIGKILL');
  }
}

/** A page holding `rows` divs of 10 spans each (21 DOM nodes per row, text included), measured in its renderer. */
const domPage = (rows: number): string => `data:text/html,<title>large dom</title><script>
addEventListener('load', () => {
  for (let i = 0; i < ${rows}; i++) {
    const d = document.createElement('div');
    d.className = 'row r' + i;
    for (let k = 0; k < 10; k++) { const s = document.createElement('span'); s.textContent = 'cell ' + i + '.' + k; d.appendChild(s); }
    document.body.appendChild(d);
  }
  document.title = 'large dom ready';
});
</script>`;

async function measureDom(rows: number): Promise<ShapePoint> {
  let browser: Chromium | undefined;
  try {
    browser = await startChromium();
    await browser.openPage(domPage(rows), { title: 'large dom ready', timeoutMs: 120_000 });
    await sleep(2_000);
    const pid = renderers(browser.pid)[0];
    if (pid === undefined) throw new Error('no renderer process found');
    const endpoint = { kind: 'chromium' as const, browser: `127.0.0.1:${browser.port}`, select: { urlPattern: '^data:' } };
    return await measurePoint(pid, endpoint, `dom ${rows} rows`, 'chromium');
  } finally {
    await browser?.close();
  }
}

const points: ShapePoint[] = [];
await withScratchDir('headroom-shapes', async (dir) => {
  for (const node of NODES) {
    for (const shape of SHAPES) {
      // Two fresh processes: the first is estimated by the model, the second from the first's measured peak.
      const first = await measureShape(node, shape, dir);
      console.log(JSON.stringify(first));
      const second = await measureShape(node, shape, dir, { heapUsedBytes: first.heapUsedBytes, extraBytes: first.extraBytes });
      console.log(JSON.stringify(second));
      points.push(first, second);
    }
  }
});
for (const rows of (process.env.BENCH_SHAPES_DOM ?? '').split(',').filter((x) => x !== '')) {
  const p = await measureDom(Number(rows));
  console.log(JSON.stringify(p));
  points.push(p);
}
if (process.env.BENCH_SHAPES_JSON) writeFileSync(process.env.BENCH_SHAPES_JSON, `${JSON.stringify(points, null, 2)}\n`);
const pct = (x: number): string => `${x >= 0 ? '+' : ''}${(100 * x).toFixed(1)}%`;
printTable(
  ['node', 'shape', 'estimate from', 'heap used MB', 'nodes', 'edges', 'extra MB', 'estimate MB', 'error'],
  points.map((p) => [p.version, p.shape, p.source, mb(p.heapUsedBytes), String(p.nodeCount), String(p.edgeCount), mb(p.extraBytes), mb(p.estimateBytes), pct((p.estimateBytes - p.extraBytes) / p.extraBytes)]),
);
