/**
 * `heapcap capture --chromium … --sampling` through bin/heapcap: the sampling
 * profile runs over the same endpoint resolution and session as a snapshot,
 * so a page chosen by URL pattern gets profiled and the manifest says which.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { gunzipSync } from 'node:zlib';
import { after, before, test } from 'node:test';
import { PAGE_TITLE, runHeapcap, startChromium, startPageServer, tmpDir, type Chromium, type PageServer, type TmpDir } from '@heapcap/testkit';
import type { SamplingManifest } from '@heapcap/storage/file';
import { listFiles } from './cli-harness.ts';

let chromium: Chromium;
let pages: PageServer;
let out: TmpDir;
let pageUrl: string;

before(async () => {
  pages = await startPageServer();
  chromium = await startChromium();
  out = await tmpDir('heapcap-cli-sampling-chromium');
  pageUrl = pages.url('/app/leaky?mb=2');
  await chromium.openPage(pageUrl);
});
after(async () => {
  await chromium?.close();
  await pages?.close();
  await out?.cleanup();
});

void test('a Chromium page chosen by URL pattern gets a sampling profile', { timeout: 180_000 }, async () => {
  const res = await runHeapcap(['capture', '--chromium', `127.0.0.1:${chromium.port}`, '--url-pattern', '/app/leaky', '--sampling', '1s', '--out', out.path, '--json'], { timeoutMs: 150_000 });
  assert.equal(res.code, 0, `exit code; stderr:\n${res.stderr}`);
  const m = JSON.parse(res.stdout) as SamplingManifest;
  assert.equal(m.kind, 'sampling-profile');
  assert.equal(m.runtime.product, 'chromium');
  assert.equal(m.runtime.url, pageUrl);
  assert.deepEqual(m.selection, { matches: 1, pick: 'only', taken: { type: 'page', title: PAGE_TITLE, url: pageUrl } });
  const profile = JSON.parse(gunzipSync(await readFile(m.artifact.location)).toString('utf8')) as { head: { callFrame: { functionName: string } }; samples: unknown[] };
  assert.equal(profile.head.callFrame.functionName, '(root)');
  assert.ok(Array.isArray(profile.samples));
  assert.equal(m.profile.samples, profile.samples.length);
  assert.equal((await listFiles(out.path)).length, 2, 'the profile and its manifest');
});
