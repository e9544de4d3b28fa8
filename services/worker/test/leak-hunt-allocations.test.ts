/**
 * Hunts that track allocations, against real targets: each leak shape of the
 * suite (packages/analysis/test/fixtures/shapes-target.cjs, testkit's
 * alloc-sites.cjs) on Node 20, 22 and 24 and a Chromium page; the hunt's
 * suspect #1 says where its objects were allocated (the function that made
 * them, its script, line and column as V8 gives them). Tracking is stopped
 * in the target after the hunt, a cancelled one included: checked by asking
 * the target's V8 (a fresh session's snapshot has empty trace sections, and
 * has them while tracking runs).
 */
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { after, afterEach, before, test } from 'node:test';
import { CdpSession } from '@heapcap/capture';
import { allocatedAtLine, LeakHuntSchema, suspectAllocatedAt, type LeakHunt } from '@heapcap/analysis';
import type { LeakHuntRecord } from '@heapcap/state';
import { fixturePath, startCdpProxy, startChromium, startNodeTarget, startRedis, tmpDir, waitFor, type NodeTarget, type NodeVersion, type RedisServer } from '@heapcap/testkit';
import { createHarness, type Harness } from './helpers/harness.ts';
import { runLeakHunt, type LeakHuntWorkerDeps } from '../src/leak-hunt.ts';

const SHAPES = fileURLToPath(new URL('../../../packages/analysis/test/fixtures/shapes-target.cjs', import.meta.url));

let redis: RedisServer;
let h: Harness | undefined;

before(async () => {
  redis = await startRedis();
});
afterEach(async () => {
  await h?.cleanup();
  h = undefined;
});
after(async () => {
  await redis?.stop();
});

async function harness(): Promise<{ hh: Harness; deps: LeakHuntWorkerDeps }> {
  h = await createHarness(redis.url);
  const hh = h;
  const scratch = await tmpDir('heapcap-hunt-alloc');
  hh.onCleanup(() => scratch.cleanup());
  return { hh, deps: { queue: hh.queue, sink: hh.store, log: hh.log, maxBytes: 1e9, tempDir: scratch.path, concurrency: 1, workerId: 'test-worker' } };
}

async function nodeTarget(hh: Harness, id: string, node: NodeVersion, script: string): Promise<NodeTarget> {
  const t = await startNodeTarget({ node, script });
  hh.onCleanup(() => t.kill());
  await hh.queue.targets.put({ id, kind: 'node', ws: t.wsUrl ?? '', labels: { service: 'test' } });
  return t;
}

/** Whether the target's V8 tracks allocations now: a fresh session's snapshot has trace sections only then. */
async function tracking(wsUrl: string): Promise<boolean> {
  const probe = await CdpSession.connect(wsUrl, { connectTimeoutMs: 10_000, commandTimeoutMs: 60_000 });
  try {
    await probe.send('HeapProfiler.enable');
    const parts: Buffer[] = [];
    const off = probe.onSnapshotChunk((c) => parts.push(Buffer.from(c)));
    try {
      await probe.send('HeapProfiler.takeHeapSnapshot', { reportProgress: false });
    } finally {
      off();
    }
    const snapshot = JSON.parse(Buffer.concat(parts).toString('utf8')) as { trace_tree: unknown[]; trace_function_infos: unknown[] };
    return snapshot.trace_tree.length > 0 || snapshot.trace_function_infos.length > 0;
  } finally {
    // Closing a session stops any tracking (and clears ids): the probe is the last thing a test asks.
    await probe.close();
  }
}

/** Runs hunt of `targetId`, `during` the wait between baseline and target; the record and the report. */
async function hunt(hh: Harness, deps: LeakHuntWorkerDeps, targetId: string, during: () => Promise<void>, allocations?: boolean): Promise<{ done: LeakHuntRecord; report: LeakHunt }> {
  const created = await hh.queue.leakHunts.create({ targetId, intervalMs: 4_000, requestedBy: 'oncall', allocations });
  const hunting = runLeakHunt(deps, created.id, new AbortController().signal);
  await waitFor(async () => ((await hh.queue.leakHunts.get(created.id))?.phase === 'wait' ? true : undefined), { timeoutMs: 90_000, intervalMs: 20, what: 'the hunt to wait after its baseline' });
  await during();
  const done = await hunting;
  assert.ok(done !== null);
  assert.equal(done.status, 'succeeded', JSON.stringify(done.error));
  const report = LeakHuntSchema.parse(await hh.store.getDocument(done.reportKey ?? ''));
  return { done, report };
}

/** What suspect #1 of a hunt says about where its objects were allocated: the first stack's top frame is the script's, and it names `functions`' frame at V8's position. */
function checkSite(report: LeakHunt, leaked: string, script: string | ((url: string) => boolean), functions: Record<string, [number, number]>): string {
  const ours = typeof script === 'string' ? (url: string) => url === script : script;
  const top = report.suspects?.suspects[0];
  assert.ok(top !== undefined, 'a suspect');
  assert.equal(top.class, leaked, JSON.stringify(report.suspects?.suspects.map((x) => x.reason)));
  const at = suspectAllocatedAt(top.parts);
  assert.ok(at !== undefined, `suspect #1 has an allocation stack: ${JSON.stringify(top.parts)}`);
  const frames = at.stacks[0]?.frames ?? [];
  assert.ok(ours(frames[0]?.url ?? ''), JSON.stringify(frames));
  const named = frames.find((f) => ours(f.url) && f.functionName in functions);
  assert.ok(named !== undefined, `one of ${Object.keys(functions).join(', ')} in ${JSON.stringify(frames)}`);
  assert.deepEqual([named.line, named.column], functions[named.functionName]);
  assert.ok(frames.every((f) => !f.url.startsWith('node:')), 'node: frames folded');
  // Not every object gets a stack (INSPECTOR-FACTS: a trace node whose function info is empty): measured 440 to 2,554 of 3,000 here.
  assert.ok(at.withStack > 0 && at.withStack <= at.instances && at.stacks[0]!.count <= at.withStack, `${at.withStack} of ${at.instances} instances had a stack`);
  assert.equal(report.allocations?.tracked, true);
  // The line every channel prints: the report carries it.
  assert.equal(top.allocated, allocatedAtLine(at));
  assert.match(top.allocated ?? '', /^allocated at \S+:\d+ \S*/);
  return top.allocated ?? '';
}

/** shapes-target.cjs's command handler, where every shape's objects are made: V8 positions it at its parameter list (1-based). */
const HANDLE: Record<string, [number, number]> = { handle: [70, 16] };
/** The leak shapes: the command that grows one, its reply, the class of suspect #1, and where V8 says its objects were made. */
const SHAPE_CASES: { command: string; reply: string; leaked: string; functions: Record<string, [number, number]> }[] = [
  { command: 'map 2000', reply: 'MAP', leaked: 'SessionRecord', functions: { ...HANDLE, SessionRecord: [20, 14] } },
  { command: 'closures 2000', reply: 'CLOSURES', leaked: 'IncomingRequest', functions: HANDLE },
  { command: 'listeners 2000', reply: 'LISTENERS', leaked: '(closure)', functions: HANDLE },
  { command: 'concat 2000', reply: 'CONCAT', leaked: '(concatenated string)', functions: HANDLE },
  { command: 'buffers 2000', reply: 'BUFFERS', leaked: 'Buffer', functions: HANDLE },
  { command: 'conns 2000', reply: 'CONNS', leaked: 'Connection', functions: HANDLE },
  { command: 'timers 2000', reply: 'TIMERS', leaked: 'Timeout', functions: HANDLE },
  { command: 'pending 2000', reply: 'PENDING', leaked: 'Generator', functions: { ...HANDLE, '': [110, 13] } },
];

void test('Node 20: each leak shape\'s suspect #1 names where its objects were allocated; tracking stopped after each hunt', { timeout: 900_000 }, async () => {
  const { hh, deps } = await harness();
  const lines: string[] = [];
  for (const c of SHAPE_CASES) {
    // A target per shape: one shape's leftovers (a Set's table) are not the next one's suspect.
    const id = `shapes-${c.reply.toLowerCase()}`;
    const t = await nodeTarget(hh, id, 'system', SHAPES);
    const { report } = await hunt(hh, deps, id, async () => void (await t.request(c.command, c.reply)));
    const top = report.suspects?.suspects[0];
    console.log(c.command, top?.class, JSON.stringify(suspectAllocatedAt(top?.parts)?.stacks[0]));
    lines.push(`${c.command}: ${checkSite(report, c.leaked, SHAPES, c.functions)}`);
    assert.equal(await tracking(t.wsUrl ?? ''), false, 'no tracker left running');
  }
  console.log(lines.join('\n'));
});

/**
 * alloc-sites.cjs's leak: handle → leakSessions → createSession → new Session (1-based positions of the
 * functions). V8's tracker names physical frames: optimized code that inlined the leak's functions is
 * named by the function it was inlined into (seen: `handle` on Node 22, `leakSessions` on Node 24).
 */
const LEAK_FUNCTIONS: Record<string, [number, number]> = { Session: [15, 14], createSession: [22, 23], leakSessions: [30, 22], handle: [44, 16] };

for (const node of ['system', '22', '24'] as const) {
  void test(`Node ${node === 'system' ? '20' : node}: alloc-sites' leak and the Map shape carry their allocation sites`, { timeout: 600_000 }, async () => {
    const { hh, deps } = await harness();
    const sites = await nodeTarget(hh, 'sites', node, fixturePath('alloc-sites.cjs'));
    const { report } = await hunt(hh, deps, 'sites', async () => void (await sites.request('leak 3000', 'LEAKED')));
    if (node === '22') {
      // Node 22 (V8 12.4): objects allocated by optimized code (alloc-sites' hot loop) get trace_node_id 0 in the
      // snapshot (measured: 2,974 to 3,003 of 3,003 Sessions, with or without a wait; Node 20: 3 to 860; Node 24: none).
      // What it does get: the hunt tracked, every instance counted, and the share with a stack said.
      const top = report.suspects?.suspects[0];
      assert.equal(top?.class, 'Session');
      assert.equal(report.allocations?.tracked, true);
      const at = top?.parts?.[0]?.allocatedAt;
      assert.equal(at?.instances, 3000, JSON.stringify(at));
      // V8 attributes by address, so a few objects get another allocation's stack (seen: 1 Session at `emit`
      // node:events); when the tracker kept a real share of them, the top stack is the leak's code.
      const first = at?.stacks[0];
      if ((first?.count ?? 0) >= 100) assert.ok(first!.frames.some((f) => f.url === fixturePath('alloc-sites.cjs') && f.functionName in LEAK_FUNCTIONS), JSON.stringify(first));
      console.log(node, `alloc-sites: ${at?.withStack} of ${at?.instances} Sessions had a stack`, top?.allocated ?? '');
    } else console.log(node, checkSite(report, 'Session', fixturePath('alloc-sites.cjs'), LEAK_FUNCTIONS));
    if (node !== 'system') {
      const shapes = await nodeTarget(hh, 'shapes', node, SHAPES);
      const map = await hunt(hh, deps, 'shapes', async () => void (await shapes.request('map 2000', 'MAP')));
      console.log(node, checkSite(map.report, 'SessionRecord', SHAPES, { ...HANDLE, SessionRecord: [20, 14] }));
    }
  });
}

void test('Chromium: a page\'s leak carries the page script\'s function', { timeout: 300_000 }, async () => {
  const { hh, deps } = await harness();
  const chromium = await startChromium();
  hh.onCleanup(() => chromium.close());
  const html =
    `<title>heapcap test page</title><script>class Session { constructor(i) { this.id = i; this.user = 'user-' + i; } }\n` +
    `window.__sessions = [];\nfunction createSession(i) { const s = new Session(i); window.__sessions.push(s); return s; }\n` +
    `function leakSessions(n) { for (let i = 0; i < n; i++) createSession(i); }</script>`;
  const url = `data:text/html,${encodeURIComponent(html)}`;
  const page = await chromium.openPage(url);
  await hh.queue.targets.put({ id: 'page', kind: 'chromium', browser: `127.0.0.1:${chromium.port}`, select: { urlPattern: '^data:' }, labels: { service: 'test' } });
  const { report } = await hunt(hh, deps, 'page', async () => {
    const s = await CdpSession.connect(page.webSocketDebuggerUrl, { connectTimeoutMs: 10_000, commandTimeoutMs: 10_000 });
    // Not closed before the hunt ends: closing a session clears the page's ids.
    hh.onCleanup(() => s.close());
    await s.send('Runtime.evaluate', { expression: 'leakSessions(3000)' });
  });
  const top = report.suspects?.suspects[0];
  console.log('chromium', allocatedAtLine(suspectAllocatedAt(top?.parts)), JSON.stringify(suspectAllocatedAt(top?.parts)?.stacks[0]));
  // V8 names a data: URL's script by the URL, partly decoded.
  checkSite(report, 'Session', (u) => u.startsWith('data:text/html,') && u.includes('leakSessions'), { Session: [1, 67], createSession: [3, 23], leakSessions: [4, 22] });
});

void test('tracking is stopped in the target after a cancelled hunt; the probe sees it while it runs', { timeout: 300_000 }, async () => {
  const { hh, deps } = await harness();
  const t = await nodeTarget(hh, 'victim', 'system', SHAPES);
  // The probe can fail: while a session tracks, a fresh session's snapshot carries the trace sections.
  const tracker = await CdpSession.connect(t.wsUrl ?? '', { connectTimeoutMs: 10_000, commandTimeoutMs: 10_000 });
  await tracker.send('HeapProfiler.enable');
  await tracker.send('HeapProfiler.startTrackingHeapObjects', { trackAllocations: true });
  await t.request('map 100', 'MAP');
  assert.equal(await tracking(t.wsUrl ?? ''), true, 'the probe sees a running tracker');
  await tracker.close();
  // A hunt cancelled (its worker shutting down) while it tracks, between baseline and target.
  const created = await hh.queue.leakHunts.create({ targetId: 'victim', intervalMs: 600_000, requestedBy: 'oncall' });
  const stop = new AbortController();
  const hunting = runLeakHunt(deps, created.id, stop.signal);
  await waitFor(async () => ((await hh.queue.leakHunts.get(created.id))?.phase === 'wait' ? true : undefined), { timeoutMs: 90_000, intervalMs: 20, what: 'the hunt to wait after its baseline' });
  await t.request('map 100', 'MAP');
  stop.abort();
  const done = await hunting;
  assert.equal(done?.status, 'failed');
  assert.equal(done?.error?.code, 'cancelled', JSON.stringify(done?.error));
  assert.equal(await tracking(t.wsUrl ?? ''), false, 'no tracker left running after the cancelled hunt');
});

void test('a redacted hunt (strings) still names the functions and scripts that allocated: they are names, not values', { timeout: 300_000 }, async () => {
  const { hh, deps } = await harness();
  const sites = await nodeTarget(hh, 'secretive', 'system', fixturePath('alloc-sites.cjs'));
  const created = await hh.queue.leakHunts.create({ targetId: 'secretive', intervalMs: 4_000, requestedBy: 'oncall', redact: 'strings' });
  const hunting = runLeakHunt(deps, created.id, new AbortController().signal);
  await waitFor(async () => ((await hh.queue.leakHunts.get(created.id))?.phase === 'wait' ? true : undefined), { timeoutMs: 90_000, intervalMs: 20, what: 'the hunt to wait after its baseline' });
  await sites.request('leak 3000', 'LEAKED');
  const done = await hunting;
  assert.equal(done?.status, 'succeeded', JSON.stringify(done?.error));
  assert.ok((done.redaction?.redactedStrings ?? 0) > 0, JSON.stringify(done.redaction));
  const report = LeakHuntSchema.parse(await hh.store.getDocument(done.reportKey ?? ''));
  console.log('redacted', checkSite(report, 'Session', fixturePath('alloc-sites.cjs'), LEAK_FUNCTIONS));
});

void test('allocations: false: the hunt does not track; its report says so and has no stacks', { timeout: 300_000 }, async () => {
  const { hh, deps } = await harness();
  const t = await nodeTarget(hh, 'plain', 'system', SHAPES);
  const { done, report } = await hunt(hh, deps, 'plain', async () => {
    await t.request('map 2000', 'MAP');
  }, false);
  assert.equal(done.allocations, false);
  assert.deepEqual(report.allocations, { tracked: false, instances: 0, withStack: 0 });
  assert.equal(report.suspects?.suspects[0]?.class, 'SessionRecord');
  assert.equal(suspectAllocatedAt(report.suspects?.suspects[0]?.parts), undefined);
});

void test('a target whose inspector refuses startTrackingHeapObjects: the hunt fails with allocations_unsupported and says to hunt without', { timeout: 300_000 }, async () => {
  const { hh, deps } = await harness();
  const t = await startNodeTarget({ script: SHAPES });
  hh.onCleanup(() => t.kill());
  // The seam we own: a proxy that answers the method as an inspector without it does.
  const proxy = await startCdpProxy(t.wsUrl ?? '', { refuse: 'HeapProfiler.startTrackingHeapObjects' });
  hh.onCleanup(() => proxy.close());
  await hh.queue.targets.put({ id: 'old', kind: 'node', ws: proxy.url, labels: { service: 'test' } });
  const created = await hh.queue.leakHunts.create({ targetId: 'old', intervalMs: 2_000, requestedBy: 'oncall' });
  const done = await runLeakHunt(deps, created.id, new AbortController().signal);
  assert.equal(done?.status, 'failed');
  assert.equal(done?.error?.code, 'allocations_unsupported', JSON.stringify(done?.error));
  assert.match(done?.error?.hint ?? '', /allocations: false .*--no-allocations/);
  // Refused right after the baseline snapshot (tracking starts there), before the hunt recorded it.
  assert.equal(done?.phase, 'baseline');
  assert.deepEqual(done?.snapshots, []);
  // Refused before anything tracked: nothing to stop.
  assert.equal(await tracking(t.wsUrl ?? ''), false);
});
