/**
 * `heapcap capture --chromium --url-pattern` against a real headless Chromium
 * with two test pages open (plus its own about:blank): only the page whose URL
 * matches is captured. Also the selector's failure modes: no page matches,
 * several match (refused unless --pick first), the pattern is not a regular
 * expression.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { assertGoodArtifact, countObjects, PAGE_TITLE, pageOrders, readManifests, startChromium, startPageServer, tmpDir, type Chromium, type PageServer, type TmpDir } from '@heapcap/testkit';
import { EXIT } from '../src/exit-codes.ts';
import { listFiles, runCli } from './cli-harness.ts';

const TARGET_MB = 20;
const DECOY_MB = 2;

void describe('capture a Chromium page chosen by URL pattern', { timeout: 180_000 }, () => {
  let chromium: Chromium;
  let pages: PageServer;
  let out: TmpDir;
  let targetUrl: string;
  let decoyUrl: string;

  before(async () => {
    pages = await startPageServer();
    chromium = await startChromium();
    out = await tmpDir('heapcap-cli-chromium');
    targetUrl = pages.url(`/app/leaky?mb=${TARGET_MB}`);
    // No &: PUT /json/new drops everything after it.
    decoyUrl = pages.url(`/app/leaky?mb=${DECOY_MB}`);
    // The target first, the decoy second: /json/list lists the newest page
    // first, so a selector that ignored the pattern would pick the decoy.
    await chromium.openPage(targetUrl);
    await chromium.openPage(decoyUrl);
  });
  after(async () => {
    await chromium?.close();
    await pages?.close();
    await out?.cleanup();
  });

  void test('the matching page is captured, not the decoy', async () => {
    const listed = (await chromium.listTargets()).filter((t) => t.type === 'page').map((t) => t.url);
    assert.ok(listed.includes(decoyUrl) && listed.includes(targetUrl) && listed.length >= 3, `pages open: ${listed.join(', ')}`);

    const pattern = `/app/leaky\\?mb=${TARGET_MB}$`;
    const res = await runCli(['--chromium', `127.0.0.1:${chromium.port}`, '--url-pattern', pattern, '--out', out.path, '--json']);
    assert.equal(res.code, 0, `exit code; stderr:\n${res.stderr}`);
    const m = await readManifests(res.stdout);
    assert.equal(m.runtime.product, 'chromium');
    assert.equal(m.runtime.url, targetUrl, 'the page itself reports the matching URL');
    assert.match(m.runtime.v8Version ?? '', /^\d+\.\d+\./);
    // V8 15.x caches line ends itself.
    assert.equal(m.warm.decision, 'skipped');
    const snapshot = await assertGoodArtifact(m);
    // The page's own objects: the target holds pageOrders(20), the decoy pageOrders(2).
    assert.equal(countObjects(snapshot, 'Order'), pageOrders(TARGET_MB));
    assert.deepEqual(m.selection, { matches: 1, pick: 'only', taken: { type: 'page', title: PAGE_TITLE, url: targetUrl } });
  });

  void test('a pattern that matches both pages → target_ambiguous naming them and how to narrow, nothing written', async () => {
    const empty = await tmpDir('heapcap-cli-chromium-ambiguous');
    try {
      const res = await runCli(['--chromium', `127.0.0.1:${chromium.port}`, '--url-pattern', 'leaky', '--out', empty.path, '--json']);
      assert.equal(res.code, EXIT.target, res.stderr);
      const [first, second] = res.stderr.split('\n');
      assert.match(first ?? '', /^target_ambiguous: 2 page targets of the browser at 127\.0\.0\.1:\d+ match url \/leaky\/: /);
      assert.ok(first?.includes(targetUrl) && first.includes(decoyUrl), `the message names both pages: ${first}`);
      assert.match(second ?? '', /^ {2}check: narrow the selector .*--pick first \(select\.pick: "first" in the targets file\)$/);
      assert.equal((JSON.parse(res.stdout) as { error: { code: string } }).error.code, 'target_ambiguous');
      assert.deepEqual(await listFiles(empty.path), []);
    } finally {
      await empty.cleanup();
    }
  });

  void test('--pick first takes the first page the browser lists and records the choice', async () => {
    const first = (await chromium.listTargets()).find((t) => t.type === 'page' && /leaky/.test(t.url));
    assert.ok(first !== undefined);
    const res = await runCli(['--chromium', `127.0.0.1:${chromium.port}`, '--url-pattern', 'leaky', '--pick', 'first', '--out', out.path, '--json']);
    assert.equal(res.code, 0, `exit code; stderr:\n${res.stderr}`);
    const m = await readManifests(res.stdout);
    assert.deepEqual(m.selection, { matches: 2, pick: 'first', taken: { type: 'page', title: first.title, url: first.url } });
    assert.equal(m.runtime.url, first.url, 'the page itself is the one recorded');
    await assertGoodArtifact(m);
  });

  void test('no page matches → target_not_found, the hint lists the pages seen, nothing written', async () => {
    const empty = await tmpDir('heapcap-cli-chromium-none');
    try {
      const res = await runCli(['--chromium', `127.0.0.1:${chromium.port}`, '--url-pattern', 'shop\\.example', '--out', empty.path]);
      assert.equal(res.code, EXIT.target, res.stderr);
      const [first, second] = res.stderr.split('\n');
      assert.match(first ?? '', /^target_not_found: .*shop\\\.example/);
      assert.match(second ?? '', /^ {2}check: targets seen: /);
      assert.ok(second?.includes(targetUrl) && second.includes(decoyUrl), `hint names the pages: ${second}`);
      assert.deepEqual(await listFiles(empty.path), []);
    } finally {
      await empty.cleanup();
    }
  });

  void test('an invalid regular expression → invalid_input (exit 2), nothing written', async () => {
    const empty = await tmpDir('heapcap-cli-chromium-regex');
    try {
      const res = await runCli(['--chromium', `127.0.0.1:${chromium.port}`, '--url-pattern', 'leaky(', '--out', empty.path, '--json']);
      assert.equal(res.code, EXIT.usage, res.stderr);
      assert.match(res.stderr, /^invalid_input: --url-pattern "leaky\(" is not a valid regular expression/);
      assert.match(res.stderr.split('\n')[1] ?? '', /^ {2}check: \S/);
      const printed = JSON.parse(res.stdout) as { error: { code: string } };
      assert.equal(printed.error.code, 'invalid_input');
      assert.deepEqual(await listFiles(empty.path), []);
    } finally {
      await empty.cleanup();
    }
  });
});
