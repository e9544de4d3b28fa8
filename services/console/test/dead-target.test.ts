/**
 * A dead target looks dead (issue 40): `bin/heapcap serve` samples two real Node targets every 5 s; one is killed
 * while the console's targets list is open in Chromium. Within two sample intervals its row says "unreachable:
 * connection refused" with the age of its last sample, and shows no heap numbers and no sparkline; the live one stays
 * up. The target page and the watch-rules page say the same, `heapcap targets list` prints it in its STATUS column,
 * and /metrics exports heapcap_target_up 0 for it and 1 for the live one.
 */
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';
import { CHROMIUM_FLAGS, chromiumBinary, fixturePath, FREE_PORT, runHeapcap, startHeapcap, startNodeTarget, startRedis, tmpDir, type NodeTarget, type RedisServer, type RunningHeapcap, type TmpDir } from '@heapcap/testkit';
import { hashToken } from '@heapcap/api';

/** What the functions passed to page.evaluate read in the browser (this file is typed for Node). */
declare const document: { querySelector(selector: string): { textContent: string | null; getAttribute(name: string): string | null } | null };

const TOKEN = 'dead-target-admin-4c1e9a02';
const INTERVAL_MS = 5_000;

let redis: RedisServer;
let dir: TmpDir;
let live: NodeTarget;
let doomed: NodeTarget;
let serve: RunningHeapcap;
let browser: Browser;
let page: Page;

before(async () => {
  [redis, dir] = await Promise.all([startRedis(), tmpDir('heapcap-dead-target')]);
  const holder = { script: fixturePath('heap-holder.cjs'), env: { HEAP_MB: '1' } };
  [live, doomed] = await Promise.all([startNodeTarget(holder), startNodeTarget(holder)]);
  await writeFile(join(dir.path, 'targets.yaml'), `targets:\n  - id: live\n    kind: node\n    inspect: 127.0.0.1:${live.port}\n    labels: { app: t }\n  - id: doomed\n    kind: node\n    inspect: 127.0.0.1:${doomed.port}\n    labels: { app: t }\n`);
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
      HEAPCAP_SAMPLE_INTERVAL: '5s',
    },
  });
  browser = await puppeteer.launch({ executablePath: chromiumBinary(), headless: true, userDataDir: join(dir.path, 'chromium'), args: CHROMIUM_FLAGS.filter((f) => f !== '--headless') });
  page = await browser.newPage();
});
after(async () => {
  await browser?.close();
  await serve?.stop();
  await Promise.allSettled([live?.kill(), doomed?.kill()]);
  await redis?.stop();
  await dir?.cleanup();
});

/** The status cell of a target's row on the targets list. */
function health(p: Page, id: string): Promise<{ up: string | null; text: string } | null> {
  return p.evaluate((sel: string) => {
    const e = document.querySelector(sel);
    return e === null ? null : { up: e.getAttribute('data-up'), text: e.textContent ?? '' };
  }, `tr[data-target="${id}"] [data-testid=health]`);
}

async function api(method: string, path: string, body?: unknown): Promise<Response> {
  return fetch(`${serve.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${TOKEN}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

void test('a target killed while the targets list is open shows as unreachable with its reason within two sample intervals', async () => {
  // A rule watches both: its page must not show the dead one's last value as "ok".
  const rule = await api('POST', '/v1/watch-rules', { id: 'big', selector: { app: 't' }, when: { metric: 'heapUsedBytes', above: 1e12, forSeconds: 60 }, cooldownSeconds: 60 });
  assert.equal(rule.status, 201, await rule.text());
  await page.goto(`${serve.url}/`);
  await page.waitForSelector('#token', { timeout: 15_000 });
  await page.type('#token', TOKEN);
  await page.click('button[type=submit]');
  await page.waitForSelector('[data-testid=who]', { timeout: 15_000 });
  // Both up, each with a curve, before the kill.
  await page.waitForFunction(() => ['live', 'doomed'].every((id) => document.querySelector(`tr[data-target="${id}"] [data-testid=health][data-up="true"]`) !== null), { timeout: 30_000 });
  await page.waitForSelector('tr[data-target="doomed"] svg.sparkline', { timeout: 30_000 });

  await doomed.kill();
  const killedAt = Date.now();
  await page.waitForFunction(() => document.querySelector('tr[data-target="doomed"] [data-testid=health][data-up="false"]') !== null, { timeout: 2 * INTERVAL_MS + 5_000, polling: 100 });
  const took = Date.now() - killedAt;
  console.log(`the console showed the dead target as unreachable ${took} ms after the kill`);
  assert.ok(took <= 2 * INTERVAL_MS, `shown ${took} ms after the kill, more than two sample intervals`);
  const dead = (await health(page, 'doomed'))!;
  assert.match(dead.text, /^unreachable: connection refused \(last sample \d+ s ago\)$/, dead.text);
  assert.equal((await health(page, 'live'))!.up, 'true', 'the live target stays up');
  const row = await page.$eval('tr[data-target="doomed"]', (e) => e.textContent ?? '');
  assert.doesNotMatch(row, /\d (?:B|KiB|MiB|GiB)\b/, `no heap numbers on the dead row: ${row}`);
  assert.equal(await page.$('tr[data-target="doomed"] svg.sparkline'), null, 'no sparkline on the dead row');

  // The target page and the watch-rules page say so too.
  await page.goto(`${serve.url}/ui/#/targets/doomed`);
  const onPage = await page.waitForSelector('[data-testid=health][data-up="false"]', { timeout: 15_000 });
  assert.match((await onPage!.evaluate((e) => e.textContent)) ?? '', /unreachable: connection refused/);
  await page.goto(`${serve.url}/ui/#/watch-rules`);
  await page.waitForSelector('[data-testid=rule-targets] [data-testid=health][data-up="false"]', { timeout: 15_000 });
  const ruleTargets = await page.$eval('[data-testid=rule-targets]', (e) => e.textContent ?? '');
  assert.match(ruleTargets, /doomed: unreachable: connection refused/, ruleTargets);
  assert.doesNotMatch(ruleTargets, /doomed: ok/, ruleTargets);

  // The CLI and /metrics.
  const cli = await runHeapcap(['targets', 'list'], { env: { HEAPCAP_API_URL: serve.url, HEAPCAP_TOKEN: TOKEN } });
  assert.equal(cli.code, 0, cli.stderr);
  const lines = cli.stdout.split('\n');
  assert.match(lines[0]!, /STATUS/, cli.stdout);
  assert.match(lines.find((l) => l.startsWith('doomed'))!, /unreachable: connection refused \(last sample \d+ s ago\)/, cli.stdout);
  assert.match(lines.find((l) => l.startsWith('live'))!, /up \(sampled \d+ s ago\)/, cli.stdout);
  const metrics = await (await fetch(`${serve.url}/metrics`)).text();
  assert.match(metrics, /^heapcap_target_up\{target="doomed"\} 0$/m, metrics);
  assert.match(metrics, /^heapcap_target_up\{target="live"\} 1$/m, metrics);
});
