/**
 * Small breaks of the console (issue 40, item 8), in Chromium against `bin/heapcap serve` on a real Redis with a
 * real Node target: the captures list marks a pinned capture and gives a failed row its error; the capture page
 * shows a scheduled capture's `growth`; every page writes dates one way (YYYY-MM-DD HH:MM:SS); the page has a
 * favicon the CSP lets through.
 */
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';
import { CHROMIUM_FLAGS, chromiumBinary, fixturePath, FREE_PORT, startHeapcap, startNodeTarget, startRedis, tmpDir, waitFor, type NodeTarget, type RedisServer, type RunningHeapcap, type TmpDir } from '@heapcap/testkit';
import { hashToken } from '@heapcap/api';

declare const document: { querySelector(selector: string): { textContent: string | null; getAttribute(name: string): string | null } | null; body: { textContent: string | null } };

const TOKEN = 'small-breaks-admin-93b1d7e4';

let redis: RedisServer;
let dir: TmpDir;
let target: NodeTarget;
let serve: RunningHeapcap;
let browser: Browser;
let page: Page;

before(async () => {
  [redis, dir] = await Promise.all([startRedis(), tmpDir('heapcap-small-breaks')]);
  target = await startNodeTarget({ script: fixturePath('heap-holder.cjs'), env: { HEAP_MB: '1' } });
  // `gone`: a port nobody listens on (the target's own port once it is closed is not reused within the test).
  await writeFile(join(dir.path, 'targets.yaml'), `targets:\n  - id: holder\n    kind: node\n    inspect: 127.0.0.1:${target.port}\n  - id: gone\n    kind: node\n    inspect: 127.0.0.1:1\n`);
  await writeFile(join(dir.path, 'tokens.yaml'), `tokens:\n  - name: admin\n    sha256: "${hashToken(TOKEN)}"\n    scopes: [captures:read, captures:write, artifacts:read, targets:admin]\n`);
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
    },
  });
  browser = await puppeteer.launch({ executablePath: chromiumBinary(), headless: true, userDataDir: join(dir.path, 'chromium'), args: CHROMIUM_FLAGS.filter((f) => f !== '--headless') });
  page = await browser.newPage();
});
after(async () => {
  await browser?.close();
  await serve?.stop();
  await target?.kill();
  await redis?.stop();
  await dir?.cleanup();
});

async function api<T>(method: string, path: string, body?: unknown): Promise<T> {
  const res = await fetch(`${serve.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${TOKEN}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  assert.ok(res.ok, `${method} ${path}: ${res.status} ${text}`);
  return JSON.parse(text) as T;
}

async function finished(id: string): Promise<{ status: string }> {
  return waitFor(
    async () => {
      const r = (await api<{ capture: { status: string } }>('GET', `/v1/captures/${id}`)).capture;
      return ['succeeded', 'failed', 'cancelled'].includes(r.status) ? r : undefined;
    },
    { timeoutMs: 90_000, intervalMs: 250, what: `capture ${id} to finish` },
  );
}

/** Every date-like text on the page: each must be YYYY-MM-DD HH:MM:SS (no "28/11/2026", no raw ISO, no "2:03pm"). */
async function datesOnPage(p: Page): Promise<void> {
  const text = await p.evaluate(() => document.body.textContent ?? '');
  assert.doesNotMatch(text, /\d{1,2}\/\d{1,2}\/\d{4}/, 'no day/month/year');
  assert.doesNotMatch(text, /\d{4}-\d{2}-\d{2}T\d{2}:/, 'no raw ISO time');
  assert.doesNotMatch(text, /\d{1,2}:\d{2}\s?(?:am|pm)\b/i, 'no 12-hour clock');
}

void test('captures list: a pinned mark and the error of a failed row; the capture page shows growth; one date format; a favicon', async () => {
  const ok = (await api<{ capture: { id: string } }>('POST', '/v1/captures', { target: 'holder', reason: 'small breaks' })).capture.id;
  const bad = (await api<{ capture: { id: string } }>('POST', '/v1/captures', { target: 'gone', reason: 'small breaks' })).capture.id;
  assert.equal((await finished(ok)).status, 'succeeded');
  await api('POST', `/v1/captures/${ok}/pin`, { reason: 'keep for the postmortem' });
  assert.equal((await finished(bad)).status, 'failed');
  // A scheduled capture's growth, as the worker writes it after the summary (services/worker/src/growth.ts).
  // Written into the record's hash (its `growth` field, JSON: packages/state record-codec.ts) with redis-cli.
  const key = (await redis.cli('KEYS', `*:rec:${ok}`)).split('\n')[0]!;
  assert.ok(key.endsWith(ok), key);
  const written = { suspects: { mode: 'summary', items: [{ rank: 1, class: 'LeakyThing', countDelta: 1200, selfSizeDelta: 3 * 1024 * 1024, reason: 'LeakyThing +1,200 (+3.0 MiB), holder unknown' }] }, since: bad, classes: [{ name: 'LeakyThing', countDelta: 1200, selfSizeDelta: 3 * 1024 * 1024 }] };
  await redis.cli('HSET', key, 'growth', JSON.stringify(written));
  assert.equal(((await api<{ capture: { growth?: { since: string } } }>('GET', `/v1/captures/${ok}`)).capture.growth?.since), bad, 'the API serves the growth');

  await page.goto(`${serve.url}/`);
  await page.waitForSelector('#token', { timeout: 15_000 });
  await page.type('#token', TOKEN);
  await page.click('button[type=submit]');
  await page.waitForSelector('[data-testid=who]', { timeout: 15_000 });

  // The favicon: linked, served under /ui with an image type.
  const icon = await page.$eval('link[rel=icon]', (e) => e.getAttribute('href') ?? '');
  assert.match(icon, /^\/ui\/.*\.svg$/, icon);
  const iconRes = await fetch(`${serve.url}${icon}`);
  assert.equal(iconRes.status, 200);
  assert.equal(iconRes.headers.get('content-type'), 'image/svg+xml');

  await page.goto(`${serve.url}/ui/#/captures`);
  await page.waitForSelector(`tr[data-capture="${bad}"] [data-testid=row-error]`, { timeout: 15_000 });
  const error = await page.$eval(`tr[data-capture="${bad}"] [data-testid=row-error]`, (e) => e.textContent ?? '');
  assert.match(error, /^target_unreachable: /, error);
  assert.ok((await page.$(`tr[data-capture="${ok}"] [data-testid=pinned]`)) !== null, 'the pinned capture is marked');
  assert.equal(await page.$(`tr[data-capture="${bad}"] [data-testid=pinned]`), null, 'the other is not');
  assert.match(await page.$eval(`tr[data-capture="${ok}"]`, (e) => e.textContent ?? ''), /\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}/);
  await datesOnPage(page);

  await page.goto(`${serve.url}/ui/#/captures/${ok}`);
  const growth = await page.waitForSelector('[data-testid=growth]', { timeout: 15_000 });
  const text = (await growth!.evaluate((e) => e.textContent)) ?? '';
  assert.match(text, /LeakyThing \+1,200 \(\+3\.0 MiB\), holder unknown/, text);
  assert.match(text, new RegExp(`Since capture ${bad}`), text);
  await datesOnPage(page);

  await page.goto(`${serve.url}/ui/#/targets/holder`);
  await page.waitForSelector('[data-testid=capture-now]', { timeout: 15_000 });
  await page.waitForFunction(() => document.querySelector('[data-testid=captures] tr[data-capture]') !== null, { timeout: 15_000 });
  await datesOnPage(page);
});
