/**
 * Flame graphs of allocation profiles (issue 38, item 4) in Chromium against
 * `bin/heapcap serve --dev` on a real Redis, sampling a real Node target
 * (testkit's alloc-sites.cjs, which leaks Session objects on command):
 * GET /v1/captures/:id/profile?format=tree folds as the summary does; the
 * capture page draws it as an icicle whose frames include the leaking
 * function's site, and a click (or Enter) shows its totals; the compare page
 * of two profiles colours the grown site red and a shrunk one blue; the
 * target page shows the latest profile and links to its recent ones (and,
 * before there is one, how to take one); the flame graph's code is loaded only when a page draws one, and all
 * of the console's JavaScript stays within its budget. Each page passes axe
 * and fits a 390 px phone.
 */
import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { after, before, test } from 'node:test';
import puppeteer, { type Browser, type HTTPResponse, type Page } from 'puppeteer-core';
import { CHROMIUM_FLAGS, chromiumBinary, fixturePath, REPO_ROOT, startDevServe, startNodeTarget, startRedis, tmpDir, waitFor, type NodeTarget, type RedisServer, type RunningHeapcap, type TmpDir } from '@heapcap/testkit';
import { bytes } from '../src/format.ts';
import type { ProfileTree as Tree, ProfileTreeResponse as TreeBody, TreeFrame as Frame, TreeNode } from '../src/flame/types.ts';
import { accessible, DESKTOP, fitsWidth, PHONE, resize } from './browser-checks.ts';

declare const location: { hash: string };
declare const document: { querySelector(selector: string): { textContent: string | null } | null };
declare const getComputedStyle: (e: unknown) => { fill: string };

/** The README's pictures of the flame graphs (beside console.test's). */
const SHOTS = join(REPO_ROOT, 'docs/console');
/** Budget (issue 24): the console's JavaScript, gzipped, the lazy flame graph chunk included. */
const JS_BUDGET_BYTES = 150 * 1024;
/** The leak's functions: an optimized leakSessions inlines the other two, and V8 then names it alone. */
const LEAK = ['Session', 'createSession', 'leakSessions'];

let redis: RedisServer;
let dir: TmpDir;
let target: NodeTarget;
let serve: RunningHeapcap;
let browser: Browser;
let page: Page;

before(async () => {
  [redis, dir] = await Promise.all([startRedis(), tmpDir('heapcap-flame-graph')]);
  target = await startNodeTarget({ script: fixturePath('alloc-sites.cjs') });
  await writeFile(join(dir.path, 'targets.yaml'), `targets:\n  - id: sites\n    kind: node\n    inspect: 127.0.0.1:${target.port}\n`);
  serve = await startDevServe(dir.path, redis.url);
  browser = await puppeteer.launch({ executablePath: chromiumBinary(), headless: true, userDataDir: join(dir.path, 'chromium'), args: CHROMIUM_FLAGS.filter((f) => f !== '--headless'), defaultViewport: DESKTOP });
  page = await browser.newPage();
});
after(async () => {
  await browser?.close();
  await serve?.stop();
  await target?.kill();
  await redis?.stop();
  await dir?.cleanup();
});

async function api<T>(path: string, body?: unknown): Promise<{ status: number; body: T }> {
  const res = await fetch(`${serve.url}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
    signal: AbortSignal.timeout(120_000),
  });
  return { status: res.status, body: (await res.json()) as T };
}

type Capture = { id: string; status: string; phase: string | null; error: unknown };
type ErrorBody = { error: { code: string; message: string; details: { fields?: { path: string }[] } } };

async function succeeded(id: string): Promise<string> {
  const done = await waitFor(
    async () => {
      const r = (await api<{ capture: Capture }>(`/v1/captures/${id}`)).body.capture;
      return ['succeeded', 'failed', 'cancelled'].includes(r.status) ? r : undefined;
    },
    { timeoutMs: 120_000, intervalMs: 100, what: `capture ${id} to end` },
  );
  assert.equal(done.status, 'succeeded', JSON.stringify(done.error));
  return id;
}

/** A sampling profile of `sites` during which the target runs `commands` (each answered by its reply). */
async function profileWhile(commands: [string, string][]): Promise<string> {
  // 10 s: the commands must run inside the window, and on a loaded host a poll can take a second or more.
  const id = (await api<{ capture: Capture }>('/v1/captures', { target: 'sites', options: { kind: 'sampling', samplingSeconds: 10, samplingIntervalBytes: 8192 } })).body.capture.id;
  const seen = await waitFor(
    async () => {
      const r = (await api<{ capture: Capture }>(`/v1/captures/${id}`)).body.capture;
      return r.phase === 'sampling' || ['succeeded', 'failed', 'cancelled'].includes(r.status) ? r : undefined;
    },
    { timeoutMs: 120_000, intervalMs: 50, what: 'the capture to be sampling' },
  );
  assert.equal(seen.phase, 'sampling', `capture ${id} ended (${seen.status}) before this test saw it sampling`);
  for (const [command, reply] of commands) await target.request(command, reply);
  return succeeded(id);
}

/** The node whose own bytes are largest among the leak's functions (the leak's site in the tree). */
function leakSite(tree: Tree, by: (n: TreeNode) => number): number {
  let best = -1;
  tree.nodes.forEach((n, i) => {
    if (n.frame !== null && LEAK.includes(tree.frames[n.frame]!.functionName) && (best < 0 || by(n) > by(tree.nodes[best]!))) best = i;
  });
  assert.ok(best > 0, `no leak site in ${JSON.stringify(tree.frames.map((f) => f.functionName))}`);
  return best;
}

/**
 * Waits until the frame `selector` is drawn: d3 grows a new frame's rectangle to its width in a transition (250 ms),
 * and a click at the frame's centre before it ends lands on nothing.
 */
async function drawn(p: Page, selector: string): Promise<void> {
  await p.waitForSelector(selector, { timeout: 30_000 });
  await p.waitForFunction(
    (s: string) => {
      const g = document.querySelector(s) as unknown as { getAttribute(n: string): string | null; querySelector(s: string): { getAttribute(n: string): string | null } | null } | null;
      const width = Number(g?.getAttribute('width'));
      return width > 0 && Number(g?.querySelector('rect')?.getAttribute('width')) === width;
    },
    { timeout: 15_000 },
    selector,
  );
}

/** The flame graph's section at desktop size, for the README (docs/console/NAME.png). */
async function photograph(p: Page, name: string): Promise<void> {
  await mkdir(SHOTS, { recursive: true });
  const section = await p.$('.flame-graph');
  assert.ok(section !== null);
  await section.screenshot({ path: join(SHOTS, `${name}.png`) as `${string}.png` });
}

async function text(p: Page, selector: string): Promise<string> {
  return (await p.$eval(selector, (e) => e.textContent ?? '')).replace(/\s+/g, ' ').trim();
}

/** Both sizes: no sideways scroll, axe clean, and the frame `selector` drawn at each (the graph is redrawn at the box's width). */
async function bothSizes(p: Page, name: string, selector: string): Promise<void> {
  for (const size of [DESKTOP, PHONE]) {
    await resize(p, size);
    await drawn(p, selector);
    const label = `${name} at ${size.width}x${size.height}`;
    await fitsWidth(p, label);
    await accessible(p, label);
  }
  await resize(p, DESKTOP);
}

let base: string;
let head: string;
/** A heap snapshot of the same target, newer than both profiles. */
let snapshot: string;

void test('the target page before any profile: says how to take one', { timeout: 60_000 }, async () => {
  await page.goto(`${serve.url}/ui/#/targets/sites`);
  const note = await page.waitForSelector('[data-testid=no-profile]', { timeout: 30_000 });
  assert.match((await note!.evaluate((e) => e.textContent)) ?? '', /No allocation profile of sites yet\. Take one with heapcap trigger sites --sampling 30s/);
});

void test('GET /v1/captures/:id/profile?format=tree: the folded tree (as the summary folds), the growth tree with base=ID; base without format=tree and a snapshot refused with their codes', { timeout: 300_000 }, async () => {
  base = await profileWhile([
    ['leak 2000', 'LEAKED'],
    ['cache 4000', 'CACHED'],
  ]);
  head = await profileWhile([
    ['leak 30000', 'LEAKED'],
    ['cache 1000', 'CACHED'],
  ]);
  const res = await api<TreeBody>(`/v1/captures/${head}/profile?format=tree`);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.equal(res.body.captureId, head);
  assert.equal(res.body.baseId, null);
  const tree = res.body.tree;
  assert.deepEqual(tree.nodes[0]!, { ...tree.nodes[0]!, frame: null, parent: -1 });
  assert.equal(tree.samplingIntervalBytes, 8192);
  assert.equal(tree.base, undefined);
  // Folded as the summary: per frame, the nodes' own bytes are its site's bytes, and the totals agree.
  type Summary = { profile: { totalBytes: number; samples: number; sites: (Frame & { bytes: number; samples: number })[] } };
  const summary = (await api<Summary>(`/v1/captures/${head}/profile?limit=10000`)).body.profile;
  assert.equal(tree.nodes[0]!.totalBytes, summary.totalBytes);
  assert.equal(tree.samples, summary.samples);
  const key = (f: Frame): string => `${f.functionName} ${f.url}:${f.line}:${f.column}`;
  const self = new Map<string, number>();
  for (const n of tree.nodes) if (n.frame !== null && n.selfBytes > 0) self.set(key(tree.frames[n.frame]!), (self.get(key(tree.frames[n.frame]!)) ?? 0) + n.selfBytes);
  assert.deepEqual(self, new Map(summary.sites.map((s) => [key(s), s.bytes])));
  const leak = tree.nodes[leakSite(tree, (n) => n.selfBytes)]!;
  assert.equal(tree.frames[leak.frame!]!.url, fixturePath('alloc-sites.cjs'));
  assert.ok(leak.selfObjects > 0 && leak.totalBytes >= leak.selfBytes);

  const growth = await api<TreeBody>(`/v1/captures/${head}/profile?format=tree&base=${base}`);
  assert.equal(growth.status, 200, JSON.stringify(growth.body));
  assert.equal(growth.body.baseId, base);
  const g = growth.body.tree;
  assert.ok(g.base !== undefined && g.base.totalBytes > 0);
  assert.equal(g.nodes[0]!.baseTotalBytes, g.base.totalBytes);
  const grown = g.nodes[leakSite(g, (n) => n.selfBytes - (n.baseSelfBytes ?? 0))]!;
  assert.ok(grown.selfBytes > grown.baseSelfBytes!, JSON.stringify(grown));

  const misplaced = await api<ErrorBody>(`/v1/captures/${head}/profile?base=${base}`);
  assert.equal(misplaced.status, 400);
  assert.equal(misplaced.body.error.code, 'validation_failed');
  assert.deepEqual(misplaced.body.error.details.fields?.map((f) => f.path), ['base']);
  assert.match(misplaced.body.error.message, /format=tree/);
  snapshot = await succeeded((await api<{ capture: Capture }>('/v1/captures', { target: 'sites' })).body.capture.id);
  for (const q of [`format=tree`, `format=tree&base=${head}`]) {
    const refused = await api<ErrorBody>(`/v1/captures/${snapshot}/profile?${q}`);
    assert.equal(refused.status, 404, q);
    assert.equal(refused.body.error.code, 'profile_not_found', q);
  }
});

void test("the capture page: an icicle whose frames include the leak's site; a click (or Enter) shows its totals; the flame graph's code is lazy and within budget", { timeout: 120_000 }, async () => {
  const tree = (await api<TreeBody>(`/v1/captures/${head}/profile?format=tree`)).body.tree;
  const i = leakSite(tree, (n) => n.selfBytes);
  const leak = tree.nodes[i]!;
  const frame = tree.frames[leak.frame!]!;
  const js: HTTPResponse[] = [];
  const onResponse = (r: HTTPResponse): void => {
    if (r.url().endsWith('.js')) js.push(r);
  };
  page.on('response', onResponse);
  await page.goto(`${serve.url}/ui/#/captures/${head}`);
  const selector = `[data-testid=flame-graph] g.frame[data-node="${i}"]`;
  await drawn(page, selector);
  page.off('response', onResponse);
  assert.equal(await page.$eval(selector, (e) => e.getAttribute('data-function')), frame.functionName);
  // An icicle: the root on top, the site further down.
  const y = async (s: string): Promise<number> => Number(/translate\([^,]+,([\d.]+)\)/.exec((await page.$eval(s, (e) => e.getAttribute('transform'))) ?? '')?.[1]);
  assert.equal(await y('[data-testid=flame-graph] g.frame[data-node="0"]'), 0);
  assert.ok((await y(selector)) > 0);

  await page.click(selector);
  await page.waitForFunction((name: string) => document.querySelector('[data-testid=flame-function]')?.textContent === name, { timeout: 15_000 }, frame.functionName);
  assert.equal(await text(page, '[data-testid=flame-position]'), `${frame.line}:${frame.column} (the function's)`);
  assert.equal(await text(page, '[data-testid=flame-self]'), bytes(leak.selfBytes));
  assert.equal(await text(page, '[data-testid=flame-total]'), bytes(leak.totalBytes));
  assert.equal(await text(page, '[data-testid=flame-samples]'), `${leak.selfSamples.toLocaleString('en')} self, ${leak.totalSamples.toLocaleString('en')} total`);
  assert.equal(await text(page, '[data-testid=flame-objects]'), `${leak.selfObjects.toLocaleString('en')} self, ${leak.totalObjects.toLocaleString('en')} total`);
  assert.equal(await text(page, '[data-testid=flame-script]'), fixturePath('alloc-sites.cjs'));
  // The keyboard: a frame takes the focus, and Enter shows its totals (the root's here).
  // (An SVG frame: puppeteer's focus() takes HTML elements only.)
  await page.$eval('[data-testid=flame-graph] g.frame[data-node="0"]', (e) => (e as unknown as { focus(): void }).focus());
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => document.querySelector('[data-testid=flame-function]')?.textContent === 'all live allocations (the root)', { timeout: 15_000 });
  assert.equal(await text(page, '[data-testid=flame-total]'), bytes(tree.totalBytes));
  // One tab stop for the whole graph; ArrowDown goes to the first callee, and Enter shows that one.
  const active = (): Promise<string | null> => page.evaluate(() => (document as unknown as { activeElement: { getAttribute(n: string): string | null } | null }).activeElement?.getAttribute('data-node') ?? null);
  assert.equal(await active(), '0');
  await page.keyboard.press('ArrowDown');
  const child = tree.nodes.findIndex((n) => n.parent === 0);
  await page.waitForFunction((c: string) => (document as unknown as { activeElement: { getAttribute(n: string): string | null } | null }).activeElement?.getAttribute('data-node') === c, { timeout: 15_000 }, String(child));
  assert.deepEqual(await page.$$eval('[data-testid=flame-graph] g.frame[tabindex="0"]', (gs) => gs.map((g) => g.getAttribute('data-node'))), [String(child)], 'one tab stop');
  await page.keyboard.press('Enter');
  const childFrame = tree.frames[tree.nodes[child]!.frame!]!;
  await page.waitForFunction((name: string) => document.querySelector('[data-testid=flame-function]')?.textContent === name, { timeout: 15_000 }, childFrame.functionName || '(anonymous)');
  await page.keyboard.press('ArrowUp');
  await page.waitForFunction(() => (document as unknown as { activeElement: { getAttribute(n: string): string | null } | null }).activeElement?.getAttribute('data-node') === '0', { timeout: 15_000 });
  await bothSizes(page, 'capture page flame graph', selector);
  await drawn(page, selector);
  await page.click(selector);
  await page.waitForFunction((name: string) => document.querySelector('[data-testid=flame-function]')?.textContent === name, { timeout: 15_000 }, frame.functionName);
  await photograph(page, 'flame-graph');

  // The flame graph's code is a chunk of its own, not in the page's first script; all of it within the budget.
  const index = await (await fetch(`${serve.url}/ui/`)).text();
  const initial = [...index.matchAll(/src="(\/ui\/assets\/[^"]+\.js)"/g)].map((m) => m[1]!);
  const lazy = js.filter((r) => !initial.some((f) => r.url().endsWith(f)));
  assert.ok(lazy.some((r) => /\/render-[\w-]+\.js$/.test(r.url())), `a lazy chunk: ${js.map((r) => r.url()).join(', ')}`);
  // The first script from the server (the browser has it from the earlier tests' pages), the flame graph's as the page loaded it.
  const gz = (b: Buffer): number => gzipSync(b, { level: 9 }).length;
  let first = 0;
  for (const f of initial) first += gz(Buffer.from(await (await fetch(`${serve.url}${f}`)).arrayBuffer()));
  let later = 0;
  for (const r of lazy) later += gz(await r.buffer());
  assert.ok(first > 0);
  console.log(`console JavaScript: ${(first / 1024).toFixed(1)} KiB gzipped at first, ${(later / 1024).toFixed(1)} KiB more for the flame graph`);
  assert.ok(first + later <= JS_BUDGET_BYTES, `${first} + ${later} bytes gzipped`);
});

void test('the compare page of two profiles: the growth flame graph, the leaking site red, the shrunk cache blue, its totals on click', { timeout: 120_000 }, async () => {
  const g = (await api<TreeBody>(`/v1/captures/${head}/profile?format=tree&base=${base}`)).body.tree;
  const i = leakSite(g, (n) => n.selfBytes - (n.baseSelfBytes ?? 0));
  const shrunk = g.nodes.findIndex((n) => n.frame !== null && g.frames[n.frame]!.functionName === 'fillCache' && n.selfBytes > 0 && n.selfBytes < n.baseSelfBytes!);
  assert.ok(shrunk > 0, 'the cache (4,000 entries, then 1,000) shrank');
  // From the head's capture page: "Compare with…" offers the other profile, not the heap snapshot, and opens the compare page.
  await page.goto(`${serve.url}/ui/#/captures/${head}`);
  await page.waitForSelector(`[data-testid=compare-with] option[value="${base}"]`, { timeout: 30_000 });
  assert.equal(await page.$(`[data-testid=compare-with] option[value="${snapshot}"]`), null, 'a profile compares with profiles only');
  await page.select('[data-testid=compare-with]', base);
  await page.waitForFunction((h: string) => location.hash === h, { timeout: 15_000 }, `#/compare?base=${base}&head=${head}`);
  const selector = `[data-testid=flame-graph] g.frame[data-node="${i}"]`;
  await drawn(page, `${selector}[data-change=grown]`);
  await page.waitForSelector(`[data-testid=flame-graph] g.frame[data-node="${shrunk}"][data-change=shrunk]`, { timeout: 15_000 });
  const fill = (s: string): Promise<string> => page.$eval(`${s} rect`, (e) => getComputedStyle(e).fill);
  assert.equal(await fill(selector), 'rgb(252, 165, 165)', 'grown: red');
  assert.equal(await fill(`[data-testid=flame-graph] g.frame[data-node="${shrunk}"]`), 'rgb(147, 197, 253)', 'shrunk: blue');
  assert.equal(await fill('[data-testid=flame-graph] g.frame[data-node="0"]'), 'rgb(229, 231, 235)', 'the root has no bytes of its own: grey');
  await page.click(selector);
  const n = g.nodes[i]!;
  await page.waitForFunction((name: string) => document.querySelector('[data-testid=flame-function]')?.textContent === name, { timeout: 15_000 }, g.frames[n.frame!]!.functionName);
  assert.equal(await text(page, '[data-testid=flame-self]'), `${bytes(n.selfBytes)} (base ${bytes(n.baseSelfBytes!)}, +${bytes(n.selfBytes - n.baseSelfBytes!)})`);
  await bothSizes(page, 'compare page growth flame graph', selector);
  await photograph(page, 'growth-flame-graph');
});

void test("the target page: its latest profile's flame graph (not its newer heap snapshot), and its recent profiles", { timeout: 60_000 }, async () => {
  await page.goto(`${serve.url}/ui/#/targets/sites`);
  await page.waitForSelector('[data-testid=latest-profile]', { timeout: 30_000 });
  assert.match(await text(page, '[data-testid=latest-profile]'), new RegExp(`^From ${head}, taken `));
  // Its recent profiles, newest first as the API lists them, each linked; an older one links to its growth to the newest.
  const listed = (await api<{ items: { id: string }[] }>('/v1/captures?target=sites&status=succeeded&kind=sampling&limit=5')).body.items.map((c) => c.id);
  assert.deepEqual(listed.slice(0, 2), [head, base]);
  assert.deepEqual(await page.$$eval('[data-testid=recent-profiles] li', (lis) => lis.map((li) => li.getAttribute('data-capture'))), listed);
  assert.equal(await page.$eval(`[data-testid=recent-profiles] li[data-capture="${head}"] a`, (e) => e.getAttribute('href')), `#/captures/${head}`);
  assert.equal(await page.$eval(`[data-testid=recent-profiles] li[data-capture="${base}"] [data-testid=growth-to-newest]`, (e) => e.getAttribute('href')), `#/compare?base=${base}&head=${head}`);
  const tree = (await api<TreeBody>(`/v1/captures/${head}/profile?format=tree`)).body.tree;
  const selector = `[data-testid=flame-graph] g.frame[data-node="${leakSite(tree, (n) => n.selfBytes)}"]`;
  await drawn(page, selector);
  await bothSizes(page, 'target page flame graph', selector);
});
