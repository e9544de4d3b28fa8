/**
 * The API commands as typed (bin/heapcap) against `bin/heapcap serve --dev`
 * with a real Redis and a real Node.js target: `targets`, `captures`, `watch`
 * and `hunt start|show`, their tables and --json, the README's exit codes
 * (3 for an unknown target, 7 when the API or its Redis is down, 2 for
 * refusals) and a download DevTools can load.
 */
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { after, before, test } from 'node:test';
import { fixturePath, FREE_PORT, freePort, runHeapcap, startDevServe, startHeapcap, startNodeTarget, startRedis, tmpDir, waitFor, type HeapcapResult, type NodeTarget, type RedisServer, type RunningHeapcap, type TmpDir } from '@heapcap/testkit';

let redis: RedisServer;
let target: NodeTarget;
let dir: TmpDir;
let serve: RunningHeapcap;

before(async () => {
  [redis, target, dir] = await Promise.all([startRedis(), startNodeTarget({ script: fixturePath('heap-holder.cjs'), env: { HEAP_MB: '2' } }), tmpDir('heapcap-api-cli')]);
  serve = await startDevServe(dir.path, redis.url, { HEAPCAP_WATCH_INTERVAL: '1s' });
});
after(async () => {
  await serve?.stop();
  await target?.kill();
  await redis?.stop();
  await dir?.cleanup();
});

/** `heapcap ARGS` as a user types it, against the service (cwd: the test's directory). */
function heapcap(...args: string[]): Promise<HeapcapResult> {
  return runHeapcap(args, { env: { HEAPCAP_API_URL: serve.url }, cwd: dir.path });
}

function ok(res: HeapcapResult): string {
  assert.equal(res.code, 0, `${res.stdout}\n${res.stderr}`);
  return res.stdout;
}

let captureId = '';

void test('targets: add, list, show, replace and the refusals (409 is 2, an unknown id is 3 with the closest id)', { timeout: 120_000 }, async () => {
  assert.match(ok(await heapcap('targets', 'list')), /^no targets/);
  const added = ok(await heapcap('targets', 'add', 'checkout-1', '--inspect', `127.0.0.1:${target.port}`, '--label', 'service=checkout,env=prod'));
  assert.match(added, /^ID\s+KIND\s+ADDRESS\s+LABELS\s+SOURCE\s+UPDATED \(UTC\)\n/);
  assert.match(added, new RegExp(`\\ncheckout-1\\s+node\\s+127\\.0\\.0\\.1:${target.port}\\s+service=checkout,env=prod\\s+api\\s+\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d\\n  registered`));
  const listed = JSON.parse(ok(await heapcap('targets', 'list', '--json'))) as { items: { target: { id: string; labels: Record<string, string> } }[] };
  assert.deepEqual(listed.items.map((i) => [i.target.id, i.target.labels]), [['checkout-1', { service: 'checkout', env: 'prod' }]]);
  assert.match(ok(await heapcap('targets', 'show', 'checkout-1')), /checkout-1\s+node/);

  const again = await heapcap('targets', 'add', 'checkout-1', '--inspect', `127.0.0.1:${target.port}`);
  assert.equal(again.code, 2, again.stderr);
  assert.match(again.stderr, /^conflict: /);
  const replaced = JSON.parse(ok(await heapcap('targets', 'add', 'checkout-1', '--inspect', `127.0.0.1:${target.port}`, '--label', 'service=checkout', '--replace', '--json'))) as { target: { labels: Record<string, string> } };
  assert.deepEqual(replaced.target.labels, { service: 'checkout' });

  const typo = await heapcap('targets', 'show', 'chekout-1');
  assert.equal(typo.code, 3, typo.stderr);
  assert.match(typo.stderr, /^target_not_found: .*\(did you mean "checkout-1"\?\)$/m);
  const noAddress = await heapcap('targets', 'add', 'x');
  assert.equal(noAddress.code, 2);
  assert.match(noAddress.stderr, /^invalid_input: give one of --inspect HOST:PORT/);
});

void test('trigger: an unknown target exits 3 as the README says', { timeout: 60_000 }, async () => {
  const res = await heapcap('trigger', 'checkout-2', '--wait', '5');
  assert.equal(res.code, 3, res.stderr);
  assert.match(res.stderr, /^target_not_found: .*\(did you mean "checkout-1"\?\)$/m);
});

void test('captures: list, show, download (DevTools file name, gunzipped or --gz), pin, unpin, analyse, delete', { timeout: 180_000 }, async () => {
  const trig = JSON.parse(ok(await heapcap('trigger', 'checkout-1', '--wait', '60', '--json'))) as { capture: { id: string; status: string; createdAt: string } };
  assert.equal(trig.capture.status, 'succeeded');
  captureId = trig.capture.id;

  const table = ok(await heapcap('captures', 'list'));
  assert.match(table, /^ID\s+TARGET\s+STATUS\s+TRIGGER\s+CREATED \(UTC\)\s+SIZE\s+PINNED\n/);
  assert.match(table, new RegExp(`\\n${captureId}\\s+checkout-1\\s+succeeded\\s+rest \\S+\\s+\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d\\s+[\\d.]+ MiB\\s+-$`, 'm'));
  const filtered = JSON.parse(ok(await heapcap('captures', 'list', '--target', 'checkout-1', '--status', 'succeeded', '--limit', '5', '--json'))) as { items: { id: string }[] };
  assert.deepEqual(filtered.items.map((i) => i.id), [captureId]);
  const shown = ok(await heapcap('captures', 'show', captureId));
  assert.match(shown, new RegExp(`^capture ${captureId}  target checkout-1  succeeded`));
  assert.ok(shown.includes(`\n  open: ${serve.url}/ui/#/captures/${captureId}`), shown);

  // The file name a person can sort and recognise: target, UTC time of the capture, id.
  const stamp = trig.capture.createdAt.replace(/\.\d+Z$/, 'Z').replace(/[-:]/g, '');
  const name = `checkout-1-${stamp}-${captureId}.heapsnapshot`;
  const dl = ok(await heapcap('captures', 'download', captureId));
  assert.match(dl, new RegExp(`^wrote ${join(dir.path, name).replace(/[.]/g, '\\.')} \\([\\d.]+ MiB in [\\d.]+ s\\)\\n  open it in Chrome DevTools: Memory panel → Load → ${name.replace(/[.]/g, '\\.')}`));
  const json = await readFile(join(dir.path, name));
  const snapshot = JSON.parse(json.toString()) as { snapshot: { node_count: number; meta: { node_fields: string[] } } };
  assert.ok(snapshot.snapshot.node_count > 1000 && snapshot.snapshot.meta.node_fields.includes('retained_size') === false);
  const gz = JSON.parse(ok(await heapcap('captures', 'download', captureId, '--gz', '--dir', 'out-gz', '--json'))) as { file: string; bytes: number; gzip: boolean };
  assert.equal(gz.file, join(dir.path, 'out-gz', `${name}.gz`));
  const stored = await readFile(gz.file);
  assert.equal(stored.length, gz.bytes);
  assert.ok(stored.length < json.length, 'the stored gzip is smaller');
  assert.deepEqual(gunzipSync(stored), json);
  assert.deepEqual(await readdir(join(dir.path, 'out-gz')), [`${name}.gz`], 'no .part left behind');

  assert.match(ok(await heapcap('captures', 'pin', captureId, '--reason', 'before the deploy')), /pinned: retention keeps it/);
  assert.match(ok(await heapcap('captures', 'list')), new RegExp(`${captureId} .* yes$`, 'm'));
  const unpinned = JSON.parse(ok(await heapcap('captures', 'unpin', captureId, '--json'))) as { capture: { pinned: unknown } };
  assert.ok(unpinned.capture.pinned === null || unpinned.capture.pinned === undefined);

  const analysed = ok(await heapcap('captures', 'analyse', captureId, '--top', '5'));
  assert.match(analysed, /classes, largest retained size first \(5 of \d+\):/);
  assert.match(analysed, /largest dominators and their retainer paths \(5\):/);
  const analysedJson = JSON.parse(ok(await heapcap('captures', 'analyse', captureId, '--json'))) as { state: { status: string }; analysis: { classes: unknown[] } };
  assert.equal(analysedJson.state.status, 'succeeded');
  assert.ok(analysedJson.analysis.classes.length > 5);

  const missing = await heapcap('captures', 'download', 'NOPE');
  assert.equal(missing.code, 2, missing.stderr);
  assert.match(missing.stderr, /^not_found: /);
});

void test('watch: create, list, show, pause, resume, delete; a mistyped metric is named', { timeout: 60_000 }, async () => {
  const created = ok(await heapcap('watch', 'create', '--id', 'checkout-heap', '--selector', 'service=checkout', '--metric', 'heapUsedBytes', '--above', '4GiB', '--for', '5m', '--cooldown', '1h'));
  assert.match(created, /^ID\s+TARGETS\s+WHEN\s+STATE\s+SOURCE\s+FIRING NOW\s+LAST FIRING \(UTC\)\n/);
  assert.match(created, /\ncheckout-heap\s+service=checkout \(1\)\s+heapUsedBytes > 4096\.0+ MiB for 300s\s+active\s+api\s+-\s+-\n {2}cooldown 3600s, at most 4 per target a day/);
  // The watcher samples the target at its next tick (1 s here).
  await waitFor(async () => /checkout-1: ok, last value [\d.]+ MiB, sampled by /.test((await heapcap('watch', 'show', 'checkout-heap')).stdout), { timeoutMs: 30_000, intervalMs: 200, what: 'the first watch sample' });
  assert.match(ok(await heapcap('watch', 'list')), /\ncheckout-heap\s+service=checkout \(1\)/);
  assert.match(ok(await heapcap('watch', 'pause', 'checkout-heap')), /\s+paused\s+/);
  assert.equal((JSON.parse(ok(await heapcap('watch', 'resume', 'checkout-heap', '--json'))) as { state: string }).state, 'active');
  assert.match(ok(await heapcap('watch', 'delete', 'checkout-heap')), /^watch rule checkout-heap deleted/);
  assert.match(ok(await heapcap('watch', 'list')), /^no watch rules/);

  const typo = await heapcap('watch', 'create', '--target', 'checkout-1', '--metric', 'heapUsedByts', '--above', '512MiB', '--for', '1m');
  assert.equal(typo.code, 2);
  assert.match(typo.stderr, /^invalid_input: unknown --metric "heapUsedByts" \(did you mean "heapUsedBytes"\?\)/);
  const refused = await heapcap('watch', 'create', '--target', 'checkout-1', '--metric', 'heapUsedRatio', '--above', '1.5', '--for', '1m');
  assert.equal(refused.code, 2);
  assert.match(refused.stderr, /^validation_failed: .*heapUsedRatio is heap used \/ heap limit/);
});

void test('hunt start --detach, then hunt show until the report; hunt TARGET still works', { timeout: 180_000 }, async () => {
  const id = ok(await heapcap('hunt', 'start', 'checkout-1', '--interval', '1s', '--detach')).trim();
  assert.match(id, /^[0-9A-Z]{26}$/);
  const running = ok(await heapcap('hunt', 'show', id));
  assert.match(running, new RegExp(`^(leak hunt ${id} of checkout-1: (queued|running)|leak hunt ${id} of checkout-1: [\\d,]+ of)`));
  const done = await waitFor(
    async () => {
      const body = JSON.parse(ok(await heapcap('hunt', 'show', id, '--json'))) as { hunt: { status: string } };
      return body.hunt.status === 'succeeded' ? body : undefined;
    },
    { timeoutMs: 120_000, intervalMs: 500, what: 'the detached hunt' },
  );
  assert.equal(done.hunt.status, 'succeeded');
  const report = ok(await heapcap('hunt', 'show', id));
  assert.match(report, /\nclasses, largest surviving self size first:\n/);
  assert.ok(report.endsWith(`\n  open: ${serve.url}/ui/#/hunts/${id}\n`), report);
  const waited = await heapcap('hunt', 'checkout-1', '--interval', '1s');
  assert.equal(waited.code, 0, waited.stderr);
  assert.match(waited.stdout, /^leak hunt [0-9A-Z]{26} of checkout-1: /);
});

void test('unauthorized and forbidden name HEAPCAP_TOKEN (a real API with a tokens file)', { timeout: 90_000 }, async (t) => {
  const token = randomBytes(32).toString('hex');
  const tokens = join(dir.path, 'tokens.yaml');
  const writer = randomBytes(32).toString('hex');
  await writeFile(
    tokens,
    `tokens:\n  - name: reader\n    sha256: "${createHash('sha256').update(token).digest('hex')}"\n    scopes: [captures:read]\n` +
      `  - name: writer\n    sha256: "${createHash('sha256').update(writer).digest('hex')}"\n    scopes: [captures:write]\n`,
  );
  const api = await startHeapcap(['api'], { cwd: dir.path, env: { HEAPCAP_REDIS_URL: redis.url, HEAPCAP_PORT: FREE_PORT, HEAPCAP_TOKENS_FILE: tokens } });
  t.after(() => api.stop());
  const anonymous = await runHeapcap(['targets', 'list'], { env: { HEAPCAP_API_URL: api.url } });
  assert.equal(anonymous.code, 2, anonymous.stderr);
  assert.match(anonymous.stderr, /^unauthorized: .*\n {2}check: set HEAPCAP_TOKEN to a token the API accepts/);
  const reader = await runHeapcap(['targets', 'add', 'x', '--inspect', '127.0.0.1:9229'], { env: { HEAPCAP_API_URL: api.url, HEAPCAP_TOKEN: token } });
  assert.equal(reader.code, 2, reader.stderr);
  assert.match(reader.stderr, /^forbidden: .*targets:admin.*\n {2}check: the token in HEAPCAP_TOKEN lacks the scope/);
  // trigger --wait reads the record for its progress; a token that may only write captures still gets the outcome
  // (the API's own wait, with the same key: the same capture), and its exit code. The serve's worker captures it.
  const blind = await runHeapcap(['trigger', 'checkout-1', '--wait', '60', '--force'], { env: { HEAPCAP_API_URL: api.url, HEAPCAP_TOKEN: writer } });
  assert.equal(blind.code, 0, `${blind.stdout}\n${blind.stderr}`);
  assert.match(blind.stderr, /^\(no progress: the token may not read captures \(scope captures:read\)/m);
  // Under the result, the capture's console page at the API the CLI talks to (issue 39).
  const opened = `${api.url}/ui/#/captures/`.replace(/[.]/g, '\\.');
  assert.match(blind.stdout, new RegExp(`^capture [0-9A-Z]{26} {2}target checkout-1 {2}succeeded\\n[\\s\\S]*\\((same request as before|done)\\)\\n {2}open: ${opened}[0-9A-Z]{26}\\n$`));
});

void test('captures delete and targets remove; then the API unreachable and its Redis down are 7, not 1', { timeout: 120_000 }, async () => {
  assert.match(ok(await heapcap('captures', 'delete', captureId)), new RegExp(`^capture ${captureId}: artifact deleted`));
  assert.match(ok(await heapcap('targets', 'remove', 'checkout-1')), /^target checkout-1 removed/);
  assert.match(ok(await heapcap('targets', 'list')), /^no targets/);

  const nowhere = await runHeapcap(['captures', 'list'], { env: { HEAPCAP_API_URL: `http://127.0.0.1:${await freePort()}` } });
  assert.equal(nowhere.code, 7, nowhere.stderr);
  assert.match(nowhere.stderr, /^api_unreachable: cannot reach the heapcap API/);

  await redis.stop();
  const down = await waitFor(async () => {
    const res = await heapcap('captures', 'list');
    return res.code === 0 ? undefined : res;
  }, { timeoutMs: 60_000, intervalMs: 250, what: 'the API to notice Redis is gone' });
  assert.equal(down.code, 7, down.stderr);
  assert.match(down.stderr, /^unavailable: .*\n {2}check: the API is up but its Redis or storage is not/);
});
