/** The captures API without a worker: queueing, waiting, listing, cancelling queued captures; the OpenAPI document. */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { CaptureRecord } from '@heapcap/state';
import { startRedis, waitFor, type RedisServer } from '@heapcap/testkit';
import { auth, nodeTarget, startHarness, type Harness } from './harness.ts';

interface CaptureResponse {
  capture: CaptureRecord;
  coalesced: boolean;
  replayed: boolean;
  links: { self: string; artifact: string; cancel: string };
}

const json = { 'content-type': 'application/json' };

void describe('captures without a worker', () => {
  let redis: RedisServer;
  let h: Harness;

  before(async () => {
    redis = await startRedis();
    h = await startHarness({ redisUrl: redis.url, targets: ['a', 'b', 'c'].map((id, i) => nodeTarget(id, 9300 + i)) });
  });
  after(async () => {
    await h?.close();
    await redis?.stop();
  });

  const post = async (body: unknown, query = ''): Promise<{ status: number; body: CaptureResponse }> => {
    const r = await h.app.inject({ method: 'POST', url: `/v1/captures${query}`, headers: { ...auth('runbook'), ...json }, payload: JSON.stringify(body) });
    return { status: r.statusCode, body: r.json<CaptureResponse>() };
  };

  void it('202 with the record and links; options defaulted; trigger names the token, never the token value', async () => {
    const { status, body } = await post({ target: 'a', reason: 'OOM alert #123', options: { gc: true } });
    assert.equal(status, 202);
    assert.equal(body.coalesced, false);
    assert.equal(body.capture.status, 'queued');
    assert.deepEqual(body.capture.options, { warm: 'auto', gc: true, gzip: true, exposeInternals: false, captureNumericValue: false, forceHeadroom: false, kind: 'snapshot', samplingSeconds: 30, samplingIntervalBytes: 32_768 });
    assert.deepEqual(body.capture.trigger, { kind: 'rest', who: 'runbook', reason: 'OOM alert #123', from: '127.0.0.1' });
    assert.deepEqual(body.links, { self: `/v1/captures/${body.capture.id}`, artifact: `/v1/captures/${body.capture.id}/artifact`, cancel: `/v1/captures/${body.capture.id}` });
    assert.equal((await h.queue.depth()).jobs.waiting, 1);
  });

  void it('?wait= returns 202 with the record as it is when the deadline passes first', async () => {
    const t0 = Date.now();
    const { status, body } = await post({ target: 'b' }, '?wait=1');
    const ms = Date.now() - t0;
    assert.equal(status, 202);
    assert.equal(body.capture.status, 'queued');
    assert.ok(ms >= 950 && ms < 5_000, `waited ${ms} ms`);
  });

  void it('?wait= ends as soon as the capture ends (here: cancelled by another caller)', async () => {
    const { body: queued } = await post({ target: 'c', force: true });
    const waiting = post({ target: 'c' }, '?wait=30');
    // Cancel only once the waiting request has joined the capture.
    await waitFor(async () => (await h.queue.getCapture(queued.capture.id))?.coalesced === 1, { timeoutMs: 5_000, what: 'the second request to join' });
    const t0 = Date.now();
    const del = await h.app.inject({ method: 'DELETE', url: `/v1/captures/${queued.capture.id}`, headers: auth('runbook') });
    assert.equal(del.statusCode, 200, del.body);
    assert.equal(del.json<{ result: string }>().result, 'cancelled');
    const { status, body } = await waiting;
    assert.ok(Date.now() - t0 < 3_000, 'woken by the done event, not the deadline');
    assert.equal(status, 200);
    assert.equal(body.coalesced, true);
    assert.equal(body.capture.id, queued.capture.id);
    assert.equal(body.capture.status, 'cancelled');
    // A cancelled queued capture leaves no job behind.
    assert.equal(await h.queue.bull.getJob(queued.capture.id), undefined);
  });

  void it('lists newest first with filters and a cursor', async () => {
    for (let i = 0; i < 5; i++) await post({ target: 'a', force: true });
    const page = async (query: string): Promise<{ items: CaptureRecord[]; nextCursor: string | null }> => {
      const r = await h.app.inject({ method: 'GET', url: `/v1/captures?${query}`, headers: auth('reader') });
      assert.equal(r.statusCode, 200, r.body);
      return r.json();
    };
    const first = await page('target=a&limit=4');
    assert.equal(first.items.length, 4);
    assert.ok(first.nextCursor !== null);
    const second = await page(`target=a&limit=4&cursor=${encodeURIComponent(first.nextCursor)}`);
    assert.equal(second.items.length, 2);
    assert.equal(second.nextCursor, null);
    const all = [...first.items, ...second.items];
    assert.equal(new Set(all.map((r) => r.id)).size, 6);
    assert.deepEqual(all.map((r) => r.createdAt), [...all.map((r) => r.createdAt)].sort().reverse());
    assert.ok(all.every((r) => r.targetId === 'a'));
    assert.deepEqual((await page('status=cancelled')).items.map((r) => r.targetId), ['c']);
    assert.equal((await page('trigger=schedule')).items.length, 0);
    const future = new Date(Date.now() + 60_000).toISOString();
    assert.equal((await page(`since=${encodeURIComponent(future)}`)).items.length, 0);
    assert.equal((await page(`until=${encodeURIComponent(future)}&target=b`)).items.length, 1);
  });

  void it('publishes an OpenAPI 3.1 document of every route, and Swagger UI, without auth', async () => {
    const res = await h.app.inject({ method: 'GET', url: '/openapi.json' });
    assert.equal(res.statusCode, 200);
    const doc = res.json<{ openapi: string; paths: Record<string, Record<string, { requestBody?: unknown; parameters?: { name: string }[] }>>; components: { securitySchemes: object } }>();
    assert.equal(doc.openapi, '3.1.0');
    assert.deepEqual(Object.keys(doc.paths).sort(), [
      '/healthz',
      '/readyz',
      '/v1/captures',
      '/v1/captures/{id}',
      '/v1/captures/{id}/analysis',
      '/v1/captures/{id}/artifact',
      '/v1/captures/{id}/pin',
      '/v1/captures/{id}/profile',
      '/v1/captures/{id}/summary',
      '/v1/diff',
      '/v1/leak-hunts',
      '/v1/leak-hunts/{id}',
      '/v1/schedules',
      '/v1/schedules/{id}',
      '/v1/schedules/{id}/pause',
      '/v1/schedules/{id}/resume',
      '/v1/session',
      '/v1/targets',
      '/v1/targets/samples/latest',
      '/v1/targets/{id}',
      '/v1/targets/{id}/samples',
      '/v1/watch-rules',
      '/v1/watch-rules/{id}',
      '/v1/watch-rules/{id}/pause',
      '/v1/watch-rules/{id}/resume',
      '/v1/workers',
    ]);
    assert.deepEqual(Object.keys(doc.paths['/v1/schedules/{id}'] ?? {}).sort(), ['delete', 'get', 'put']);
    assert.ok(doc.paths['/v1/schedules']?.['post']?.requestBody);
    assert.deepEqual(Object.keys(doc.paths['/v1/captures'] ?? {}).sort(), ['get', 'post']);
    assert.ok(doc.paths['/v1/captures']?.['post']?.requestBody);
    assert.ok(doc.paths['/v1/captures']?.['post']?.parameters?.some((p) => p.name === 'idempotency-key'));
    assert.ok('bearer' in doc.components.securitySchemes);
    const ui = await h.app.inject({ method: 'GET', url: '/docs/' });
    assert.equal(ui.statusCode, 200);
    assert.match(String(ui.headers['content-type']), /text\/html/);
  });
});
