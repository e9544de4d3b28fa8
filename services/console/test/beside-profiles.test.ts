/**
 * The console's pages for what issue 38 stores next to captures, in Chromium against real
 * `bin/heapcap serve --dev` processes on a real Redis, with real Node targets: a snapshot's page links to
 * the continuous allocation profile stored beside it and that profile's page links back, says it was read
 * from the held sampler and shows the gap a handover left; a scheduled snapshot's growth and the compare page
 * of two such snapshots show where their suspects were allocated (the grown site that constructs the class);
 * the compare page shows the allocation sites that grew between their profiles and links to those profiles'
 * growth flame graph; a retried capture's page lists its failed attempts; a hunt that tracked allocations
 * shows where suspect #1 was allocated. Each page passes axe and does not scroll sideways at 1440 and 390 px.
 * Slack's `diff` of the two snapshots (the API's command) leads its allocation part with the same top grown
 * site. A Chromium page (in the console's own browser) with a continuous profile: the diff of two of its
 * profiles ranks its leaking function first, and deregistering it stops the page's sampler.
 */
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, test } from 'node:test';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';
import { CHROMIUM_FLAGS, chromiumBinary, fixturePath, freePort, samplingProfilerRunning, slackSign, slashCommandBody, startDevServe, startNodeTarget, startRedis, tmpDir, waitFor, type NodeTarget, type RedisServer, type RunningHeapcap, type TmpDir } from '@heapcap/testkit';
import { bytes, signed, time } from '../src/format.ts';
import { accessible, DESKTOP, fitsWidth, PHONE, resize } from './browser-checks.ts';

declare const location: { hash: string };

/**
 * The hunt's target: `leak N` keeps N Leaked objects made by its stdin handler, whose stack V8's allocation
 * tracker keeps on every Node version (alloc-sites.cjs' optimized loop gets none on Node 22: docs/analysis.md).
 */
const LEAK_TARGET = fileURLToPath(new URL('../../../packages/analysis/test/fixtures/leak-target.cjs', import.meta.url));

/** The line of the suspect Order: the grown site that constructs it, in the profiles beside two snapshots. */
const ORDER_LINE = /^allocated at fixtures\/alloc-sites\.cjs:\d+ Order ← .*\(sampled: its constructor in the allocation profiles\)$/;
/** The narrowest phone the console is checked at: the growth's allocated lines are long. */
const NARROW = { width: 375, height: 812 };

let redis: RedisServer;
let dir: TmpDir;
let sites: NodeTarget;
let leaky: NodeTarget;
let serve: RunningHeapcap;
let browser: Browser;
let page: Page;

/** The watcher ticks every 500 ms (2 s interval) and samples no memory: only the profiled target is held. */
const SLACK_SECRET = 'beside-profiles-slack-secret';
const ENV = {
  HEAPCAP_WATCH_INTERVAL: '2s',
  HEAPCAP_SAMPLE_INTERVAL: '0',
  HEAPCAP_RATE_LIMIT: '1000000',
  HEAPCAP_SLACK_SIGNING_SECRET: SLACK_SECRET,
  HEAPCAP_SLACK_USERS_FILE: 'slack-users.yaml',
};

before(async () => {
  [redis, dir] = await Promise.all([startRedis(), tmpDir('heapcap-beside-profiles')]);
  [sites, leaky] = await Promise.all([startNodeTarget({ script: fixturePath('alloc-sites.cjs') }), startNodeTarget({ script: LEAK_TARGET })]);
  await writeFile(
    join(dir.path, 'targets.yaml'),
    `targets:\n  - id: sites\n    kind: node\n    inspect: 127.0.0.1:${sites.port}\n    profile: { every: 5s, samplingIntervalBytes: 16384 }\n  - id: leaky\n    kind: node\n    inspect: 127.0.0.1:${leaky.port}\n`,
  );
  await writeFile(join(dir.path, 'slack-users.yaml'), 'grants:\n  - name: oncall\n    team: T0TEST\n    users: [U0ONCALL]\n    scopes: [captures:read, artifacts:read]\n');
  serve = await startDevServe(dir.path, redis.url, ENV);
  browser = await puppeteer.launch({ executablePath: chromiumBinary(), headless: true, userDataDir: join(dir.path, 'chromium'), args: CHROMIUM_FLAGS.filter((f) => f !== '--headless'), defaultViewport: DESKTOP });
  page = await browser.newPage();
});
after(async () => {
  await browser?.close();
  await serve?.stop();
  await Promise.all([sites?.kill(), leaky?.kill()]);
  await redis?.stop();
  await dir?.cleanup();
});

async function api<T>(path: string, body?: unknown, method = body === undefined ? 'GET' : 'POST'): Promise<{ status: number; body: T }> {
  const res = await fetch(`${serve.url}${path}`, {
    method,
    ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
    signal: AbortSignal.timeout(120_000),
  });
  return { status: res.status, body: (await res.json()) as T };
}

interface Rec {
  id: string;
  status: string;
  error: unknown;
  trigger: { kind: string; besideOf?: string; profile?: { since: string; samplingIntervalBytes: number; gap?: { from: string; to: string; reason: string } } };
  profileCaptureId?: string;
  growth?: { suspects?: { items: { class: string; allocated?: string }[] }; allocations?: unknown };
  failedAttempts?: { attempt: number; of: number; code: string; message: string; phase?: string; failedAt: string; nextAttemptAt: string | null }[];
  createdAt: string;
}

const record = async (id: string): Promise<Rec> => (await api<{ capture: Rec }>(`/v1/captures/${id}`)).body.capture;

async function text(p: Page, selector: string): Promise<string> {
  return (await p.$eval(selector, (e) => e.textContent ?? '')).replace(/\s+/g, ' ').trim();
}

/** Opens a console page and waits for `selector`; then axe and no sideways scroll at both sizes. */
async function open(path: string, selector: string): Promise<void> {
  await page.goto(`${serve.url}/ui/#${path}`);
  await page.waitForSelector(selector, { timeout: 30_000 });
  for (const size of [DESKTOP, PHONE]) {
    await resize(page, size);
    const label = `${path} at ${size.width}x${size.height}`;
    await fitsWidth(page, label);
    await accessible(page, label);
  }
  await resize(page, DESKTOP);
}

/**
 * The newest scheduled snapshot of `sites` other than `not` and the continuous profile stored beside it, once that
 * succeeded; with `growth`, once the snapshot's growth has the grown allocation sites too (added after the profile).
 */
async function scheduledWithProfile(not: string | undefined, growth: boolean): Promise<{ snap: Rec; profile: Rec }> {
  return waitFor(
    async () => {
      const snap = (await api<{ items: Rec[] }>('/v1/captures?target=sites&trigger=schedule&limit=1')).body.items[0];
      if (snap === undefined || snap.id === not) return undefined;
      if (['failed', 'cancelled'].includes(snap.status)) assert.fail(`snapshot ${snap.id} ${snap.status}: ${JSON.stringify(snap.error)}`);
      if (snap.profileCaptureId === undefined || (growth && snap.growth?.allocations === undefined)) return undefined;
      const profile = await record(snap.profileCaptureId);
      return profile.status === 'succeeded' ? { snap, profile } : undefined;
    },
    { timeoutMs: 120_000, intervalMs: 250, what: `a scheduled snapshot with its profile beside it${growth ? ' and the grown sites in its growth' : ''}` },
  );
}

void test('snapshot ↔ profile beside it, the sampler and its gap, grown sites of two snapshots with a link to their growth flame graph', { timeout: 300_000 }, async () => {
  // A first continuous profile, then this serve goes and a second one takes the target over: the next read records the gap.
  await waitFor(async () => (await api<{ items: Rec[] }>('/v1/captures?target=sites&trigger=profile&limit=10')).body.items.find((r) => r.status === 'succeeded'), {
    timeoutMs: 90_000,
    intervalMs: 500,
    what: 'a first continuous profile',
  });
  await serve.stop('SIGTERM');
  serve = await startDevServe(dir.path, redis.url, ENV);
  const gapped = await waitFor(async () => (await api<{ items: Rec[] }>('/v1/captures?target=sites&trigger=profile&limit=20')).body.items.find((r) => r.status === 'succeeded' && r.trigger.profile?.gap !== undefined), {
    timeoutMs: 90_000,
    intervalMs: 500,
    what: 'a continuous profile read after the handover, with its gap',
  });
  const gap = gapped.trigger.profile!.gap!;
  assert.match(gap.reason, /^handover from /);
  await open(`/captures/${gapped.id}`, '[data-testid=profile-gap]');
  assert.equal(await text(page, '[data-testid=profile-gap]'), `no sampler ran from ${time(gap.from)} to ${time(gap.to)}: ${gap.reason}`);
  assert.equal(
    await text(page, '[data-testid=profile-sampler]'),
    `the held sampler (continuous profile), running since ${time(gapped.trigger.profile!.since)}, one sample per ${bytes(16384)}`,
  );

  // Two scheduled snapshots (a schedule's first run, then one more by pause and resume), the target leaking between
  // them: each has a profile beside it. 8,000 Orders too: Order's constructor is a frame of its own, so the grown
  // site that constructs the Order suspect's class names it (docs/analysis.md).
  const schedule = (path: string) => api<unknown>(`/v1/schedules${path}`, {});
  assert.equal((await api<unknown>('/v1/schedules', { id: 'sites-1h', target: 'sites', every: '1h' })).status, 201);
  const first = await scheduledWithProfile(undefined, false);
  await sites.request('orders 8000', 'ORDERED');
  await sites.request('leak 20000', 'LEAKED');
  assert.equal((await schedule('/sites-1h/pause')).status, 200);
  assert.equal((await schedule('/sites-1h/resume')).status, 200);
  const second = await scheduledWithProfile(first.snap.id, true);
  assert.equal((await fetch(`${serve.url}/v1/schedules/sites-1h`, { method: 'DELETE' })).status, 204);
  assert.equal(second.profile.trigger.besideOf, second.snap.id);

  // The snapshot's page links to its profile; the profile's page links back and says where it was read. Its growth
  // lists each suspect with where its class was allocated when a grown site constructs it: Order's constructor.
  await open(`/captures/${second.snap.id}`, '[data-testid=profile-beside]');
  const growthLines = (second.snap.growth?.suspects?.items ?? []).flatMap((i) => (i.allocated === undefined ? [] : [i.allocated]));
  assert.match(second.snap.growth?.suspects?.items.find((i) => i.class === 'Order')?.allocated ?? '', ORDER_LINE, JSON.stringify(second.snap.growth));
  assert.deepEqual(await page.$$eval('[data-testid=growth-suspects] [data-testid=suspect-allocated]', (es) => es.map((e) => (e.textContent ?? '').trim())), growthLines);
  await resize(page, NARROW);
  await fitsWidth(page, `growth at ${NARROW.width} px`);
  await resize(page, DESKTOP);
  assert.equal(await page.$eval('[data-testid=profile-beside]', (e) => e.getAttribute('href')), `#/captures/${second.profile.id}`);
  await page.click('[data-testid=profile-beside]');
  await page.waitForSelector('[data-testid=beside-of]', { timeout: 30_000 });
  assert.equal(await page.$eval('[data-testid=beside-of]', (e) => e.getAttribute('href')), `#/captures/${second.snap.id}`);
  assert.match(await text(page, '[data-testid=profile-sampler]'), /^the held sampler \(continuous profile\), running since /);
  await open(`/captures/${second.profile.id}`, '[data-testid=beside-of]');

  // The compare page of the two snapshots: the sites that grew between their profiles, and the way to the growth flame graph.
  const diff = await api<{ diff: { suspects: { suspects: { class: string; allocated?: string }[] } }; allocations: { grown: { functionName: string; url: string; line: number; column: number; bytesDelta: number }[] } | null }>(
    `/v1/diff?base=${first.snap.id}&head=${second.snap.id}&limit=500`,
  );
  assert.equal(diff.status, 200, JSON.stringify(diff.body));
  const top = diff.body.allocations?.grown[0];
  assert.ok(top !== undefined, `the diff has grown allocation sites: ${JSON.stringify(diff.body.allocations)}`);
  await open(`/compare?base=${first.snap.id}&head=${second.snap.id}`, '[data-testid=grown-sites]');
  const row = await text(page, '[data-testid=grown-sites] tbody tr');
  assert.ok(row.startsWith(signed(top.bytesDelta, bytes)) && row.includes(`${top.functionName} ${top.url}:${top.line}:${top.column}`), `${row} vs ${JSON.stringify(top)}`);
  assert.ok(await page.$('[data-testid=classes]'), 'the snapshot diff itself is still there');
  // Its suspects say where they were allocated as the API does (Order: its constructor, sampled).
  const suspectLines = diff.body.diff.suspects.suspects.flatMap((x) => (x.allocated === undefined ? [] : [x.allocated]));
  assert.match(diff.body.diff.suspects.suspects.find((x) => x.class === 'Order')?.allocated ?? '', ORDER_LINE, JSON.stringify(diff.body.diff.suspects));
  assert.deepEqual(await page.$$eval('[data-testid=suspects] [data-testid=suspect-allocated]', (es) => es.map((e) => (e.textContent ?? '').trim())), suspectLines);
  // No flame graph asked of the snapshots themselves (they have no profile tree: 404 profile_not_found).
  assert.equal(await page.$('.flame-graph, [role=alert], [aria-busy=true]'), null);
  const link = await page.$eval('[data-testid=beside-growth-flame]', (e) => e.getAttribute('href'));
  assert.equal(link, `#/compare?base=${first.profile.id}&head=${second.profile.id}`);
  await page.click('[data-testid=beside-growth-flame]');
  await page.waitForFunction((h: string) => location.hash === h, { timeout: 15_000 }, link);
  await page.waitForSelector('.flame-graph svg', { timeout: 30_000 });

  // Slack's diff of the two snapshots: the top grown site in the notification text, after the #1 suspect.
  const body = slashCommandBody({ text: `diff ${first.snap.id} ${second.snap.id}`, response_url: 'https://hooks.slack.com/commands/T0TEST/1/unused' });
  const res = await fetch(`${serve.url}/slack/commands`, { method: 'POST', headers: slackSign(SLACK_SECRET, body), body, signal: AbortSignal.timeout(60_000) });
  assert.equal(res.status, 200, await res.clone().text());
  const message = (await res.json()) as { text: string };
  const site = `${top.functionName} ${top.url}:${top.line}:${top.column}`;
  assert.ok(message.text.includes(`\nTop grown site: ${site} +`), message.text);
});

void test("a retried capture's page lists its failed attempts: number, phase, error and when the retry was due", { timeout: 180_000 }, async () => {
  // A port nothing listens on (bound, then closed): every attempt fails with target_unreachable and is retried.
  const port = await freePort();
  const put = await api<unknown>('/v1/targets/dead', { id: 'dead', kind: 'node', inspect: `127.0.0.1:${port}` }, 'PUT');
  assert.equal(put.status, 201, JSON.stringify(put.body));
  const { body } = await api<{ capture: Rec }>('/v1/captures', { target: 'dead' });
  const retried = await waitFor(async () => {
    const r = await record(body.capture.id);
    return (r.failedAttempts?.length ?? 0) > 0 ? r : undefined;
  }, {
    timeoutMs: 120_000,
    intervalMs: 250,
    what: 'a failed attempt',
  });
  const a = retried.failedAttempts![0]!;
  await open(`/captures/${retried.id}`, '[data-testid=failed-attempts] li[data-attempt="1"]');
  const shown = await text(page, '[data-testid=failed-attempts] li[data-attempt="1"]');
  const due = a.nextAttemptAt === null ? 'No retry followed.' : `Retry due at ${time(a.nextAttemptAt)}.`;
  assert.equal(shown, `Attempt 1 of ${a.of} failed ${a.phase === undefined ? '' : `in phase ${a.phase} `}at ${time(a.failedAt)}: ${a.code} ${a.message} ${due}`.replace(/\s+/g, ' '));
  assert.equal(a.code, 'target_unreachable');
});

void test('a hunt that tracked allocations shows where its suspects were allocated', { timeout: 240_000 }, async () => {
  const created = await api<{ hunt: { id: string } }>('/v1/leak-hunts', { target: 'leaky', interval: 2, drive: { evaluate: "process.stdin.emit('data', Buffer.from('leak 3000\\n'))", rounds: 1 } });
  assert.equal(created.status, 202, JSON.stringify(created.body));
  const id = created.body.hunt.id;
  type Report = { hunt: { status: string; error?: unknown }; report: { suspects: { suspects: { class: string; allocated?: string }[] } } | null };
  const done = await waitFor(
    async () => {
      const r = (await api<Report>(`/v1/leak-hunts/${id}`)).body;
      return ['succeeded', 'failed'].includes(r.hunt.status) ? r : undefined;
    },
    { timeoutMs: 180_000, intervalMs: 500, what: 'the hunt to end' },
  );
  assert.equal(done.hunt.status, 'succeeded', JSON.stringify(done.hunt.error));
  const lines = done.report!.suspects.suspects.flatMap((s) => (s.allocated === undefined ? [] : [s.allocated]));
  assert.match(lines[0] ?? '', /^allocated at \S*leak-target\.cjs:\d+ (handle|Leaked)\b/, JSON.stringify(done.report!.suspects.suspects.slice(0, 3)));
  await open(`/hunts/${id}`, '[data-testid=suspect-allocated]');
  assert.equal(await text(page, '[data-testid=hunt-allocations]'), 'tracked from the baseline to the target snapshot');
  const shown = await page.$$eval('[data-testid=suspect-allocated]', (es) => es.map((e) => (e.textContent ?? '').trim()));
  assert.deepEqual(shown, lines);
});

void test("a Chromium page's continuous profile: the diff of two profiles of the page ranks its leaking function first; deregistering it stops the page's sampler", { timeout: 180_000 }, async () => {
  // The console's own browser holds the page (no second Chromium): a data: URL, an opaque origin, so a renderer and
  // an isolate of its own. Session objects kept on window by createSession, called by leakSessions.
  const MARK = 'heapcap-profiled-page';
  const html =
    `<title>${MARK}</title><script>class Session { constructor(i) { this.id = i; this.user = 'user-' + i + '-' + 'u'.repeat(40); this.scopes = new Array(24).fill(i); } }` +
    ` window.__sessions = []; function createSession(i) { const s = new Session(i); window.__sessions.push(s); return s; }` +
    ` function leakSessions(n) { const start = window.__sessions.length; for (let i = 0; i < n; i++) createSession(start + i); }</script>`;
  const leaking = await browser.newPage();
  try {
    await leaking.goto(`data:text/html,${encodeURIComponent(html)}`);
    const port = new URL(browser.wsEndpoint()).port;
    const put = await api<unknown>('/v1/targets/page', { id: 'page', kind: 'chromium', browser: `127.0.0.1:${port}`, select: { urlPattern: MARK }, profile: { every: '5s', samplingIntervalBytes: 16384 } }, 'PUT');
    assert.equal(put.status, 201, JSON.stringify(put.body));
    const read = async (): Promise<Rec[]> => (await api<{ items: Rec[] }>('/v1/captures?target=page&trigger=profile&limit=20')).body.items;
    const base = await waitFor(async () => (await read()).find((r) => r.status === 'succeeded'), { timeoutMs: 60_000, intervalMs: 250, what: "a first continuous profile of the page" });
    await leaking.evaluate('leakSessions(20000)');
    // The second: a one-off profile, which reads the running sampler after its window (1 s) and leaves it on.
    const oneOff = await api<{ capture: Rec }>('/v1/captures?wait=60', { target: 'page', options: { kind: 'sampling', samplingSeconds: 1 } });
    const head = oneOff.body.capture;
    assert.equal(head.status, 'succeeded', JSON.stringify(oneOff.body));
    const diff = await api<{ diff: null; allocations: { grown: { functionName: string; url: string; line: number; column: number; bytesDelta: number }[] } }>(`/v1/diff?base=${base.id}&head=${head.id}`);
    assert.equal(diff.status, 200, JSON.stringify(diff.body));
    const top = diff.body.allocations.grown[0];
    assert.ok(top !== undefined && ['Session', 'createSession', 'leakSessions'].includes(top.functionName) && top.url.startsWith('data:text/html'), JSON.stringify(diff.body.allocations.grown.slice(0, 4)));
    assert.ok(top.line > 0 && top.column > 0 && top.bytesDelta > 1024 * 1024, JSON.stringify(top));
    // Deregistered: the holder stops the sampler in the page (a fresh session's getSamplingProfile: "not started").
    const pages = (await (await fetch(`http://127.0.0.1:${port}/json/list`, { signal: AbortSignal.timeout(10_000) })).json()) as { url: string; webSocketDebuggerUrl: string }[];
    const ws = pages.find((p) => p.url.includes(MARK))!.webSocketDebuggerUrl;
    assert.equal(await samplingProfilerRunning(ws), true, 'the continuous profile keeps a sampler on in the page (the one-off left it on)');
    assert.equal((await fetch(`${serve.url}/v1/targets/page`, { method: 'DELETE' })).status, 204);
    await waitFor(async () => !(await samplingProfilerRunning(ws)), { timeoutMs: 30_000, intervalMs: 250, what: "the page's sampler to stop once the target is deregistered" });
  } finally {
    await leaking.close();
  }
});
