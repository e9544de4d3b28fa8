/**
 * End to end: REST → queue → real worker → real Node target (through a CDP
 * proxy that counts snapshots in flight) → file storage → artifact endpoint.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { gunzipSync } from 'node:zlib';
import type { CaptureRecord } from '@heapcap/state';
import { fixturePath, startCdpProxy, startNodeTarget, startRedis, waitFor, type CdpProxy, type NodeTarget, type RedisServer } from '@heapcap/testkit';
import type { LightMyRequestResponse as LightResponse } from 'fastify';
import { auth, startHarness, type Harness } from './harness.ts';

interface CaptureResponse {
  capture: CaptureRecord;
  coalesced: boolean;
  replayed: boolean;
  links: { self: string; artifact: string; cancel: string };
}

const json = { 'content-type': 'application/json' };

/** Every file under `dir`, relative. */
async function files(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries.filter((e) => e.isFile()).map((e) => join(e.parentPath, e.name).slice(dir.length + 1));
}

void describe('REST → worker → artifact', () => {
  let redis: RedisServer;
  let target: NodeTarget;
  let proxy: CdpProxy;
  let h: Harness;

  before(async () => {
    redis = await startRedis();
    target = await startNodeTarget({ script: fixturePath('heap-holder.cjs'), env: { HEAP_MB: '8' } });
    proxy = await startCdpProxy(target.wsUrl ?? '');
    h = await startHarness({
      redisUrl: redis.url,
      // Two captures in flight per worker: only the target lock keeps forced captures apart.
      worker: { concurrency: 2, lockRetryMs: 100 },
      targets: [{ id: 'app', kind: 'node', ws: proxy.url, labels: { service: 'e2e' } }],
    });
  });
  after(async () => {
    await h?.close();
    await proxy?.close();
    await target?.kill();
    await redis?.stop();
  });

  const post = (body: unknown, headers: Record<string, string> = {}, query = ''): Promise<LightResponse> =>
    h.app.inject({ method: 'POST', url: `/v1/captures${query}`, headers: { ...auth('runbook'), ...json, ...headers }, payload: JSON.stringify(body) });

  void it('POST ?wait=60 returns the final record with phase timings; the artifact parses and matches its sha256', async () => {
    const res = await post({ target: 'app', reason: 'e2e' }, {}, '?wait=60');
    assert.equal(res.statusCode, 200, res.body);
    const { capture } = res.json<CaptureResponse>();
    assert.equal(capture.status, 'succeeded', JSON.stringify(capture.error));
    assert.equal(capture.attempts, 1);
    for (const phase of ['connect', 'preflight', 'generate', 'serialize', 'total']) {
      assert.equal(typeof capture.timings?.[phase], 'number', `timing ${phase} in ${JSON.stringify(capture.timings)}`);
    }
    assert.ok(capture.artifact !== null);

    const art = await h.app.inject({ method: 'GET', url: `/v1/captures/${capture.id}/artifact`, headers: auth('runbook') });
    assert.equal(art.statusCode, 200);
    assert.equal(art.headers['content-type'], 'application/json');
    assert.equal(art.headers['cache-control'], 'no-store');
    assert.equal(art.rawPayload.length, capture.artifact.bytesUncompressed);
    assert.equal(createHash('sha256').update(art.rawPayload).digest('hex'), capture.artifact.sha256);
    const snapshot = JSON.parse(art.body) as { snapshot: { meta: { node_fields: string[] }; node_count: number }; strings: string[] };
    assert.ok(snapshot.snapshot.meta.node_fields.includes('name'));
    assert.ok(snapshot.snapshot.node_count > 1000);
    assert.ok(snapshot.strings.includes('Order'), 'the target\'s Order objects are in the snapshot');

    const gz = await h.app.inject({ method: 'GET', url: `/v1/captures/${capture.id}/artifact?encoding=gzip`, headers: auth('runbook') });
    assert.equal(gz.statusCode, 200);
    assert.equal(gz.headers['content-type'], 'application/gzip');
    assert.match(String(gz.headers['content-disposition']), new RegExp(`${capture.id}\\.heapsnapshot\\.gz`));
    assert.ok(gunzipSync(gz.rawPayload).equals(art.rawPayload));

    // Audited: the trigger and both downloads, in Redis and in the log, with who and from where.
    const audit = (await h.queue.audit.recent(100)).filter((e) => e.captureId === capture.id);
    assert.deepEqual(audit.map((e) => e.action).sort(), ['artifact.download', 'artifact.download', 'capture.trigger']);
    assert.ok(audit.every((e) => e.who === 'runbook' && e.from === '127.0.0.1'));
    assert.equal(h.logs.audits().filter((l) => l.audit.captureId === capture.id).length, 3);

    // The record is also readable and listed.
    const one = await h.app.inject({ method: 'GET', url: `/v1/captures/${capture.id}`, headers: auth('reader') });
    assert.equal(one.json<CaptureResponse>().capture.status, 'succeeded');
    const list = await h.app.inject({ method: 'GET', url: '/v1/captures?target=app&status=succeeded', headers: auth('reader') });
    assert.ok(list.json<{ items: CaptureRecord[] }>().items.some((r) => r.id === capture.id));
  });

  /** Polls GET /v1/captures/:id until the capture ends (deadline 90 s). */
  const finished = (id: string): Promise<CaptureRecord> =>
    waitFor(
      async () => {
        const r = await h.app.inject({ method: 'GET', url: `/v1/captures/${id}`, headers: auth('reader') });
        const c = r.json<CaptureResponse>().capture;
        return ['succeeded', 'failed', 'cancelled'].includes(c.status) ? c : undefined;
      },
      { timeoutMs: 90_000, intervalMs: 100, what: `capture ${id} to finish` },
    );

  void it('50 concurrent POSTs for one target → one capture, one snapshot, all 50 answered with its id', async () => {
    const snapshotsBefore = proxy.snapshotCalls();
    const responses = await Promise.all(Array.from({ length: 50 }, () => post({ target: 'app' })));
    const bodies = responses.map((r) => r.json<CaptureResponse>());
    const ids = new Set(bodies.map((b) => b.capture.id));
    assert.equal(ids.size, 1, `one capture id, got ${[...ids].join(', ')}`);
    assert.deepEqual(responses.map((r) => r.statusCode).sort(), [...Array<number>(49).fill(200), 202]);
    assert.equal(bodies.filter((b) => b.coalesced).length, 49);
    const id = [...ids][0] ?? '';
    const final = await finished(id);
    assert.equal(final.status, 'succeeded', JSON.stringify(final.error));
    assert.equal(final.coalesced, 49);
    assert.equal(proxy.snapshotCalls() - snapshotsBefore, 1, 'exactly one takeHeapSnapshot reached the target');
    const artifacts = (await files(h.storage.path)).filter((f) => f.includes(id));
    assert.deepEqual(artifacts.map((f) => f.slice(f.lastIndexOf('/') + 1)).sort(), [`${id}.heapsnapshot.gz`, `${id}.manifest.json`, `${id}.summary.json`]);
  });

  void it('force: true → separate captures that queue behind the target lock, never two snapshots in flight', async () => {
    const snapshotsBefore = proxy.snapshotCalls();
    const maxBefore = proxy.maxInFlight();
    assert.equal(maxBefore, 1);
    const responses = await Promise.all(Array.from({ length: 4 }, () => post({ target: 'app', force: true })));
    assert.deepEqual(responses.map((r) => r.statusCode), [202, 202, 202, 202]);
    const ids = responses.map((r) => r.json<CaptureResponse>().capture.id);
    assert.equal(new Set(ids).size, 4);
    const records = await Promise.all(ids.map(finished));
    assert.deepEqual(records.map((r) => r.status), ['succeeded', 'succeeded', 'succeeded', 'succeeded']);
    assert.equal(proxy.snapshotCalls() - snapshotsBefore, 4);
    assert.equal(proxy.maxInFlight(), 1, 'the target never had two takeHeapSnapshot calls in flight');
    // The worker ran two jobs at once and one of them had to wait for the lock.
    assert.ok((await h.queue.counters()).lock_waits > 0);
  });

  void it('DELETE of a succeeded capture deletes its artifact; the artifact endpoint then answers 409', async () => {
    const res = await post({ target: 'app' }, {}, '?wait=60');
    const { capture } = res.json<CaptureResponse>();
    assert.equal(capture.status, 'succeeded');
    // Snapshot, manifest and summary.
    assert.equal((await files(h.storage.path)).filter((f) => f.includes(capture.id)).length, 3);
    const del = await h.app.inject({ method: 'DELETE', url: `/v1/captures/${capture.id}`, headers: auth('runbook') });
    assert.equal(del.statusCode, 200, del.body);
    assert.equal(del.json<{ result: string }>().result, 'artifact_deleted');
    assert.deepEqual((await files(h.storage.path)).filter((f) => f.includes(capture.id)), []);
    const art = await h.app.inject({ method: 'GET', url: `/v1/captures/${capture.id}/artifact`, headers: auth('runbook') });
    assert.equal(art.statusCode, 409);
    assert.equal(art.json<{ error: { code: string } }>().error.code, 'artifact_not_available');
    const again = await h.app.inject({ method: 'DELETE', url: `/v1/captures/${capture.id}`, headers: auth('runbook') });
    assert.equal(again.json<{ result: string }>().result, 'finished');
  });

  void it('DELETE of a running capture cancels it: record cancelled, no artifact, the target free for the next capture', async () => {
    const res = await post({ target: 'app', force: true });
    const id = res.json<CaptureResponse>().capture.id;
    // Cancel once the snapshot is under way at the target.
    await waitFor(
      async () => {
        const r = await h.app.inject({ method: 'GET', url: `/v1/captures/${id}`, headers: auth('reader') });
        const c = r.json<CaptureResponse>().capture;
        return c.status === 'running' && (c.phase === 'generate' || c.phase === 'serialize');
      },
      { timeoutMs: 30_000, intervalMs: 20, what: 'the capture to reach generate/serialize' },
    );
    const del = await h.app.inject({ method: 'DELETE', url: `/v1/captures/${id}`, headers: auth('runbook') });
    assert.equal(del.statusCode, 202, del.body);
    assert.equal(del.json<{ result: string }>().result, 'cancelling');
    const final = await finished(id);
    assert.equal(final.status, 'cancelled');
    assert.equal(final.error?.code, 'cancelled');
    assert.equal(final.artifact, null);
    // The sink removes its temp file while the worker unwinds; give it a moment, no more.
    await waitFor(async () => (await files(h.storage.path)).filter((f) => f.includes(id)).length === 0, {
      timeoutMs: 5_000,
      what: `no artifact and no partial file of ${id} (files: ${(await files(h.storage.path)).filter((f) => f.includes(id)).join(', ')})`,
    });
    const audit = (await h.queue.audit.recent(100)).filter((e) => e.captureId === id).map((e) => e.action);
    assert.deepEqual(audit.sort(), ['capture.cancel', 'capture.trigger']);
    // The target is released: the next capture runs and succeeds.
    const next = await post({ target: 'app' }, {}, '?wait=60');
    assert.equal(next.json<CaptureResponse>().capture.status, 'succeeded');
    assert.equal(proxy.inFlight(), 0);
  });

  void it('/metrics reports finished captures, phase durations, bytes and queue depth', async () => {
    /** The value of one sample line, e.g. `heapcap_captures{status="succeeded"}`. */
    const sample = (text: string, series: string): number | undefined => {
      const line = text.split('\n').find((l) => l.startsWith(`${series} `));
      return line === undefined ? undefined : Number(line.slice(series.length + 1));
    };
    // The finished counters live in Redis, updated with the record itself: they match at once.
    // BullMQ marks a job completed just after the processor returns, so that gauge may lag a moment.
    const text = await waitFor(
      async () => {
        const t = (await h.app.inject({ method: 'GET', url: '/metrics' })).body;
        return sample(t, 'heapcap_queue_jobs{state="completed"}') === 8 ? t : undefined;
      },
      { timeoutMs: 10_000, what: '8 completed jobs in /metrics' },
    );
    assert.equal(sample(text, 'heapcap_captures_finished_total{status="succeeded",error_code=""}'), 8);
    // 8 succeeded + the cancelled one, which was generating when it was cancelled.
    assert.equal(sample(text, 'heapcap_capture_phase_duration_seconds_count{phase="generate"}'), 9);
    assert.ok((sample(text, 'heapcap_capture_bytes_total{kind="uncompressed"}') ?? 0) > 8 * 1e6);
    assert.equal(sample(text, 'heapcap_captures_finished_total{status="cancelled",error_code="cancelled"}'), 1);
    assert.equal(sample(text, 'heapcap_captures{status="succeeded"}'), 8);
    assert.equal(sample(text, 'heapcap_captures{status="cancelled"}'), 1);
    assert.equal(sample(text, 'heapcap_queue_jobs{state="completed"}'), 8);
    assert.equal(sample(text, 'heapcap_queue_jobs{state="waiting"}'), 0);
    assert.equal(sample(text, 'heapcap_capture_requests_total{outcome="coalesced"}'), 49);
    assert.ok((sample(text, 'heapcap_lock_waits') ?? 0) > 0);
    assert.equal(sample(text, 'heapcap_redis_up'), 1);
  });
});
