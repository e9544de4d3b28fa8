/**
 * Allocation sites from real sampling heap profiles of real Node targets (20, 22, 24) and a Chromium page
 * (testkit's alloc-sites.cjs, sampled over its inspector like heapcap's
 * continuous profiles): the summary's top site is the function that keeps
 * what it allocates, builtins and Node's own frames fold into their caller,
 * the estimate of objects matches the count the target made, and the diff of
 * two profiles of one session ranks the leaking site first while a site of
 * constant size does not grow.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { startChromium, startSamplingSession, type NodeVersion } from '@heapcap/testkit';
import { CaptureError } from '@heapcap/errors';
import { diffProfiles, isFoldedFrame, objectsOfSample, summarizeProfile, type SamplingHeapProfile } from '../src/index.ts';
import { SAMPLED_VERSIONS, sampleAllocSites, sampledRuns, type SampledRun } from './helpers.ts';

const INTERVAL = 8192;
/** The leak's functions, innermost first: an optimized leakSessions inlines the other two, and V8 then names it alone. */
const LEAK_FUNCTIONS = ['Session', 'createSession', 'leakSessions'];

/** One target per Node version: sample, leak 4,000 sessions and fill a cache, profile; leak 20,000 more and refill the cache, profile again. */
function run(node: NodeVersion): Promise<SampledRun> {
  const churn: [string, string][] = [['cache 2000', 'CACHED'], ['churn 20000', 'CHURNED']];
  return sampleAllocSites(node, INTERVAL, [['leak 4000', 'LEAKED'], ...churn], [['leak 20000', 'LEAKED'], ...churn]);
}

const VERSIONS = SAMPLED_VERSIONS;
const runs = sampledRuns(run);

for (const v of VERSIONS) {
  void test(`Node ${v}: the summary's top site is the leaking code, at its script's position; builtins and node: frames folded`, () => {
    const r = runs.get(v)!;
    const summary = summarizeProfile(r.second, { samplingIntervalBytes: INTERVAL });
    const top = summary.sites[0]!;
    assert.ok(LEAK_FUNCTIONS.includes(top.functionName), `top site ${JSON.stringify(summary.sites.slice(0, 4))}`);
    assert.equal(top.url, r.url);
    // V8 positions a function at its parameter list: Session's constructor 15:14, createSession 22:23, leakSessions 30:22 (1-based).
    assert.deepEqual([top.line, top.column], { Session: [15, 14], createSession: [22, 23], leakSessions: [30, 22] }[top.functionName]);
    const leakBytes = summary.sites.filter((s) => s.url === r.url && LEAK_FUNCTIONS.includes(s.functionName)).reduce((n, s) => n + s.bytes, 0);
    assert.ok(leakBytes > 0.5 * summary.totalBytes, `the leak holds ${leakBytes} of ${summary.totalBytes} sampled live bytes`);
    assert.equal(summary.totalBytes, (r.second as SamplingHeapProfile).samples.reduce((n, s) => n + s.size, 0), 'every sample in exactly one site');
    // Folded frames are never inside a stack, only alone (a stack of Node's own frames, e.g. a stream's callback, keeps its innermost frame).
    for (const st of summary.stacks) if (st.frames.length > 1) assert.ok(st.frames.every((f) => !isFoldedFrame({ functionName: f.functionName, url: f.url, lineNumber: f.line - 1, columnNumber: f.column - 1 })), JSON.stringify(st.frames));
    const leakStack = summary.stacks.find((st) => st.frames[0]!.url === r.url)!;
    assert.ok(!leakStack.frames.some((f) => f.url === '' || f.url.startsWith('node:')), 'builtins without a script (repeat, fill) and node: frames are folded into their callers');
    // The top stack starts at the site and names the command handler below it.
    const stack = summary.stacks[0]!;
    assert.equal(stack.frames[0]!.functionName, top.functionName);
    assert.ok(stack.frames.some((f) => f.functionName === 'handle'), JSON.stringify(stack.frames.map((f) => f.functionName)));
  });

  void test(`Node ${v}: the estimate of live objects of the leak is a few per Session kept (24,000)`, () => {
    const r = runs.get(v)!;
    const summary = summarizeProfile(r.second, { samplingIntervalBytes: INTERVAL, limit: 1000 });
    // A Session is 4 to 7 heap objects (itself, its array and the array's backing store, its string's pieces:
    // a cons string of the number's, the repeat's and the literal's); without the interval, objects are samples.
    const objects = summary.sites.filter((s) => s.url === r.url && LEAK_FUNCTIONS.includes(s.functionName)).reduce((n, s) => n + s.objects, 0);
    assert.ok(objects > 3 * 24_000 && objects < 9 * 24_000, `estimated ${objects} objects`);
    const orphans = summary.sites.find((s) => s.functionName === '(node not in the profile)');
    assert.ok((orphans?.samples ?? 0) < summary.samples / 50, `samples naming no node of the tree: ${orphans?.samples ?? 0} of ${summary.samples}`);
    const unscaled = summarizeProfile(r.second, { limit: 1000 });
    assert.equal(unscaled.sites.reduce((n, s) => n + s.objects, 0), unscaled.samples);
  });

  void test(`Node ${v}: the diff of two profiles ranks the leaking site first; the cache of constant size did not grow much`, () => {
    const r = runs.get(v)!;
    const diff = diffProfiles(r.first, r.second);
    const top = diff.grown[0]!;
    assert.ok(LEAK_FUNCTIONS.includes(top.functionName) && top.url === r.url, JSON.stringify(diff.grown.slice(0, 3)));
    assert.ok(top.bytesDelta > 0 && top.headBytes > 3 * top.baseBytes, JSON.stringify(top));
    const cache = [...diff.grown, ...diff.shrunk].find((d) => d.functionName === 'fillCache');
    assert.ok(cache === undefined || Math.abs(cache.bytesDelta) < top.bytesDelta / 4, JSON.stringify(cache));
    assert.equal(diff.totalBytesDelta, diff.head.totalBytes - diff.base.totalBytes);
  });
}

void test('objectsOfSample inverts V8\'s scaling: size / (1 - e^(-size/interval)) back to the count', () => {
  for (const size of [16, 100, 1024, 8192, 100_000]) {
    const reported = size / -Math.expm1(-size / INTERVAL);
    const count = objectsOfSample(reported, INTERVAL);
    assert.ok(Math.abs(count - reported / size) < 1e-6 * count, `${size}: ${count} vs ${reported / size}`);
  }
  assert.equal(objectsOfSample(INTERVAL - 1, INTERVAL), 1, 'an unscaled size counts one');
});

void test('what is not a sampling profile is refused with profile_invalid', () => {
  for (const bad of [null, {}, { head: {}, samples: [] }, { snapshot: { meta: {} }, nodes: [] }, { head: { callFrame: { functionName: 'x' }, id: 1, selfSize: 0, children: [] }, samples: [] }, { head: { callFrame: { functionName: 'x', url: '', lineNumber: 0, columnNumber: 0 }, id: 1, selfSize: 0, children: [] }, samples: [{ nodeId: 2 }] }]) {
    assert.throws(
      () => summarizeProfile(bad),
      (e: unknown) => e instanceof CaptureError && e.code === 'profile_invalid' && /heapprofile/.test(e.hint ?? ''),
    );
  }
});

void test('Chromium: a page\'s leak leads its profile and the diff of two profiles of one session, at the page\'s script', { timeout: 120_000 }, async () => {
  const chromium = await startChromium();
  try {
    // The page's own functions: Session objects kept on window, a cache refilled to the same size.
    const html =
      `<script>class Session { constructor(i) { this.id = i; this.user = 'user-' + i + '-' + 'u'.repeat(40); this.scopes = new Array(24).fill(i); } }` +
      ` window.__sessions = []; function createSession(i) { const s = new Session(i); window.__sessions.push(s); return s; }` +
      ` function leakSessions(n) { const start = window.__sessions.length; for (let i = 0; i < n; i++) createSession(start + i); }` +
      ` const cache = new Map(); function fillCache(n) { cache.clear(); for (let i = 0; i < n; i++) cache.set(i, { key: 'k' + i, value: new Array(8).fill(i) }); }</script>` +
      `<title>heapcap test page</title>`;
    const page = await chromium.openPage(`data:text/html,${encodeURIComponent(html)}`);
    const session = await startSamplingSession(page.webSocketDebuggerUrl, INTERVAL);
    try {
      await session.evaluate('leakSessions(4000); fillCache(2000)');
      const first = await session.profile();
      await session.evaluate('leakSessions(20000); fillCache(2000)');
      const second = await session.profile();
      const summary = summarizeProfile(second, { samplingIntervalBytes: INTERVAL });
      const top = summary.sites[0]!;
      assert.ok(LEAK_FUNCTIONS.includes(top.functionName) && top.url.startsWith('data:text/html'), JSON.stringify(summary.sites.slice(0, 4)));
      assert.ok(top.line > 0 && top.column > 0);
      const leakBytes = summary.sites.filter((s) => s.url === top.url && LEAK_FUNCTIONS.includes(s.functionName)).reduce((n, s) => n + s.bytes, 0);
      assert.ok(leakBytes > 0.5 * summary.totalBytes, `the leak holds ${leakBytes} of ${summary.totalBytes}`);
      const grown = diffProfiles(first, second).grown[0]!;
      assert.ok(LEAK_FUNCTIONS.includes(grown.functionName) && grown.headBytes > 3 * grown.baseBytes, JSON.stringify(grown));
    } finally {
      await session.close();
    }
  } finally {
    await chromium.close();
  }
});
