/**
 * What grew, through the service: REST → queue → real worker → a real Node
 * leak target → file storage. Every capture gets `<id>.summary.json` while it
 * streams; GET /v1/diff names the leaked class as the top grower with a count
 * delta of exactly N; a scheduled capture's record carries `growth`; the
 * analysis job adds retained sizes; the stable error codes.
 */
import assert from 'node:assert/strict';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import type { CaptureRecord } from '@heapcap/state';
import { runHeapcapHere, startNodeTarget, startRedis, waitFor, type NodeTarget, type RedisServer } from '@heapcap/testkit';
import { runLeakHunt } from '@heapcap/worker';
import { auth, nodeTarget, startHarness, TOKENS, type Harness } from './harness.ts';

const LEAK_TARGET = fileURLToPath(new URL('../../../packages/analysis/test/fixtures/leak-target.cjs', import.meta.url));
const N = 20_000;

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

void describe('summaries, diffs, growth and analyses through the API', { timeout: 300_000 }, () => {
  let redis: RedisServer;
  let leaky: NodeTarget;
  let other: NodeTarget;
  let h: Harness;
  let small: Harness;
  const ids = { warm: '', base: '', head: '', other: '' };

  const get = (url: string, who: Parameters<typeof auth>[0] = 'runbook', harness = h): Promise<{ statusCode: number; json: () => Json }> =>
    harness.app.inject({ method: 'GET', url, headers: auth(who) });
  const capture = async (targetId: string, harness = h): Promise<CaptureRecord> => {
    const res = await harness.app.inject({
      method: 'POST',
      url: '/v1/captures?wait=120',
      headers: { ...auth('runbook'), 'content-type': 'application/json' },
      payload: JSON.stringify({ target: targetId, force: true }),
    });
    const record = res.json<{ capture: CaptureRecord }>().capture;
    assert.equal(record.status, 'succeeded', JSON.stringify(record.error));
    return record;
  };

  before(async () => {
    redis = await startRedis();
    [leaky, other] = await Promise.all([startNodeTarget({ script: LEAK_TARGET }), startNodeTarget({ script: LEAK_TARGET })]);
    h = await startHarness({ redisUrl: redis.url, worker: { concurrency: 1 }, targets: [nodeTarget('leaky', leaky.port ?? 0), nodeTarget('other', other.port ?? 0)] });
    // The first capture of a process compiles the inspector's own code: a warm-up capture keeps that out of the diff.
    ids.warm = (await capture('leaky')).id;
    ids.base = (await capture('leaky')).id;
    await leaky.request(`leak ${N}`, 'LEAKED');
    ids.head = (await capture('leaky')).id;
    ids.other = (await capture('other')).id;
  });
  after(async () => {
    await small?.close();
    await h?.close();
    await Promise.all([leaky?.kill(), other?.kill()]);
    await redis?.stop();
  });

  void it('every capture has a summary beside its artifact, linked from the record and the manifest', async () => {
    const record = (await get(`/v1/captures/${ids.head}`)).json()['capture'] as CaptureRecord;
    const key = record.artifact?.summaryKey;
    assert.equal(key, record.artifact?.key.replace(/\.heapsnapshot\.gz$/, '.summary.json'));
    const names = await readdir(h.storage.path, { recursive: true });
    assert.ok(names.some((n) => n.endsWith(`${ids.head}.summary.json`)), names.join(', '));
    const manifest = await h.sink.getDocument(record.artifact?.manifestKey ?? '');
    assert.equal((manifest as Json)['summary']['key'], key);

    const res = await get(`/v1/captures/${ids.head}/summary`);
    assert.equal(res.statusCode, 200);
    const summary = res.json()['summary'] as Json;
    assert.equal(summary['classes'].find((c: Json) => c['name'] === 'Leaked')?.count, N);
    assert.equal((manifest as Json)['summary']['nodeCount'], summary['nodeCount']);
    // No strings unless configured (HEAPCAP_SUMMARY_LARGEST_STRINGS).
    assert.equal(summary['largestStrings'], undefined);
    // artifacts:read is needed, and the read is audited.
    assert.equal((await get(`/v1/captures/${ids.head}/summary`, 'reader')).statusCode, 403);
    assert.ok(h.logs.audits().some((a) => a.audit.action === 'summary.read' && a.audit.captureId === ids.head));
  });

  void it('GET /v1/diff: the top grower is the leaked class, count delta exactly N', async () => {
    const res = await get(`/v1/diff?base=${ids.base}&head=${ids.head}`);
    assert.equal(res.statusCode, 200, JSON.stringify(res.json()));
    const body = res.json();
    const [top] = body['diff']['classes'] as Json[];
    assert.equal(top?.['name'], 'Leaked', JSON.stringify((body['diff']['classes'] as Json[]).slice(0, 5)));
    assert.equal(top['countDelta'], N);
    assert.equal(top['status'], 'new');
    assert.equal(body['diff']['retained'], false);
    // Suspects come first; without analyses they are summary-only, say so and say what to ask for (this GET starts nothing).
    assert.equal(Object.keys(body['diff'])[1], 'suspects');
    const suspects = body['diff']['suspects'];
    assert.equal(suspects['mode'], 'summary');
    assert.match(suspects['note'], new RegExp(`^summary-only \\(no holders\\): base ${ids.base} has no analysis \\(POST /v1/captures/${ids.base}/analysis\\); head ${ids.head} has no analysis`));
    assert.deepEqual([suspects['suspects'][0]['class'], suspects['suspects'][0]['countDelta'], suspects['suspects'][0]['holder']], ['Leaked', N, null]);
    assert.deepEqual(body['head']['analysis'], { status: 'none', poll: `/v1/captures/${ids.head}/analysis` });
    assert.equal(body['forced'], false);
    assert.deepEqual(body['base']['captureId'], ids.base);
    // `limit`: the rest are counted, not sent.
    const limited = (await get(`/v1/diff?base=${ids.base}&head=${ids.head}&limit=3`)).json();
    assert.equal(limited['diff']['classes'].length, 3);
    assert.equal(limited['omittedClasses'], (body['diff']['classes'] as Json[]).length + body['omittedClasses'] - 3);
  });

  void it('diff errors have stable codes: target_mismatch (unless force), not_found, validation', async () => {
    const mismatch = await get(`/v1/diff?base=${ids.base}&head=${ids.other}`);
    assert.equal(mismatch.statusCode, 409);
    assert.equal(mismatch.json()['error']['code'], 'target_mismatch');
    const forced = await get(`/v1/diff?base=${ids.base}&head=${ids.other}&force=true`);
    assert.equal(forced.statusCode, 200);
    assert.equal(forced.json()['forced'], true);
    const unknown = await get(`/v1/diff?base=${ids.base}&head=nope`);
    assert.equal(unknown.statusCode, 404);
    assert.equal(unknown.json()['error']['code'], 'not_found');
    assert.equal((await get(`/v1/diff?base=${ids.base}`)).json()['error']['code'], 'validation_failed');
    assert.equal((await get(`/v1/diff?base=${ids.base}&head=${ids.head}`, 'reader')).statusCode, 403);
  });

  void it('heapcap diff BASE_ID HEAD_ID goes through the API; its errors keep the API codes', async () => {
    const address = await h.app.listen({ host: '127.0.0.1', port: 0 });
    const env = { HEAPCAP_API_URL: address, HEAPCAP_TOKEN: TOKENS.runbook };
    const res = await runHeapcapHere(['diff', ids.base, ids.head, '--top', '3'], { env });
    assert.equal(res.code, 0, res.stderr);
    const rows = res.stdout.split('\n').map((l) => l.trim()).filter((l) => /^\S+\s+(new|grown|shrunk|vanished)\s/.test(l));
    assert.match(rows[0] ?? '', /^Leaked\s+new\s+20,000\s+\+20,000\s/, res.stdout);
    assert.match(res.stdout, /\(3 of \d+ changed\)/);
    assert.match(res.stdout, new RegExp(`base  capture ${ids.base} \\(leaky\\)`));
    const json = await runHeapcapHere(['diff', ids.base, ids.head, '--json'], { env });
    assert.equal(JSON.parse(json.stdout).diff.classes[0].countDelta, N);
    const mismatch = await runHeapcapHere(['diff', ids.base, ids.other], { env });
    assert.equal(mismatch.code, 2);
    assert.match(mismatch.stderr, /^target_mismatch: /);
    // In the CLI's words: its flag, not the API's query parameter.
    assert.match(mismatch.stderr, /add --force to compare them anyway/, mismatch.stderr);
    assert.doesNotMatch(mismatch.stderr, /force=true/, mismatch.stderr);
    assert.equal((await runHeapcapHere(['diff', ids.base, ids.other, '--force'], { env })).code, 0);
  });

  void it('summary_missing for a capture without a summary', async () => {
    // A record from before summaries: no summaryKey on its artifact.
    await h.queue.redis.hset(h.queue.keys.record(ids.warm), 'artifact', JSON.stringify({ ...(await h.queue.getCapture(ids.warm))?.artifact, summaryKey: undefined }));
    const res = await get(`/v1/captures/${ids.warm}/summary`);
    assert.equal(res.statusCode, 404);
    assert.equal(res.json()['error']['code'], 'summary_missing');
    assert.equal((await get(`/v1/diff?base=${ids.warm}&head=${ids.head}`)).json()['error']['code'], 'summary_missing');
  });

  void it("a scheduled capture's record carries growth since the previous capture of the target", async () => {
    await leaky.request(`leak ${N}`, 'LEAKED');
    const { record } = await h.queue.requestCapture({ targetId: 'leaky', trigger: { kind: 'schedule', who: 'test', scheduleId: 'nightly' } });
    const done = await waitFor(async () => {
      const r = await h.queue.getCapture(record.id);
      return r?.growth !== undefined ? r : null;
    }, { timeoutMs: 120_000, intervalMs: 200, what: 'growth on the scheduled capture' });
    assert.equal(done.growth?.since, ids.head);
    // Suspects first, summary-only (the new capture has no analysis yet), saying which requests give holders.
    assert.equal(Object.keys(done.growth ?? {})[0], 'suspects');
    const suspects = done.growth?.suspects;
    assert.equal(suspects?.mode, 'summary');
    assert.match(suspects?.note ?? '', new RegExp(`^summary-only \\(no holders\\): capture ${record.id} was just taken and has no analysis; .*POST /v1/captures/${ids.head}/analysis .*GET /v1/diff\\?base=${ids.head}&head=${record.id}$`));
    assert.equal(suspects?.items[0]?.class, 'Leaked');
    assert.equal(suspects?.items[0]?.countDelta, N);
    assert.match(suspects?.items[0]?.reason ?? '', /^\+20,000 Leaked \(\+[\d.]+ [KM]iB self\); holder unknown \(summary only\)$/);
    assert.ok((suspects?.items.length ?? 0) <= 5);
    assert.equal(done.growth?.classes[0]?.name, 'Leaked');
    assert.equal(done.growth?.classes[0]?.countDelta, N);
    assert.ok((done.growth?.classes.length ?? 0) <= 5);
    // REST captures are not given growth.
    assert.equal((await h.queue.getCapture(ids.head))?.growth, undefined);
  });

  void it('POST /analysis queues a job; the worker stores retained sizes; the diff then carries retained deltas', async () => {
    assert.equal((await get(`/v1/captures/${ids.base}/analysis`)).json()['error']['code'], 'analysis_missing');
    for (const id of [ids.base, ids.head]) {
      const res = await h.app.inject({ method: 'POST', url: `/v1/captures/${id}/analysis`, headers: auth('runbook') });
      assert.equal(res.statusCode, 202, JSON.stringify(res.json()));
      assert.equal(res.json()['state']['status'], 'queued');
    }
    const analysed = async (id: string): Promise<Json> =>
      waitFor(async () => {
        const body = (await get(`/v1/captures/${id}/analysis`)).json();
        return body['state']['status'] === 'succeeded' || body['state']['status'] === 'failed' ? body : null;
      }, { timeoutMs: 120_000, intervalMs: 200, what: `the analysis of ${id}` });
    const head = await analysed(ids.head);
    await analysed(ids.base);
    assert.equal(head['state']['status'], 'succeeded', JSON.stringify(head['state']));
    const leakedClass = (head['analysis']['classes'] as Json[]).find((c) => c['name'] === 'Leaked');
    assert.equal(leakedClass?.['count'], N);
    assert.ok(leakedClass['retainedSize'] >= leakedClass['selfSize']);
    assert.ok(head['state']['key'].endsWith(`${ids.head}.analysis.json`));
    const diff = (await get(`/v1/diff?base=${ids.base}&head=${ids.head}`)).json();
    assert.equal(diff['diff']['retained'], true);
    assert.equal(diff['head']['analysed'], true);
    const leaked = (diff['diff']['classes'] as Json[]).find((c) => c['name'] === 'Leaked');
    assert.equal(leaked?.['retainedSizeDelta'], leakedClass['retainedSize']);
    // With both analyses the suspects have holders: Leaked first, held by the global `__leaks` array.
    const [suspect] = diff['diff']['suspects']['suspects'] as Json[];
    assert.equal(diff['diff']['suspects']['mode'], 'graph');
    assert.deepEqual([suspect?.['class'], suspect?.['countDelta'], suspect?.['holder']['class'], suspect?.['holder']['edge']], ['Leaked', N, 'Array', '__leaks']);
    assert.match(suspect?.['reason'], /^\+20,000 elements in `__leaks` \(Array\): 20,000 Leaked \(\+[\d.]+ [KM]iB\)/);
    assert.deepEqual(diff['head']['analysis'], { status: 'succeeded', poll: `/v1/captures/${ids.head}/analysis` });
    // A capture that did not succeed has nothing to analyse.
    const unknown = await h.app.inject({ method: 'POST', url: '/v1/captures/nope/analysis', headers: auth('runbook') });
    assert.equal(unknown.statusCode, 404);
  });

  void it('a request joins the queued or running analysis; one abandoned for an hour is queued again', async () => {
    const post = async (): Promise<{ statusCode: number; json: () => Json }> => h.app.inject({ method: 'POST', url: `/v1/captures/${ids.other}/analysis`, headers: auth('runbook') });
    const requestedAt = (msAgo: number): string => new Date(Date.now() - msAgo).toISOString();
    // A running analysis (as a worker leaves it while it works): joined, no second job.
    await h.queue.analyses.setState(ids.other, { status: 'running', requestedBy: 'runbook', requestedAt: requestedAt(1_000) });
    const joined = await post();
    assert.equal(joined.statusCode, 200);
    assert.equal(joined.json()['state']['status'], 'running');
    // The same state two hours old: its worker died, nothing will finish it; a new job is queued and runs.
    await h.queue.analyses.setState(ids.other, { status: 'running', requestedBy: 'runbook', requestedAt: requestedAt(2 * 3600_000) });
    const again = await post();
    assert.equal(again.statusCode, 202);
    const state = await waitFor(async () => {
      const st = (await get(`/v1/captures/${ids.other}/analysis`)).json()['state'] as Json;
      return st['status'] === 'succeeded' || st['status'] === 'failed' ? st : null;
    }, { timeoutMs: 60_000, intervalMs: 100, what: 'the requeued analysis' });
    assert.equal(state['status'], 'succeeded', JSON.stringify(state));
  });

  void it('a truncated artifact fails its analysis with snapshot_invalid and the offset; the worker goes on', async () => {
    const record = await capture('leaky');
    const path = join(h.storage.path, ...(record.artifact?.key ?? '').split('/'));
    // Cut the stored snapshot's JSON in the middle and store it again (gzip, as it was).
    const json = gunzipSync(await readFile(path));
    await writeFile(path, gzipSync(json.subarray(0, Math.floor(json.length / 2))));
    const res = await h.app.inject({ method: 'POST', url: `/v1/captures/${record.id}/analysis`, headers: auth('runbook') });
    assert.equal(res.statusCode, 202);
    const state = await waitFor(async () => {
      const s = (await get(`/v1/captures/${record.id}/analysis`)).json()['state'] as Json;
      return s['status'] === 'failed' || s['status'] === 'succeeded' ? s : null;
    }, { timeoutMs: 60_000, intervalMs: 100, what: 'the analysis of the truncated artifact' });
    assert.equal(state['error']?.['code'], 'snapshot_invalid', JSON.stringify(state));
    assert.match(state['error']['message'], /at byte \d+/);
    assert.ok(state['error']['offset'] > 0 && state['error']['offset'] <= Math.floor(json.length / 2), JSON.stringify(state['error']));
    // The same worker still captures and analyses.
    const next = await capture('leaky');
    assert.equal((await h.app.inject({ method: 'POST', url: `/v1/captures/${next.id}/analysis`, headers: auth('runbook') })).statusCode, 202);
    const ok = await waitFor(async () => {
      const s = (await get(`/v1/captures/${next.id}/analysis`)).json()['state'] as Json;
      return s['status'] === 'succeeded' || s['status'] === 'failed' ? s : null;
    }, { timeoutMs: 60_000, intervalMs: 100, what: 'the next analysis' });
    assert.equal(ok['status'], 'succeeded', JSON.stringify(ok));
  });

  void it('the worker refuses a snapshot above HEAPCAP_ANALYSIS_MAX_BYTES with analysis_too_large, before loading it', async () => {
    small = await startHarness({ redisUrl: redis.url, worker: { concurrency: 1 }, analysis: { maxBytes: 1000, concurrency: 1 }, targets: [nodeTarget('leaky', leaky.port ?? 0)] });
    const record = await capture('leaky', small);
    const res = await small.app.inject({ method: 'POST', url: `/v1/captures/${record.id}/analysis`, headers: auth('runbook') });
    assert.equal(res.statusCode, 202);
    const state = await waitFor(async () => {
      const s = (await get(`/v1/captures/${record.id}/analysis`, 'runbook', small)).json()['state'] as Json;
      return s['status'] === 'failed' || s['status'] === 'succeeded' ? s : null;
    }, { timeoutMs: 60_000, intervalMs: 100, what: 'the refused analysis' });
    assert.equal(state['error']?.['code'], 'analysis_too_large', JSON.stringify(state));
    assert.match(state['error']['hint'], /HEAPCAP_ANALYSIS_MAX_BYTES/);
  });

  void it('POST /v1/leak-hunts: three snapshots on one session name the leaked class, with the path to its global, and not the freed one', async () => {
    const res = await h.app.inject({
      method: 'POST',
      url: '/v1/leak-hunts',
      headers: { ...auth('runbook'), 'content-type': 'application/json' },
      payload: JSON.stringify({ target: 'leaky', interval: 2, reason: 'heap grows after deploy' }),
    });
    assert.equal(res.statusCode, 202, res.body);
    const id = res.json()['hunt']['id'] as string;
    const phase = async (want: string): Promise<void> => {
      await waitFor(async () => {
        const hunt = (await get(`/v1/leak-hunts/${id}`)).json()['hunt'] as Json;
        if (hunt['status'] === 'failed') throw new Error(JSON.stringify(hunt['error']));
        return hunt['phase'] === want;
      }, { timeoutMs: 60_000, intervalMs: 50, what: `hunt phase ${want}` });
    };
    // Between baseline and target: 3000 more Leaked (kept) and 2000 Transient; before final the Transients are freed.
    await phase('wait');
    await leaky.request('leak 3000', 'LEAKED');
    await leaky.request('transient 2000', 'TRANSIENT');
    await phase('wait-final');
    await leaky.request('free', 'FREED');
    const done = await waitFor(async () => {
      const body = (await get(`/v1/leak-hunts/${id}`)).json();
      return body['hunt']['status'] === 'succeeded' || body['hunt']['status'] === 'failed' ? body : null;
    }, { timeoutMs: 120_000, intervalMs: 100, what: 'the hunt to finish' });
    assert.equal(done['hunt']['status'], 'succeeded', JSON.stringify(done['hunt']['error']));
    assert.deepEqual((done['hunt']['snapshots'] as Json[]).map((s) => s['name']), ['baseline', 'target', 'final']);
    assert.equal(done['hunt']['allocations'], true, 'the record says the default: tracked');
    const classes = done['report']['classes'] as Json[];
    const leaked = classes.find((c) => c['name'] === 'Leaked');
    assert.equal(leaked?.['count'], 3000, JSON.stringify(classes.slice(0, 5).map((c) => [c['name'], c['count']])));
    assert.equal(classes.find((c) => c['name'] === 'Transient'), undefined);
    assert.ok((leaked['representative']['path'] as Json[]).some((step) => step['edge'] === '__leaks'), JSON.stringify(leaked['representative']['path']));
    // The list (what the console's hunts view reads): newest first, by target, with the classes found.
    const listed = (await get('/v1/leak-hunts?target=leaky')).json()['items'] as Json[];
    assert.equal(listed[0]?.['id'], id);
    assert.equal(listed[0]?.['status'], 'succeeded');
    assert.ok((listed[0]?.['classes'] as Json[]).some((c) => c['name'] === 'Leaked'));
    assert.ok(((await get('/v1/leak-hunts')).json()['items'] as Json[]).some((x) => x['id'] === id));
    assert.deepEqual((await get('/v1/leak-hunts?target=nobody')).json()['items'], []);
    assert.equal((await get('/v1/leak-hunts?limit=0')).statusCode, 400);
    // The target is free again: a capture runs right after.
    assert.equal((await capture('leaky')).status, 'succeeded');
    assert.equal((await get(`/v1/leak-hunts/nope`)).statusCode, 404);
    const unknownTarget = await h.app.inject({ method: 'POST', url: '/v1/leak-hunts', headers: { ...auth('runbook'), 'content-type': 'application/json' }, payload: JSON.stringify({ target: 'nope', interval: 1 }) });
    assert.equal(unknownTarget.json()['error']['code'], 'target_not_found');
    // `allocations` is a boolean (what heapcap hunt --no-allocations, Slack's and the console form's `false` send); nothing is created.
    const notBoolean = await h.app.inject({ method: 'POST', url: '/v1/leak-hunts', headers: { ...auth('runbook'), 'content-type': 'application/json' }, payload: JSON.stringify({ target: 'leaky', interval: 1, allocations: 'no' }) });
    assert.equal(notBoolean.statusCode, 400);
    assert.equal(notBoolean.json()['error']['code'], 'validation_failed');
    assert.deepEqual((notBoolean.json()['error']['details']['fields'] as Json[]).map((f) => f['path']), ['allocations']);
    assert.equal(((await get('/v1/leak-hunts?target=leaky')).json()['items'] as Json[]).length, listed.length);
  });

  void it('a driven hunt needs targets:admin; its HTTP drive may only address the target\'s own host; the record keeps no headers', async () => {
    const post = (who: Parameters<typeof auth>[0], drive: unknown): Promise<{ statusCode: number; json: () => Json }> =>
      h.app.inject({ method: 'POST', url: '/v1/leak-hunts', headers: { ...auth(who), 'content-type': 'application/json' }, payload: JSON.stringify({ target: 'leaky', interval: 1, drive }) });
    const refused = await post('runbook', { evaluate: '1' });
    assert.equal(refused.statusCode, 403);
    assert.equal(refused.json()['error']['code'], 'forbidden');
    assert.match(refused.json()['error']['message'], /targets:admin/);
    for (const url of ['http://169.254.169.254/latest/meta-data/', 'http://127.0.0.2:80/', 'http://user:pw@127.0.0.1/']) {
      const res = await post('admin', { http: { url } });
      assert.equal(res.statusCode, 409, url);
      assert.equal(res.json()['error']['code'], 'drive_url_not_allowed', url);
    }
    const notHttp = await post('admin', { http: { url: 'file:///etc/passwd' } });
    assert.equal(notHttp.statusCode, 400);
    assert.equal(notHttp.json()['error']['code'], 'validation_failed');
    // Allowed: the target's own host, any port. Its secret header stays out of the record (and so out of GET).
    const ok = await post('admin', { http: { method: 'POST', url: 'http://127.0.0.1:1/login', headers: { authorization: 'Bearer target-secret' }, count: 2 } });
    assert.equal(ok.statusCode, 202, JSON.stringify(ok.json()));
    // rounds: the default, 3 (the drive runs 3 times before the target snapshot, once more before the final).
    assert.deepEqual(ok.json()['hunt']['drive'], { kind: 'http', method: 'POST', url: 'http://127.0.0.1:1/login', count: 2, rounds: 3 });
    const tooMany = await post('admin', { http: { url: 'http://127.0.0.1:1/login' }, rounds: 21 });
    assert.equal(tooMany.statusCode, 400);
    assert.equal(tooMany.json()['error']['code'], 'validation_failed');
    assert.doesNotMatch(JSON.stringify((await get(`/v1/leak-hunts/${ok.json()['hunt']['id']}`)).json()), /target-secret/);
    // Nothing answers on port 1: the drive fails the hunt with invalid_input, after its baseline.
    const failed = await waitFor(async () => {
      const hunt = (await get(`/v1/leak-hunts/${ok.json()['hunt']['id']}`)).json()['hunt'] as Json;
      return hunt['status'] === 'failed' || hunt['status'] === 'succeeded' ? hunt : null;
    }, { timeoutMs: 60_000, intervalMs: 100, what: 'the driven hunt to end' });
    assert.equal(failed['error']['code'], 'invalid_input', JSON.stringify(failed));
    assert.equal(failed['phase'], 'drive');
    assert.match(failed['error']['message'], /drive request 1 of 2 \(POST http:\/\/127\.0\.0\.1:1\/login\) failed/);
  });

  void it('a hunt whose worker died mid-hunt fails when its job comes back (new session, new ids), never hangs', async () => {
    const hunt = { id: 'hunt-died', targetId: 'leaky', intervalMs: 1000, requestedBy: 'runbook', status: 'running' as const, phase: 'wait', snapshots: [], createdAt: new Date().toISOString() };
    await h.queue.leakHunts.put(hunt);
    const after = await runLeakHunt({ queue: h.queue, sink: h.sink, log: h.logs.logger, maxBytes: 1e9, concurrency: 1 }, hunt.id, new AbortController().signal);
    assert.equal(after?.status, 'failed');
    assert.match(after?.error?.message ?? '', /stopped during wait; start a new hunt/);
    assert.equal((await get('/v1/leak-hunts/hunt-died')).json()['hunt']['status'], 'failed');
  });
});
