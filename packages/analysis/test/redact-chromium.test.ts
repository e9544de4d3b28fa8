/**
 * Redaction of a Chromium page's snapshot (issue 27): a page served by this
 * test with random tokens in DOM text read into JS, an input's value, a JS
 * variable, a cookie read into JS, a string built in the page, and DOM text
 * no script reads. `heapcap capture --chromium … --redact strings`: none of
 * the tokens in the stored artifact (gunzipped); without redaction, every
 * token the page holds in the JS heap is there.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { after, before, describe, test } from 'node:test';
import { runHeapcapHere, startChromium, tmpDir, tokensIn, type Chromium, type TmpDir } from '@heapcap/testkit';

const token = (prefix: string): string => `${prefix}${randomBytes(10).toString('hex')}`;

void describe('redaction of a Chromium page', { timeout: 300_000 }, () => {
  let work: TmpDir;
  let chromium: Chromium;
  let server: Server;
  // Tokens the page's JavaScript holds (read into JS or made there), and one only in the DOM.
  const js = { domText: token('domtext'), input: token('inputvalue'), variable: token('jsvariable'), cookie: token('cookie') };
  const domOnly = token('domonly');
  before(async () => {
    work = await tmpDir('heapcap-redact-page');
    server = createServer((req, res) => {
      if (req.url !== '/secrets') {
        res.writeHead(404).end();
        return;
      }
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'set-cookie': `session=${js.cookie}; Path=/` });
      // The variable's value is assembled at run time, so its whole text is in no script source.
      const [a, b] = [js.variable.slice(0, 12), js.variable.slice(12)];
      res.end(`<!doctype html><title>loading</title>
<p id="text">${js.domText}</p><p>${domOnly}</p><input id="field">
<script>
  document.getElementById('field').value = ['${js.input.slice(0, 12)}', '${js.input.slice(12)}'].join('');
  window.kept = {
    text: document.getElementById('text').textContent,
    input: document.getElementById('field').value,
    variable: ['${a}', '${b}'].join(''),
    cookie: document.cookie,
  };
  document.title = 'secrets';
</script>`);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    chromium = await startChromium();
    await chromium.openPage(`http://127.0.0.1:${(server.address() as AddressInfo).port}/secrets`, { title: 'secrets' });
  });
  after(async () => {
    await chromium?.close();
    await new Promise((resolve) => server?.close(resolve));
    await work?.cleanup();
  });

  async function capture(redact: string[], sub: string): Promise<Buffer> {
    const args = ['capture', '--chromium', `127.0.0.1:${chromium.port}`, '--url-pattern', '/secrets', '--out', join(work.path, sub), '--json', ...redact];
    const res = await runHeapcapHere(args, { timeoutMs: 240_000 });
    assert.equal(res.code, 0, res.stderr);
    const manifest = JSON.parse(res.stdout) as { artifact: { location: string } };
    return gunzipSync(await readFile(manifest.artifact.location));
  }

  void test('with --redact strings no token of the page is stored; without, every token its JavaScript holds is', async () => {
    const all = [...Object.values(js), domOnly];
    const clear = await capture([], 'clear');
    assert.deepEqual(tokensIn(clear, Object.values(js)), Object.values(js), 'without redaction the JS heap holds every token read into it');
    const redacted = await capture(['--redact', 'strings'], 'redacted');
    assert.deepEqual(tokensIn(redacted, all), [], 'no token in the redacted artifact, DOM-only text included');
  });
});
