/**
 * Redaction of a Chromium page's snapshot (issue 27): a page served by this
 * test with random tokens in DOM text read into JS, an input's value, a JS
 * variable, a cookie read into JS, a string built in the page, and DOM text
 * no script reads. `heapcap capture --chromium … --redact strings`: none of
 * the tokens in the stored artifact (gunzipped); without redaction, every
 * token the page holds in the JS heap is there.
 *
 * Issue 41: tokens in attribute values (`id`, `class`, `data-*`, `title`, an
 * `<input value>`, a detached element's `id`), which Chromium writes into its
 * element nodes' names, and in the page URL's query and fragment, which the
 * manifest shows: none in the artifact, the manifest or the CLI's output with
 * `strings`, all without; the summary's element classes the same either way.
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
  // In attribute values (element node names) and in the page URL (the manifest).
  const attr = { id: token('attrid'), cls: token('attrclass'), data: token('attrdata'), title: token('attrtitle'), value: token('attrvalue'), detached: token('detachedid') };
  const url = { query: token('urlquery'), fragment: token('urlfragment') };
  // Kept by design (docs/operations.md#redaction): a Symbol.toStringTag value is the object's class name.
  const tag = token('tostringtag');
  before(async () => {
    work = await tmpDir('heapcap-redact-page');
    server = createServer((req, res) => {
      if (req.url?.split('?')[0] !== '/secrets') {
        res.writeHead(404).end();
        return;
      }
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'set-cookie': `session=${js.cookie}; Path=/` });
      // The variable's value is assembled at run time, so its whole text is in no script source.
      const [a, b] = [js.variable.slice(0, 12), js.variable.slice(12)];
      res.end(`<!doctype html><title>loading</title>
<p id="text">${js.domText}</p><p>${domOnly}</p><input id="field">
<div id="${attr.id}" class="row ${attr.cls}" data-token="${attr.data}" title="${attr.title}">row</div><input id="in1" value="${attr.value}">
<script>
  // A detached element: its id assembled at run time (no script source holds it).
  window.detached = document.createElement('span');
  detached.id = ['${attr.detached.slice(0, 12)}', '${attr.detached.slice(12)}'].join('');
  window.tagged = { [Symbol.toStringTag]: ['${tag.slice(0, 12)}', '${tag.slice(12)}'].join('') };
  // A fragment (PUT /json/new does not send one): the URL the browser lists and location.href then carry it.
  history.replaceState(null, '', location.pathname + location.search + '#${url.fragment}');
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
    await chromium.openPage(`http://127.0.0.1:${(server.address() as AddressInfo).port}/secrets?token=${url.query}`, { title: 'secrets' });
  });
  after(async () => {
    await chromium?.close();
    await new Promise((resolve) => server?.close(resolve));
    await work?.cleanup();
  });

  /** A capture by the CLI: the artifact (gunzipped), the summary's element classes, and everything the CLI printed and wrote beside the artifact. */
  async function capture(redact: string[], sub: string): Promise<{ artifact: Buffer; manifest: { redaction: { mode: string; rewrittenNames?: number }; selection: { taken: { url: string } }; runtime: { url: string } }; elements: unknown[]; printed: string }> {
    const args = ['capture', '--chromium', `127.0.0.1:${chromium.port}`, '--url-pattern', '/secrets', '--out', join(work.path, sub), '--json', ...redact];
    const res = await runHeapcapHere(args, { timeoutMs: 240_000 });
    assert.equal(res.code, 0, res.stderr);
    const manifest = JSON.parse(res.stdout) as { artifact: { location: string }; summary: { key: string } } & Awaited<ReturnType<typeof capture>>['manifest'];
    const summaryFile = manifest.artifact.location.replace(/\.heapsnapshot\.gz$/, '.summary.json');
    const summary = JSON.parse(await readFile(summaryFile, 'utf8')) as { classes: { name: string }[] };
    const manifestFile = await readFile(manifest.artifact.location.replace(/\.heapsnapshot\.gz$/, '.manifest.json'), 'utf8');
    return {
      artifact: gunzipSync(await readFile(manifest.artifact.location)),
      manifest,
      elements: summary.classes.filter((c) => c.name.startsWith('<')),
      printed: `${res.stdout}\n${res.stderr}\n${manifestFile}\n${JSON.stringify(summary)}`,
    };
  }

  void test('with --redact strings no token of the page is stored; without, every token its JavaScript holds is', async () => {
    const all = [...Object.values(js), domOnly];
    const inNames = Object.values(attr);
    const inUrl = Object.values(url);
    const clear = await capture([], 'clear');
    assert.deepEqual(tokensIn(clear.artifact, Object.values(js)), Object.values(js), 'without redaction the JS heap holds every token read into it');
    assert.deepEqual(tokensIn(clear.artifact, inNames), inNames, 'without redaction the element names hold every attribute value');
    assert.deepEqual(tokensIn(Buffer.from(clear.printed), inUrl), inUrl, 'without redaction the manifest has the whole page URL');
    const redacted = await capture(['--redact', 'strings'], 'redacted');
    assert.deepEqual(tokensIn(redacted.artifact, [...all, ...inNames, ...inUrl]), [], 'no token in the redacted artifact: DOM-only text, attribute values, URL');
    assert.deepEqual(tokensIn(Buffer.from(redacted.printed), [...all, ...inNames, ...inUrl]), [], 'nor in the manifest, the summary or what the CLI printed');
    const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    assert.equal(redacted.manifest.selection.taken.url, `${origin}/secrets`, 'scheme, host and path stay');
    assert.equal(redacted.manifest.runtime.url, `${origin}/secrets`);
    // The element names keep tag and attribute names.
    const names = (JSON.parse(redacted.artifact.toString('utf8')) as { strings: string[] }).strings;
    assert.ok(names.includes(tag), "a toStringTag value stays, as its object's class name (documented)");
    for (const n of ['<div id class data-token title>', '<input id value>', '<span id>']) assert.ok(names.includes(n), `${n} in the redacted names`);
    assert.ok((redacted.manifest.redaction.rewrittenNames ?? 0) >= 3, `${redacted.manifest.redaction.rewrittenNames} names rewritten`);
    // The CLI's table says the mode, and shows no token either.
    const table = await runHeapcapHere(['capture', '--chromium', `127.0.0.1:${chromium.port}`, '--url-pattern', '/secrets', '--out', join(work.path, 'table'), '--redact', 'strings'], { timeoutMs: 240_000 });
    assert.equal(table.code, 0, table.stderr);
    assert.match(table.stdout, /^ {2}redact {5}strings \(\d+ string values replaced, \d+ element names without attribute values\)$/m);
    assert.match(table.stdout, new RegExp(`selected .*${origin}/secrets:`));
    assert.deepEqual(tokensIn(Buffer.from(`${table.stdout}${table.stderr}`), [...all, ...inNames, ...inUrl]), []);
    // The summary groups elements by tag: the same classes, counts and sizes either way.
    assert.ok(clear.elements.length >= 3, JSON.stringify(clear.elements));
    assert.deepEqual(redacted.elements, clear.elements, "the summary's element classes are identical with and without redaction");
  });
});
