/**
 * The console in a real browser: Debian's Chromium driven by puppeteer-core
 * against `bin/heapcap serve` (the bundle, with the console it ships in
 * dist/console) on a real Redis, capturing a real Node target that leaks.
 * Each view is checked and photographed at desktop (1440x900) and phone
 * (390x844) size: axe-core, no sideways scroll of the page, and its
 * screenshots in docs/console/ (the README shows them). A Slack command
 * (signed, answered to the loopback stand-in for Slack) links to the console
 * page a phone then opens.
 * Its text has no size spelt KB/MB/GB (sizes are KiB/MiB/GiB).
 */
import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { after, before, describe, it } from 'node:test';
import puppeteer, { type Browser, type ElementHandle, type Page } from 'puppeteer-core';
import {
  CHROMIUM_FLAGS,
  chromiumBinary,
  FREE_PORT,
  REPO_ROOT,
  slackSign,
  slashCommandBody,
  startHeapcap,
  startNodeTarget,
  startRedis,
  startSlackStandIn,
  tmpDir,
  waitFor,
  type NodeTarget,
  type RedisServer,
  type RunningHeapcap,
  type SlackStandIn,
  type TmpDir,
} from '@heapcap/testkit';
import { hashToken } from '@heapcap/api';
import { accessible, DESKTOP, fitsWidth, PHONE, resize } from './browser-checks.ts';

// What the functions passed to page.evaluate read in the browser (this file is typed for Node).
declare const location: { hash: string };
/** The page's elements as these tests read them (the test files compile without the DOM's types). */
interface PageElement {
  id: string;
  value?: string;
  textContent: string | null;
  getAttribute(name: string): string | null;
}
declare const document: { cookie: string; scrollingElement: { scrollWidth: number }; querySelectorAll(selector: string): ArrayLike<PageElement>; querySelector(selector: string): PageElement | null };

const TOKENS = { admin: 'console-admin-7f3e91c2', reader: 'console-reader-2b8d40aa', viewer: 'console-viewer-5c1a77e0' };
const SHOTS = join(REPO_ROOT, 'docs/console');
/** The Slack app's signing secret and its one user, who may capture and read artifacts. */
const SLACK_SECRET = 'console-slack-secret-4e1b7d90';
/** Budget (issue 24): the console's JavaScript, gzipped. */
const JS_BUDGET_BYTES = 150 * 1024;

let redis: RedisServer;
let dir: TmpDir;
let target: NodeTarget;
let serve: RunningHeapcap;
let browser: Browser;
let page: Page;
let slack: SlackStandIn;
const firstCapture: { id?: string } = {};
const hunted: { id?: string } = {};
/** The compare test's head: the base of the no-leak compare after it. */
const secondCapture: { id?: string } = {};

/** A view at both sizes: no sideways scroll, axe-core clean; with `save`, a screenshot of each for the docs (NAME.png, NAME-390.png). */
async function bothSizes(p: Page, name: string, save: boolean): Promise<void> {
  for (const size of [DESKTOP, PHONE]) {
    await resize(p, size);
    const label = size === PHONE ? `${name} at ${size.width}x${size.height}` : name;
    await fitsWidth(p, label);
    await accessible(p, label);
    const file = size === PHONE ? `${name}-${size.width}.png` : `${name}.png`;
    if (save) await p.screenshot({ path: join(SHOTS, file) as `${string}.png`, fullPage: true });
  }
  await resize(p, DESKTOP);
}

/** Every view the test reaches: checked at both sizes, then its screenshots for the docs. */
async function shot(p: Page, name: string): Promise<void> {
  // One unit rule (issue 40): sizes are powers of 1024 and read KiB/MiB/GiB; "38.1 MB" for 40,000,000 bytes misled.
  const text = await p.evaluate(() => document.querySelector('body')?.textContent ?? '');
  assert.doesNotMatch(text, /\d ?(?:KB|MB|GB|TB)\b/, `${name}: a size spelt in decimal units`);
  await bothSizes(p, name, true);
}

/** The hash route's capture id once the page shows a capture. */
async function captureIdOnPage(p: Page): Promise<string> {
  await p.waitForFunction(() => /^#\/captures\/[0-9A-Z]+$/.test(location.hash), { timeout: 15_000 });
  return (await p.evaluate(() => location.hash)).split('/')[2]!;
}

/** Opens the target page, presses "Capture now" and waits for the capture to succeed on the page it opens. */
async function captureNow(p: Page): Promise<{ id: string; firstStatus: string | null }> {
  await p.goto(`${serve.url}/ui/#/targets/shapes`);
  await p.waitForSelector('[data-testid=capture-now]', { timeout: 15_000 });
  await p.click('[data-testid=capture-now]');
  const id = await captureIdOnPage(p);
  const firstStatus = await (await p.waitForSelector('h1 [data-status]', { timeout: 15_000 }))!.evaluate((e) => e.getAttribute('data-status'));
  // No reload from here: the page polls the record until it ends.
  await p.waitForSelector('h1 [data-status="succeeded"]', { timeout: 90_000 });
  return { id, firstStatus };
}

/**
 * Waits until nothing on the page is loading (the console marks a list or a
 * select that is loading with aria-busy). A list that arrives above a form
 * moves its button; a click whose point was computed before the move lands
 * beside the button and submits nothing.
 */
async function settled(p: Page): Promise<void> {
  await p.waitForFunction(() => document.querySelector('[aria-busy="true"]') === null, { timeout: 15_000 });
}

/** Waits for the API's message at `field`; if it does not come, says what the page and its form held. */
async function fieldError(p: Page, field: string): Promise<ElementHandle> {
  try {
    return (await p.waitForSelector(`[data-field-error="${field}"]`, { timeout: 15_000 }))!;
  } catch (err) {
    const state = await p.evaluate(() => ({
      hash: location.hash,
      inputs: Array.from(document.querySelectorAll('form input, form select'), (e) => `${e.id || e.getAttribute('name')}=${e.value}`),
      errors: Array.from(document.querySelectorAll('.error, [role=alert]'), (e) => e.textContent),
      busy: Array.from(document.querySelectorAll('[aria-busy="true"]'), (e) => e.getAttribute('data-testid') ?? e.id),
    }));
    throw new Error(`no message at ${field} within 15 s: ${JSON.stringify(state)}`, { cause: err });
  }
}

/**
 * Replaces an input's text with `text` and waits until the input holds exactly
 * that. A triple click to select the old text is not used: on a loaded machine
 * its three clicks can land further apart than a multi-click, select nothing,
 * and the typed text is appended ('0.81.5').
 */
async function fill(p: Page, selector: string, text: string): Promise<void> {
  await p.$eval(selector, (e) => {
    const input = e as unknown as { focus(): void; select(): void };
    input.focus();
    input.select();
  });
  await p.keyboard.press('Backspace');
  await p.waitForFunction((s: string) => document.querySelector(s)?.value === '', { timeout: 15_000 }, selector);
  await p.type(selector, text);
  await p.waitForFunction((s: string, t: string) => document.querySelector(s)?.value === t, { timeout: 15_000 }, selector, text);
}

async function signIn(p: Page, token: string): Promise<void> {
  await p.goto(`${serve.url}/`);
  await p.waitForSelector('#token', { timeout: 15_000 });
  await p.type('#token', token);
  await p.click('button[type=submit]');
  await p.waitForSelector('[data-testid=who]', { timeout: 15_000 });
}

async function sessionCookie(p: Page): Promise<string> {
  const cookie = (await p.browserContext().cookies()).find((c) => c.name === 'heapcap_session');
  assert.ok(cookie !== undefined, 'the session cookie is set');
  return cookie.value;
}

void describe('console', () => {
  before(async () => {
    await mkdir(SHOTS, { recursive: true });
    redis = await startRedis();
    slack = await startSlackStandIn();
    dir = await tmpDir('heapcap-console');
    target = await startNodeTarget({ script: join(REPO_ROOT, 'packages/analysis/test/fixtures/shapes-target.cjs') });
    await writeFile(join(dir.path, 'targets.yaml'), `targets:\n  - id: shapes\n    kind: node\n    inspect: 127.0.0.1:${target.port}\n    labels: { service: shapes, env: test }\n`);
    await writeFile(
      join(dir.path, 'tokens.yaml'),
      `tokens:\n  - name: admin\n    sha256: "${hashToken(TOKENS.admin)}"\n    scopes: [captures:read, captures:write, artifacts:read, targets:admin]\n` +
        `  - name: reader\n    sha256: "${hashToken(TOKENS.reader)}"\n    scopes: [captures:read]\n` +
        `  - name: viewer\n    sha256: "${hashToken(TOKENS.viewer)}"\n    scopes: [captures:read, artifacts:read]\n`,
    );
    await writeFile(join(dir.path, 'slack-users.yaml'), 'grants:\n  - name: oncall\n    team: T0TEST\n    users: [U0ONCALL]\n    scopes: [captures:read, captures:write, artifacts:read]\n');
    serve = await startHeapcap(['serve'], {
      cwd: dir.path,
      timeoutMs: 180_000,
      env: {
        HEAPCAP_REDIS_URL: redis.url,
        HEAPCAP_PORT: FREE_PORT,
        HEAPCAP_TARGETS_FILE: join(dir.path, 'targets.yaml'),
        HEAPCAP_TOKENS_FILE: join(dir.path, 'tokens.yaml'),
        HEAPCAP_STORAGE: `file://${join(dir.path, 'captures')}`,
        HEAPCAP_RETENTION_INTERVAL: '1h',
        // Every target's memory curve, as a user's serve has it (the test kit turns it off by default).
        HEAPCAP_SAMPLE_INTERVAL: '1s',
        // Slack: results go to the stand-in's response_urls; links are made from HEAPCAP_PUBLIC_URL (here the listen address).
        HEAPCAP_SLACK_SIGNING_SECRET: SLACK_SECRET,
        HEAPCAP_SLACK_USERS_FILE: join(dir.path, 'slack-users.yaml'),
        HEAPCAP_SLACK_API_URL: slack.apiUrl,
        HEAPCAP_SLACK_RESPONSE_HOSTS: slack.origin,
      },
    });
    browser = await puppeteer.launch({
      executablePath: chromiumBinary(),
      headless: true,
      userDataDir: join(dir.path, 'chromium'),
      args: [...CHROMIUM_FLAGS.filter((f) => f !== '--headless')],
      defaultViewport: DESKTOP,
    });
    page = await browser.newPage();
  });
  after(async () => {
    await browser?.close();
    await serve?.stop();
    await target?.kill();
    await slack?.close();
    await redis?.stop();
    await dir?.cleanup();
  });

  void it('/ sends browsers to /ui; every console file has the strict CSP; the JavaScript is within budget', async () => {
    const root = await fetch(`${serve.url}/`, { headers: { accept: 'text/html' }, redirect: 'manual' });
    assert.equal(root.status, 302);
    assert.equal(root.headers.get('location'), '/ui/');
    const api = await fetch(`${serve.url}/`, { headers: { accept: 'application/json' } });
    assert.equal(((await api.json()) as { console: string }).console, '/ui/');
    const index = await fetch(`${serve.url}/ui/`);
    const html = await index.text();
    const files = [...html.matchAll(/(?:src|href)="(\/ui\/assets\/[^"]+)"/g)].map((m) => m[1]!);
    assert.ok(files.some((f) => f.endsWith('.js')), html);
    assert.doesNotMatch(html, /<script(?![^>]*\bsrc=)[^>]*>/, 'no inline script');
    let jsGzip = 0;
    for (const res of [index, await fetch(`${serve.url}/ui/nope.js`), ...(await Promise.all(files.map((f) => fetch(`${serve.url}${f}`))))]) {
      const csp = res.headers.get('content-security-policy') ?? '';
      assert.match(csp, /default-src 'self'/, res.url);
      assert.match(csp, /script-src 'self'(;|$)/, res.url);
      if (res.url.endsWith('.js') && res.ok) jsGzip += gzipSync(Buffer.from(await res.arrayBuffer()), { level: 9 }).length;
    }
    console.log(`console JavaScript: ${(jsGzip / 1024).toFixed(1)} KB gzipped`);
    assert.ok(jsGzip > 0 && jsGzip <= JS_BUDGET_BYTES, `${jsGzip} bytes gzipped`);
  });

  void it('signs in with a token: an HttpOnly SameSite=Strict cookie, then the targets with their labels', async () => {
    const violations: string[] = [];
    page.on('console', (m) => {
      if (/Content Security Policy/i.test(m.text())) violations.push(m.text());
    });
    const sampleRequests: string[] = [];
    const onRequest = (r: { url(): string }): void => {
      if (/\/v1\/targets\/[^?]*samples/.test(r.url())) sampleRequests.push(r.url().replace(serve.url, ''));
    };
    page.on('request', onRequest);
    await signIn(page, TOKENS.admin);
    assert.match(await page.$eval('[data-testid=who]', (e) => e.textContent ?? ''), /admin/);
    const cookie = (await page.browserContext().cookies()).find((c) => c.name === 'heapcap_session')!;
    assert.equal(cookie.httpOnly, true);
    assert.equal(cookie.sameSite, 'Strict');
    assert.equal(cookie.secure, false, 'plain HTTP: not Secure');
    assert.equal(await page.evaluate(() => document.cookie), '', 'the page script cannot read the session');
    const row = await page.waitForSelector('tr[data-target="shapes"]', { timeout: 15_000 });
    assert.match((await row!.evaluate((e) => e.textContent)) ?? '', /service=shapes.*env=test/);
    // The page's samples come in one request for all its rows, not one per row.
    await page.waitForFunction(() => [...(document.querySelectorAll('tr[data-target] td:last-child') as unknown as { textContent: string }[])].every((td) => td.textContent !== '…'), { timeout: 15_000 });
    page.off('request', onRequest);
    assert.deepEqual(sampleRequests, ['/v1/targets/samples/latest?ids=shapes&points=60']);
    await shot(page, 'targets');
    // At phone width the navigation is one "Menu" button; opened, it lists every section and who is signed in, readable on the dark header.
    await resize(page, PHONE);
    assert.equal(await page.$eval('nav[aria-label=main]', (e) => (e as unknown as { checkVisibility(): boolean }).checkVisibility()), false, 'the navigation is folded');
    await page.click('[data-testid=menu]');
    await page.waitForSelector('nav[aria-label=main] a[href="#/watch-rules"]', { visible: true, timeout: 15_000 });
    assert.equal(await page.$eval('[data-testid=menu]', (e) => e.getAttribute('aria-expanded')), 'true');
    assert.ok(await page.$eval('[data-testid=who]', (e) => (e as unknown as { checkVisibility(): boolean }).checkVisibility()), 'who is signed in, in the open menu');
    await fitsWidth(page, 'menu at 390x844');
    await accessible(page, 'menu at 390x844');
    await page.screenshot({ path: join(SHOTS, 'menu-390.png') });
    await page.click('nav[aria-label=main] a[href="#/captures"]');
    await page.waitForSelector('nav[aria-label=main] a[href="#/watch-rules"]', { hidden: true, timeout: 15_000 });
    await resize(page, DESKTOP);
    assert.deepEqual(violations, []);
  });

  void it('"Capture now" on the target page: the capture goes live to succeeded; its waterfall and classes show', async () => {
    const { id, firstStatus } = await captureNow(page);
    firstCapture.id = id;
    await page.waitForSelector('[data-testid=waterfall] [data-phase="generate"]', { timeout: 15_000 });
    await page.waitForSelector('[data-testid=top-classes] tbody tr', { timeout: 30_000 });
    const phases = await page.$$eval('[data-testid=waterfall] [data-phase]', (els) => els.map((e) => e.getAttribute('data-phase')));
    for (const p of ['queued', 'connect', 'generate', 'serialize']) assert.ok(phases.includes(p), `${p} in ${phases.join(',')}`);
    assert.equal(await page.$eval('[data-testid=download]', (e) => e.getAttribute('href')), `/v1/captures/${id}/artifact?encoding=gzip`);
    console.log(`first status seen on the capture page: ${firstStatus}`);
    await shot(page, 'capture');
    // The target page has the capture on its time axis, over the target's sampled memory curve.
    await waitFor(
      async () => {
        const res = await fetch(`${serve.url}/v1/targets/shapes/samples`, { headers: { authorization: `Bearer ${TOKENS.admin}` } });
        return res.ok && ((await res.json()) as { items: unknown[] }).items.length >= 5;
      },
      { timeoutMs: 30_000, intervalMs: 250, what: 'five memory samples of shapes' },
    );
    await page.goto(`${serve.url}/ui/#/targets/shapes`);
    await page.waitForSelector(`[data-testid=captures] tr[data-capture="${id}"]`, { timeout: 15_000 });
    await page.waitForSelector('[data-testid=memory-chart] canvas', { timeout: 15_000 });
    // Without hovering, the legend shows the newest values (it showed "–" until the cursor was on the chart).
    const legend = async () =>
      page.$$eval('[data-testid=memory-chart] .u-legend .u-series', (trs) => Object.fromEntries(trs.map((tr) => [tr.querySelector('.u-label')?.textContent ?? '', tr.querySelector('.u-value')?.textContent ?? ''])));
    await page.waitForFunction(() => /\d/.test((document as unknown as { querySelector(s: string): { textContent: string } | null }).querySelector('[data-testid=memory-chart] .u-legend .u-series:nth-child(2) .u-value')?.textContent ?? ''), { timeout: 15_000 });
    const values = await legend();
    assert.match(values['heap used'] ?? '', /^\d+(\.\d)? (KiB|MiB)$/, JSON.stringify(values));
    assert.match(values['heap limit'] ?? '', /^\d+(\.\d)? (MiB|GiB)$/, JSON.stringify(values));
    assert.match(values['time'] ?? '', /^newest, \d\d:\d\d:\d\d$/, JSON.stringify(values));
    // The y axis fits the heap, not its limit (a few MB under a limit of GB drew a flat line at the bottom).
    const samples = ((await (await fetch(`${serve.url}/v1/targets/shapes/samples`, { headers: { authorization: `Bearer ${TOKENS.admin}` } })).json()) as { items: { heapUsedBytes: number; heapTotalBytes: number; heapLimitBytes: number; rssBytes: number | null }[] }).items;
    const yMax = Number(await page.$eval('[data-testid=memory-chart]', (e) => (e as unknown as { dataset: Record<string, string> }).dataset['yMax']));
    const peak = Math.max(...samples.map((x) => Math.max(x.heapUsedBytes, x.heapTotalBytes, x.rssBytes ?? 0)));
    // (samples read after the chart was drawn: a later one may be a little higher)
    assert.ok(yMax >= peak / 2 && yMax < samples[0]!.heapLimitBytes / 2, `y axis up to ${yMax}: peak ${peak}, limit ${samples[0]!.heapLimitBytes}`);
    // The service started a minute ago: the 1 h range is fitted to where the data starts, and the page says so.
    assert.match((await page.$eval('[data-testid=data-starts]', (e) => e.textContent)) ?? '', /^The data starts at .+: the chart shows from there, not the whole 1 h\.$/);
    await shot(page, 'target');
  });

  void it('compares two captures of the leaking target: the leaking class is suspect #1; the class table sorts', async () => {
    assert.ok(firstCapture.id !== undefined, 'the capture test ran');
    await target.request('map 3000', 'MAP');
    await target.request('garbage 2000', 'GARBAGE');
    const second = await captureNow(page);
    secondCapture.id = second.id;
    await page.waitForSelector('[data-testid=compare-with]', { timeout: 15_000 });
    await page.select('[data-testid=compare-with]', firstCapture.id);
    await page.waitForFunction((base, head) => location.hash === `#/compare?base=${base}&head=${head}`, { timeout: 15_000 }, firstCapture.id, second.id);
    const top = await page.waitForSelector('[data-testid=suspects] li[data-rank="1"]', { timeout: 30_000 });
    assert.equal(await top!.evaluate((e) => e.getAttribute('data-class')), 'SessionRecord');
    // Summary-only (neither capture analysed): one note saying what gets holders, with the button; no empty holders.
    const notes = await page.$$eval('[data-testid=suspects-note]', (els) => els.map((e) => e.textContent ?? ''));
    assert.equal(notes.length, 1);
    assert.match(notes[0]!, /need an analysis of both captures \(the base has no analysis, the head has no analysis\)/);
    assert.doesNotMatch(notes[0]!, /summary-only|POST \/v1/, 'the API\'s curl-facing note is not repeated');
    assert.equal(await page.$eval('[data-testid=analyse-both]', (e) => e.textContent), 'Analyse both');
    const suspectsText = await page.$eval('[data-testid=suspects]', (e) => e.textContent ?? '');
    assert.doesNotMatch(suspectsText, /held by|holder unknown|–/);
    // The class table starts with the suspects in rank order, not with the engine's strings.
    const ranked = await page.$$eval('[data-testid=suspects] li', (els) => els.map((e) => e.getAttribute('data-class')));
    const rows = await page.$$eval('[data-testid=classes] tbody tr', (trs) => trs.map((tr) => tr.getAttribute('data-class')));
    assert.deepEqual(rows.slice(0, ranked.length), ranked);
    assert.equal(await page.$eval('th[aria-sort="descending"] button', (e) => e.getAttribute('data-sort')), 'rank');
    await shot(page, 'compare-summary');
    await page.click('button[data-sort="countDelta"]');
    await page.waitForSelector('th[aria-sort="descending"] button[data-sort="countDelta"]', { timeout: 5_000 });
    const counts = await page.$$eval('[data-testid=classes] tbody tr td:nth-child(3)', (tds) => tds.map((td) => Number((td.textContent ?? '').replace(/[+,]/g, ''))));
    assert.deepEqual(counts, [...counts].sort((a, b) => b - a), 'sorted by count delta, largest first');
    // "Analyse both": the page follows the analyses and shows the holders when they are done.
    await page.click('[data-testid=analyse-both]');
    await page.waitForFunction(() => document.querySelectorAll('[data-testid=suspects-note]').length === 0, { timeout: 120_000 });
    const graphTop = await page.waitForSelector('[data-testid=suspects] li[data-rank="1"]', { timeout: 15_000 });
    assert.equal(await graphTop!.evaluate((e) => e.getAttribute('data-class')), 'SessionRecord');
    assert.match((await graphTop!.evaluate((e) => e.textContent)) ?? '', /held by \S+/);
    await page.click('button[data-sort="rank"]');
    await page.waitForSelector('th[aria-sort="descending"] button[data-sort="rank"]', { timeout: 5_000 });
    await shot(page, 'compare');
    await page.goto(`${serve.url}/ui/#/captures`);
    await page.waitForFunction(() => document.querySelectorAll('[data-testid=captures] tbody tr').length >= 2, { timeout: 15_000 });
    await shot(page, 'captures');
  });

  void it('compares two captures across which nothing was kept: no suspect, "Nothing grew beyond noise", in the page and the API', async () => {
    assert.ok(secondCapture.id !== undefined, 'the compare test ran');
    await target.request('garbage 2000', 'GARBAGE');
    const third = await captureNow(page);
    await page.waitForSelector('[data-testid=compare-with]', { timeout: 15_000 });
    await page.select('[data-testid=compare-with]', secondCapture.id);
    await page.waitForFunction((base, head) => location.hash === `#/compare?base=${base}&head=${head}`, { timeout: 15_000 }, secondCapture.id, third.id);
    await page.waitForSelector('[data-testid=analyse-both]', { timeout: 30_000 });
    await page.click('[data-testid=analyse-both]');
    await page.waitForFunction(() => document.querySelectorAll('[data-testid=suspects-note]').length === 0, { timeout: 120_000 });
    assert.equal((await page.waitForSelector('[data-testid=nothing-grew]', { timeout: 15_000 }).then((e) => e?.evaluate((x) => x.textContent))) ?? '', 'Nothing grew beyond noise.');
    assert.equal(await page.$$eval('[data-testid=suspects] li', (els) => els.length), 0);
    const api = (await (await fetch(`${serve.url}/v1/diff?base=${secondCapture.id}&head=${third.id}`, { headers: { authorization: `Bearer ${TOKENS.admin}` } })).json()) as { diff: { suspects: { mode: string; suspects: unknown[]; verdict?: string } } };
    assert.deepEqual([api.diff.suspects.mode, api.diff.suspects.suspects.length, api.diff.suspects.verdict], ['graph', 0, 'nothing grew beyond noise']);
  });

  void it('a leak hunt from the target page: the API\'s message at its field, then the hunt live to succeeded, naming the leaking class', async () => {
    await page.goto(`${serve.url}/ui/#/targets/shapes`);
    await (await page.waitForSelector('[data-testid=hunt]', { timeout: 15_000 }))!.click();
    await page.waitForFunction(() => location.hash === '#/hunts?target=shapes', { timeout: 15_000 });
    await page.waitForSelector('[data-testid=hunt-form]', { timeout: 15_000 });
    await settled(page);
    assert.equal(await page.$eval('#hunt-target', (e) => (e as unknown as { value: string }).value), 'shapes', 'the target page\'s target is chosen');
    // An interval of 0 s: the API refuses it, and the message shows under the interval input.
    await fill(page, '#hunt-interval', '0');
    await page.click('[data-testid=create-hunt]');
    const intervalError = await fieldError(page, 'interval');
    assert.match((await intervalError.evaluate((e) => e.textContent)) ?? '', /1/);
    assert.equal(await page.$eval('#hunt-interval', (e) => e.getAttribute('aria-invalid')), 'true');
    const listed = async () => ((await (await fetch(`${serve.url}/v1/leak-hunts?target=shapes`, { headers: { authorization: `Bearer ${TOKENS.admin}` } })).json()) as { items: unknown[] }).items;
    assert.deepEqual(await listed(), [], 'nothing created');
    await fill(page, '#hunt-interval', '2');
    // The drive (targets:admin): the target's own leak path, fed a line as its stdin would be, right after the baseline.
    await page.click('input[name=drive][value=evaluate]');
    // 1,000 a round (3 rounds by default): the heap, and so the snapshots' pauses, stay the size they were with one round of 3,000.
    await page.type('#hunt-drive-evaluate', "process.stdin.emit('data', Buffer.from('map 1000\\n'))");
    // Allocation tracking off (on by default): the form sends allocations: false, the record and the page say so.
    assert.equal(await page.$eval('#hunt-allocations', (e) => (e as unknown as { checked: boolean }).checked), true);
    await page.click('#hunt-allocations');
    await page.click('[data-testid=create-hunt]');
    await page.waitForFunction(() => /^#\/hunts\/[0-9A-Z]+$/.test(location.hash), { timeout: 15_000 });
    const id = (await page.evaluate(() => location.hash)).split('/')[2]!;
    hunted.id = id;
    const firstStatus = await (await page.waitForSelector('h1 [data-status]', { timeout: 15_000 }))!.evaluate((e) => e.getAttribute('data-status'));
    console.log(`first status seen on the hunt page: ${firstStatus}`);
    // No reload from here: the page polls the hunt until it ends.
    const final = await page.waitForSelector('h1 [data-status="succeeded"], h1 [data-status="failed"]', { timeout: 120_000 });
    assert.equal(await final!.evaluate((e) => e.getAttribute('data-status')), 'succeeded', await page.$eval('main', (e) => e.textContent ?? ''));
    const steps = await page.$$eval('[data-testid=hunt-steps] li', (lis) => lis.map((li) => `${li.getAttribute('data-step')}:${li.getAttribute('data-state')}`));
    assert.deepEqual(steps, ['lock', 'baseline', 'drive', 'wait', 'target', 'wait-final', 'final', 'report'].map((s) => `${s}:done`));
    const row = await page.waitForSelector('[data-testid=hunt-classes] tr[data-class="SessionRecord"]', { timeout: 15_000 });
    // The drive runs 3 rounds (the default) between baseline and target: 3 × 1,000 made then, alive in final.
    assert.equal(await row!.$eval('td:nth-child(2)', (e) => e.textContent), '3,000');
    assert.match((await row!.$eval('td:nth-child(5)', (e) => e.textContent)) ?? '', /sessions/, 'the path to the module\'s Map');
    const suspects = await page.$$eval('[data-testid=suspects] li', (lis) => lis.map((li) => li.getAttribute('data-class')));
    console.log(`hunt suspects: ${suspects.slice(0, 5).join(', ')}`);
    assert.equal(suspects[0], 'SessionRecord', suspects.join(', '));
    assert.match((await page.$eval('[data-testid=suspects] li[data-rank="1"]', (e) => e.textContent)) ?? '', /\(\+1,000 per round, 3 rounds\)/);
    assert.equal(await page.$eval('[data-testid=hunt-phase] + dt + dd', (e) => e.textContent), '2.0 s between snapshots');
    assert.equal(await page.$eval('[data-testid=hunt-allocations]', (e) => e.textContent), 'not tracked (allocations: false)');
    assert.equal(await page.$('[data-testid=suspect-allocated]'), null, 'no allocation line without tracking');
    await shot(page, 'hunt');
    await page.goto(`${serve.url}/ui/#/hunts`);
    const listedRow = await page.waitForSelector(`tr[data-hunt="${id}"] [data-status="succeeded"]`, { timeout: 15_000 });
    assert.ok(listedRow !== null);
    // The row says what it found: the record's largest classes (by self size), as the API lists them.
    const record = (await (await fetch(`${serve.url}/v1/leak-hunts/${id}`, { headers: { authorization: `Bearer ${TOKENS.admin}` } })).json()) as { hunt: { classes: { name: string; count: number }[]; allocations?: boolean } };
    assert.equal(record.hunt.allocations, false);
    const largest = record.hunt.classes[0]!;
    assert.ok((await page.$eval(`tr[data-hunt="${id}"]`, (e) => e.textContent ?? '')).includes(`${largest.name} ${largest.count.toLocaleString('en')}`));
    await shot(page, 'hunts');
    // artifacts:read without captures:write: the hunts and their results, no form and no Hunt button.
    const ctx = await browser.createBrowserContext();
    try {
      const viewer = await ctx.newPage();
      await signIn(viewer, TOKENS.viewer);
      await viewer.goto(`${serve.url}/ui/#/hunts`);
      await viewer.waitForSelector(`tr[data-hunt="${id}"]`, { timeout: 15_000 });
      assert.equal(await viewer.$('[data-testid=hunt-form]'), null, 'no create form without captures:write');
      await bothSizes(viewer, 'hunts (read-only)', false);
      await viewer.goto(`${serve.url}/ui/#/targets/shapes`);
      await viewer.waitForSelector('[data-testid=memory-chart]', { timeout: 15_000 });
      assert.equal(await viewer.$('[data-testid=hunt]'), null, 'no Hunt button without captures:write');
    } finally {
      await ctx.close();
    }
  });

  void it('Slack: a capture\'s result and a hunt\'s report link to their console pages, which a phone (390x844) opens on the capture and on suspect #1', async () => {
    const command = async (text: string, responseUrl: string): Promise<{ text?: string; blocks?: unknown[] }> => {
      const body = slashCommandBody({ text, response_url: responseUrl });
      const res = await fetch(`${serve.url}/slack/commands`, { method: 'POST', headers: slackSign(SLACK_SECRET, body), body });
      assert.equal(res.status, 200);
      return (await res.json()) as { text?: string; blocks?: unknown[] };
    };
    /** The link targets of a message's mrkdwn (`<url|words>`, `&` written `&amp;`). */
    const links = (message: unknown): string[] => [...JSON.stringify(message).matchAll(/<(https?:[^|>]+)\|/g)].map((m) => m[1]!.replaceAll('&amp;', '&'));
    const hook = slack.hook();
    await command('capture shapes "the phone path"', hook.url);
    const result = await waitFor(() => hook.delivered().find((p) => /succeeded|failed/.test(String(p.body['text']))), { timeoutMs: 90_000, intervalMs: 100, what: 'the capture\'s result in Slack' });
    assert.match(String(result.body['text']), /shapes: heap snapshot succeeded/);
    const captureLink = links(result.body).find((u) => u.includes('/ui/#/captures/'));
    assert.ok(captureLink !== undefined, `a console link in ${JSON.stringify(result.body)}`);
    const id = /\/ui\/#\/captures\/([0-9A-Z]{26})$/.exec(captureLink)![1]!;
    assert.equal(captureLink, `${serve.url}/ui/#/captures/${id}`);
    assert.ok(links(result.body).includes(`${serve.url}/v1/captures/${id}/artifact`), 'the download link beside it');
    assert.ok(links(result.body).includes(`${serve.url}/ui/#/targets/shapes`), 'the target\'s curve');
    assert.ok(links(result.body).some((u) => new RegExp(`/ui/#/compare\\?base=[0-9A-Z]{26}&head=${id}$`).test(u)), `the compare with the previous capture in ${links(result.body).join(' ')}`);
    const phone = await browser.createBrowserContext();
    try {
      // The on-call path: the link opened on a phone that is not signed in yet; after the sign-in, the linked page.
      const p = await phone.newPage();
      await p.setViewport(PHONE);
      await p.goto(captureLink);
      await p.waitForSelector('#token', { timeout: 15_000 });
      await fitsWidth(p, 'sign-in at 390x844');
      await p.type('#token', TOKENS.admin);
      await p.click('button[type=submit]');
      await p.waitForSelector('h1 [data-status="succeeded"]', { timeout: 15_000 });
      await p.waitForSelector('[data-testid=waterfall] [data-phase="generate"]', { timeout: 15_000 });
      assert.equal(await p.evaluate(() => location.hash), `#/captures/${id}`);
      await fitsWidth(p, 'the capture from Slack at 390x844');
      await accessible(p, 'the capture from Slack at 390x844');
      await p.screenshot({ path: join(SHOTS, 'slack-capture-390.png') });
      // The hunt's report in Slack (`hunt <id>`) links to its page: suspect #1 is the leaking class, within the phone's width.
      const report = await command(`hunt ${hunted.id!}`, slack.hook().url);
      const huntLink = links(report).find((u) => u.includes('/ui/#/hunts/'));
      assert.equal(huntLink, `${serve.url}/ui/#/hunts/${hunted.id!}`, JSON.stringify(report));
      await p.goto(huntLink);
      const first = await p.waitForSelector('[data-testid=suspects] li[data-rank="1"]', { timeout: 30_000 });
      assert.equal(await first!.evaluate((e) => e.getAttribute('data-class')), 'SessionRecord');
      await first!.scrollIntoView();
      const box = (await first!.boundingBox())!;
      assert.ok(box.x >= 0 && box.x + box.width <= PHONE.width, `suspect #1 within the width: ${JSON.stringify(box)}`);
      await fitsWidth(p, 'the hunt from Slack at 390x844');
      await accessible(p, 'the hunt from Slack at 390x844');
      await p.screenshot({ path: join(SHOTS, 'slack-hunt-390.png') });
    } finally {
      await phone.close();
    }
  });

  void it('creates a schedule: the API\'s validation message at its field, then the schedule with its next runs', async () => {
    await page.goto(`${serve.url}/ui/#/schedules`);
    await page.waitForSelector('[data-testid=schedule-form]', { timeout: 15_000 });
    await page.waitForSelector('#schedule-target option[value="shapes"]', { timeout: 15_000 });
    await settled(page);
    await page.type('#schedule-id', 'shapes-nightly');
    await page.select('#schedule-target', 'shapes');
    await page.click('input[name=timing]:not(:checked)');
    // Four fields: the API refuses it, and the message shows under the cron input.
    await page.type('#schedule-cron', '15 3 * *');
    await page.click('[data-testid=create-schedule]');
    const cronError = await fieldError(page, 'cron');
    assert.match((await cronError.evaluate((e) => e.textContent)) ?? '', /\S/);
    assert.equal(await page.$eval('#schedule-cron', (e) => e.getAttribute('aria-invalid')), 'true');
    assert.equal(await page.$('tr[data-schedule="shapes-nightly"]'), null, 'nothing created');
    await fill(page, '#schedule-cron', '15 3 * * *');
    await page.type('#schedule-timezone', 'UTC');
    await page.click('[data-testid=create-schedule]');
    const row = await page.waitForSelector('tr[data-schedule="shapes-nightly"]', { timeout: 15_000 });
    assert.equal(await page.$('[data-field-error]'), null, 'the field message is gone');
    const runs = await row!.$$eval('[data-testid=next-runs] time', (ts) => ts.map((t) => t.getAttribute('datetime') ?? ''));
    assert.equal(runs.length, 3, runs.join(', '));
    // 03:15 UTC daily, the first one within a day.
    const at = runs.map((r) => Date.parse(r));
    for (const [i, t] of at.entries()) {
      assert.equal(new Date(t).toISOString().slice(11, 19), '03:15:00', runs[i]);
      if (i > 0) assert.equal(t - at[i - 1]!, 86_400_000);
    }
    assert.ok(at[0]! > Date.now() && at[0]! - Date.now() <= 86_400_000, runs[0]);
    assert.ok(await row!.$('button[data-action="pause"]'), 'pause for captures:write');
    await shot(page, 'schedules');
  });

  void it('watch rules: the API\'s validation message at its field, then the rule with its target\'s state; pause, resume; read-only sees the list only; delete', async () => {
    await page.goto(`${serve.url}/ui/#/watch-rules`);
    await page.waitForSelector('[data-testid=rule-form]', { timeout: 15_000 });
    await page.waitForSelector('#rule-target option[value="shapes"]', { timeout: 15_000 });
    await settled(page);
    await page.type('#rule-id', 'shapes-heap');
    await page.select('#rule-target', 'shapes');
    // heapUsedRatio is a ratio: 1.5 is refused, and the message shows under "Above".
    await fill(page, '#rule-when-above', '1.5');
    await page.click('[data-testid=create-rule]');
    const aboveError = await fieldError(page, 'when.above');
    assert.match((await aboveError.evaluate((e) => e.textContent)) ?? '', /ratio between 0 and 1/);
    assert.equal(await page.$eval('#rule-when-above', (e) => e.getAttribute('aria-invalid')), 'true');
    assert.equal(await page.$('tr[data-rule="shapes-heap"]'), null, 'nothing created');
    await fill(page, '#rule-when-above', '0.95');
    await page.click('[data-testid=create-rule]');
    const row = await page.waitForSelector('tr[data-rule="shapes-heap"]', { timeout: 15_000 });
    assert.equal(await page.$('[data-field-error]'), null, 'the field message is gone');
    assert.match((await row!.evaluate((e) => e.textContent)) ?? '', /heapUsedRatio > 0\.95 for 120 s/);
    await page.waitForSelector('tr[data-rule="shapes-heap"] [data-target-state]', { timeout: 15_000 });
    const rule = async () => ((await (await fetch(`${serve.url}/v1/watch-rules/shapes-heap`, { headers: { authorization: `Bearer ${TOKENS.admin}` } })).json()) as { state: string });
    await page.click('tr[data-rule="shapes-heap"] button[data-action="pause"]');
    await page.waitForSelector('tr[data-rule="shapes-heap"] button[data-action="resume"]', { timeout: 15_000 });
    assert.equal((await rule()).state, 'paused');
    await page.click('tr[data-rule="shapes-heap"] button[data-action="resume"]');
    await page.waitForSelector('tr[data-rule="shapes-heap"] button[data-action="pause"]', { timeout: 15_000 });
    assert.equal((await rule()).state, 'active');
    await shot(page, 'watch-rules');
    const ctx = await browser.createBrowserContext();
    try {
      const reader = await ctx.newPage();
      await signIn(reader, TOKENS.reader);
      await reader.goto(`${serve.url}/ui/#/watch-rules`);
      await reader.waitForSelector('tr[data-rule="shapes-heap"]', { timeout: 15_000 });
      assert.equal(await reader.$('[data-testid=rule-form]'), null, 'no create form without targets:admin');
      assert.equal(await reader.$('[data-action]'), null, 'no rule actions without targets:admin');
      await bothSizes(reader, 'watch rules (read-only)', false);
    } finally {
      await ctx.close();
    }
    page.once('dialog', (d) => void d.accept());
    await page.click('tr[data-rule="shapes-heap"] button[data-action="delete"]');
    await page.waitForFunction(() => document.querySelectorAll('tr[data-rule="shapes-heap"]').length === 0, { timeout: 15_000 });
    const gone = await fetch(`${serve.url}/v1/watch-rules/shapes-heap`, { headers: { authorization: `Bearer ${TOKENS.admin}` } });
    assert.equal(gone.status, 404);
  });

  void it('a read-only token sees no write buttons; a cookie-only write without the CSRF header is refused', async () => {
    const ctx = await browser.createBrowserContext();
    try {
      const reader = await ctx.newPage();
      await signIn(reader, TOKENS.reader);
      await reader.goto(`${serve.url}/ui/#/targets/shapes`);
      await reader.waitForSelector('[data-testid=memory-chart]', { timeout: 15_000 });
      assert.equal(await reader.$('[data-testid=capture-now]'), null, 'no Capture now for captures:read');
      assert.equal(await reader.$('[data-testid=hunt]'), null, 'no Hunt for captures:read');
      assert.equal(await reader.$('nav a[href="#/hunts"]'), null, 'no hunts in the navigation without artifacts:read');
      await reader.goto(`${serve.url}/ui/#/captures/${firstCapture.id}`);
      await reader.waitForSelector('[data-testid=waterfall]', { timeout: 15_000 });
      assert.equal(await reader.$('[data-testid=download]'), null, 'no download without artifacts:read');
      await shot(reader, 'read-only');
      // Schedules: listed with their next runs, but no form and no pause/resume/delete.
      await reader.goto(`${serve.url}/ui/#/schedules`);
      const row = await reader.waitForSelector('tr[data-schedule="shapes-nightly"] [data-testid=next-runs] time', { timeout: 15_000 });
      assert.ok(row !== null);
      assert.equal(await reader.$('[data-testid=schedule-form]'), null, 'no create form for captures:read');
      assert.equal(await reader.$('[data-action]'), null, 'no schedule actions for captures:read');
      await bothSizes(reader, 'schedules (read-only)', false);
      const readerCookie = await sessionCookie(reader);
      const readerSession = (await (await fetch(`${serve.url}/v1/session`, { headers: { cookie: `heapcap_session=${readerCookie}` } })).json()) as { csrfToken: string };
      const denied = await fetch(`${serve.url}/v1/captures`, {
        method: 'POST',
        headers: { cookie: `heapcap_session=${readerCookie}`, 'x-heapcap-csrf': readerSession.csrfToken, 'content-type': 'application/json' },
        body: JSON.stringify({ target: 'shapes' }),
      });
      assert.equal(denied.status, 403);
      assert.equal(((await denied.json()) as { error: { code: string } }).error.code, 'forbidden');
    } finally {
      await ctx.close();
    }
    // The admin's cookie, as a forged cross-site form would send it: no CSRF header, or a wrong one.
    const cookie = `heapcap_session=${await sessionCookie(page)}`;
    const write = (headers: Record<string, string>) =>
      fetch(`${serve.url}/v1/captures`, { method: 'POST', headers: { cookie, 'content-type': 'application/json', ...headers }, body: JSON.stringify({ target: 'shapes', reason: 'forged' }) });
    const forged: Record<string, string>[] = [{}, { 'x-heapcap-csrf': 'x'.repeat(43) }];
    for (const headers of forged) {
      const res = await write(headers);
      assert.equal(res.status, 403);
      assert.equal(((await res.json()) as { error: { code: string } }).error.code, 'csrf_failed');
    }
    // With the session's own token the same write goes through: the header is what was missing.
    const { csrfToken } = (await (await fetch(`${serve.url}/v1/session`, { headers: { cookie } })).json()) as { csrfToken: string };
    const ok = await write({ 'x-heapcap-csrf': csrfToken });
    assert.equal(ok.status, 202, await ok.text());
  });

  void it('signs out: the session is gone from Redis, the cookie no longer authenticates', async () => {
    const cookie = `heapcap_session=${await sessionCookie(page)}`;
    await page.goto(`${serve.url}/ui/#/targets`);
    await page.waitForSelector('[data-testid=sign-out]', { timeout: 15_000 });
    await page.click('[data-testid=sign-out]');
    await page.waitForSelector('#token', { timeout: 15_000 });
    await shot(page, 'sign-in');
    const res = await fetch(`${serve.url}/v1/captures`, { headers: { cookie } });
    assert.equal(res.status, 401);
    await page.reload();
    await page.waitForSelector('#token', { timeout: 15_000 });
  });
});
