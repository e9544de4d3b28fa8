/**
 * A table of bad requests: each gets the right status and stable code in the
 * error envelope, and nothing is enqueued, recorded or audited.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startRedis, type RedisServer } from '@heapcap/testkit';
import { auth, nodeTarget, queueState, startHarness, type Harness } from './harness.ts';

interface Case {
  name: string;
  method?: 'GET' | 'POST' | 'PUT' | 'DELETE';
  url?: string;
  headers?: Record<string, string>;
  /** An object is sent as JSON; a string as is. */
  payload?: unknown;
  status: number;
  code: string;
  /** Fields expected in details.fields (in:path). */
  fields?: string[];
}

const json = { 'content-type': 'application/json' };
const BODY_LIMIT = 4096;

const CASES: Case[] = [
  { name: 'unknown target', payload: { target: 'no-such-target' }, status: 404, code: 'target_not_found' },
  { name: 'target id with a path in it', payload: { target: '../etc' }, status: 400, code: 'validation_failed', fields: ['body:target'] },
  {
    name: 'wrong types',
    payload: { target: 42, force: 'yes', options: { gc: 'true', warm: 'sometimes' } },
    status: 400,
    code: 'validation_failed',
    fields: ['body:target', 'body:force', 'body:options.gc', 'body:options.warm'],
  },
  {
    name: 'unknown fields, top level and nested',
    payload: { target: 'app', inspect: 'ws://evil:9229', options: { timeout: 5 } },
    status: 400,
    code: 'validation_failed',
    fields: ['body:inspect', 'body:options.timeout'],
  },
  { name: 'unknown field whose name has a lone surrogate (not echoed)', payload: { target: 'app', 'x\ud800': 1 }, status: 400, code: 'validation_failed', fields: ['body:x\ufffd'] },
  { name: 'missing target', payload: { reason: 'x' }, status: 400, code: 'validation_failed', fields: ['body:target'] },
  { name: 'body is an array', payload: '[]', headers: json, status: 400, code: 'validation_failed' },
  { name: 'oversized body', payload: { target: 'app', reason: 'x'.repeat(BODY_LIMIT) }, status: 413, code: 'payload_too_large' },
  { name: 'reason too long (within the body limit)', payload: { target: 'app', reason: 'x'.repeat(1001) }, status: 400, code: 'validation_failed', fields: ['body:reason'] },
  { name: 'wait above 600', url: '/v1/captures?wait=601', payload: { target: 'app' }, status: 400, code: 'validation_failed', fields: ['querystring:wait'] },
  { name: 'wait negative', url: '/v1/captures?wait=-1', payload: { target: 'app' }, status: 400, code: 'validation_failed', fields: ['querystring:wait'] },
  { name: 'wait not a number', url: '/v1/captures?wait=soon', payload: { target: 'app' }, status: 400, code: 'validation_failed', fields: ['querystring:wait'] },
  { name: 'unknown query parameter', url: '/v1/captures?target=app', payload: { target: 'app' }, status: 400, code: 'validation_failed', fields: ['querystring:target'] },
  { name: 'malformed JSON', payload: '{"target": "app",', headers: json, status: 400, code: 'malformed_json' },
  { name: 'empty JSON body', payload: '', headers: json, status: 400, code: 'validation_failed', fields: ['body:'] },
  { name: 'text/plain body', payload: 'target=app', headers: { 'content-type': 'text/plain' }, status: 415, code: 'unsupported_media_type' },
  { name: 'form body', payload: 'target=app', headers: { 'content-type': 'application/x-www-form-urlencoded' }, status: 415, code: 'unsupported_media_type' },
  {
    name: 'Idempotency-Key too long',
    payload: { target: 'app' },
    headers: { 'idempotency-key': 'k'.repeat(256) },
    status: 400,
    code: 'validation_failed',
    fields: ['headers:idempotency-key'],
  },
  { name: 'no token', payload: { target: 'app' }, headers: { authorization: '' }, status: 401, code: 'unauthorized' },
  { name: 'invalid token', payload: { target: 'app' }, headers: { authorization: 'Bearer not-a-token' }, status: 401, code: 'unauthorized' },
  { name: 'not a bearer header', payload: { target: 'app' }, headers: { authorization: 'Basic dXNlcjpwYXNz' }, status: 401, code: 'unauthorized' },
  { name: 'token without captures:write', payload: { target: 'app' }, headers: auth('reader'), status: 403, code: 'forbidden' },
  // Auth runs before the body is read: an unauthenticated oversized body is a 401, not a 413.
  { name: 'no token, oversized body', payload: { target: 'app', reason: 'x'.repeat(BODY_LIMIT) }, headers: { authorization: '' }, status: 401, code: 'unauthorized' },
  { name: 'bad cursor', method: 'GET', url: '/v1/captures?cursor=bm90LWEtY3Vyc29y', status: 400, code: 'validation_failed', fields: ['querystring:cursor'] },
  { name: 'limit above 100', method: 'GET', url: '/v1/captures?limit=1000', status: 400, code: 'validation_failed', fields: ['querystring:limit'] },
  { name: 'bad status filter', method: 'GET', url: '/v1/captures?status=exploded', status: 400, code: 'validation_failed', fields: ['querystring:status'] },
  { name: 'bad time range', method: 'GET', url: '/v1/captures?since=yesterday', status: 400, code: 'validation_failed', fields: ['querystring:since'] },
  { name: 'capture id with bad characters', method: 'GET', url: '/v1/captures/..%2F..%2Fetc', status: 400, code: 'validation_failed', fields: ['params:id'] },
  { name: 'unknown capture', method: 'GET', url: '/v1/captures/01ARZ3NDEKTSV4RRFFQ69G5FAV', status: 404, code: 'not_found' },
  { name: 'artifact of an unknown capture', method: 'GET', url: '/v1/captures/01ARZ3NDEKTSV4RRFFQ69G5FAV/artifact', status: 404, code: 'not_found' },
  { name: 'artifact without artifacts:read', method: 'GET', url: '/v1/captures/01ARZ3NDEKTSV4RRFFQ69G5FAV/artifact', headers: auth('writer'), status: 403, code: 'forbidden' },
  { name: 'cancel an unknown capture', method: 'DELETE', url: '/v1/captures/01ARZ3NDEKTSV4RRFFQ69G5FAV', status: 404, code: 'not_found' },
  { name: 'list without captures:read', method: 'GET', url: '/v1/captures', headers: auth('writer'), status: 403, code: 'forbidden' },
  { name: 'unknown route', method: 'GET', url: '/v1/nothing-here', status: 404, code: 'not_found' },
  { name: 'unknown route without a token', method: 'GET', url: '/v1/nothing-here', headers: { authorization: '' }, status: 401, code: 'unauthorized' },
  {
    name: 'register a target without targets:admin',
    url: '/v1/targets',
    payload: nodeTarget('new-one', 9229),
    status: 403,
    code: 'forbidden',
  },
  {
    name: 'register a target with a raw URL field',
    url: '/v1/targets',
    headers: auth('admin'),
    payload: { id: 'x', kind: 'node', inspect: '127.0.0.1:9229', url: 'http://example' },
    status: 400,
    code: 'validation_failed',
    fields: ['body:url'],
  },
  { name: 'register a target twice', url: '/v1/targets', headers: auth('admin'), payload: nodeTarget('app', 9229), status: 409, code: 'conflict' },
  {
    name: 'PUT a target whose id differs from the URL',
    method: 'PUT',
    url: '/v1/targets/other',
    headers: auth('admin'),
    payload: nodeTarget('app', 9229),
    status: 400,
    code: 'validation_failed',
    fields: ['body:id'],
  },
  { name: 'delete an unknown target', method: 'DELETE', url: '/v1/targets/nope', headers: auth('admin'), status: 404, code: 'target_not_found' },
  // Impossible addresses are refused when registered, not at connect time.
  ...(
    [
      ['inspect port 0', { kind: 'node', inspect: '127.0.0.1:0' }, 'body:inspect'],
      ['inspect port 99999', { kind: 'node', inspect: '127.0.0.1:99999' }, 'body:inspect'],
      ['inspect port 65536', { kind: 'node', inspect: 'localhost:65536' }, 'body:inspect'],
      ['ws port 0', { kind: 'node', ws: 'ws://127.0.0.1:0/6c0a' }, 'body:ws'],
      ['ws port 99999', { kind: 'node', ws: 'ws://127.0.0.1:99999/6c0a' }, 'body:ws'],
      ['ws with an http scheme', { kind: 'node', ws: 'http://127.0.0.1:9229/6c0a' }, 'body:ws'],
      ['chromium browser port 0', { kind: 'chromium', browser: '127.0.0.1:0' }, 'body:browser'],
      ['chromium browser port 99999', { kind: 'chromium', browser: '127.0.0.1:99999' }, 'body:browser'],
      ['chromium pattern that is not a regex', { kind: 'chromium', browser: '127.0.0.1:9222', select: { urlPattern: 'shop(' } }, 'body:select.urlPattern'],
      ['a label value with a lone surrogate', { kind: 'node', inspect: '127.0.0.1:9229', labels: { env: 'prod\ud800' } }, 'body:labels.env'],
    ] as const
  ).map(([what, fields, field]): Case => ({
    name: `register a target with ${what}`,
    url: '/v1/targets',
    headers: auth('admin'),
    payload: { id: 'impossible', ...fields },
    status: 400,
    code: 'validation_failed',
    fields: [field],
  })),
  { name: 'PUT a target with port 0', method: 'PUT', url: '/v1/targets/app', headers: auth('admin'), payload: nodeTarget('app', 0), status: 400, code: 'validation_failed', fields: ['body:inspect'] },
  { name: 'reason with a lone high surrogate', payload: { target: 'app', reason: 'OOM \ud800 alert' }, status: 400, code: 'validation_failed', fields: ['body:reason'] },
  { name: 'reason with a lone low surrogate', payload: { target: 'app', reason: '\udc00' }, status: 400, code: 'validation_failed', fields: ['body:reason'] },
];

void describe('bad inputs', () => {
  let redis: RedisServer;
  let h: Harness;

  before(async () => {
    redis = await startRedis();
    h = await startHarness({ redisUrl: redis.url, http: { bodyLimitBytes: BODY_LIMIT }, targets: [nodeTarget('app', 9229)] });
  });
  after(async () => {
    await h?.close();
    await redis?.stop();
  });

  for (const c of CASES) {
    void it(`${c.name} → ${c.status} ${c.code}`, async () => {
      const before = await queueState(h.queue);
      const headers: Record<string, string> = { ...auth('runbook'), ...c.headers };
      if (headers['authorization'] === '') delete headers['authorization'];
      const res = await h.app.inject({
        method: c.method ?? 'POST',
        url: c.url ?? '/v1/captures',
        headers,
        payload: c.payload === undefined || typeof c.payload === 'string' ? c.payload : JSON.stringify(c.payload),
        ...(c.payload !== undefined && typeof c.payload !== 'string' && headers['content-type'] === undefined ? { headers: { ...headers, 'content-type': 'application/json' } } : {}),
      });
      assert.equal(res.statusCode, c.status, res.body);
      // What the caller sent is never echoed with a lone surrogate in it (JSON escapes it as \udXXX).
      assert.doesNotMatch(res.body, /\\ud[89a-f][0-9a-f]{2}/i, res.body);
      const body = res.json<{ error: { code: string; message: string; details: { fields?: { in: string; path: string }[] } } }>();
      assert.equal(body.error.code, c.code, res.body);
      assert.equal(typeof body.error.message, 'string');
      assert.equal(typeof body.error.details, 'object');
      if (c.fields !== undefined) {
        const got = (body.error.details.fields ?? []).map((f) => `${f.in}:${f.path}`).sort();
        assert.deepEqual(got, [...c.fields].sort(), res.body);
      }
      if (c.status === 401) assert.match(String(res.headers['www-authenticate']), /^Bearer realm="heapcap"/);
      assert.equal(await queueState(h.queue), before, 'nothing enqueued, recorded or audited');
    });
  }

  void it('an Idempotency-Key reused with a different request → 422, and only the first capture exists', async () => {
    const headers = { ...auth('runbook'), 'content-type': 'application/json', 'idempotency-key': 'runbook-42' };
    const first = await h.app.inject({ method: 'POST', url: '/v1/captures', headers, payload: JSON.stringify({ target: 'app', reason: 'first' }) });
    assert.equal(first.statusCode, 202, first.body);
    const before = await queueState(h.queue);
    const second = await h.app.inject({ method: 'POST', url: '/v1/captures', headers, payload: JSON.stringify({ target: 'app', reason: 'different' }) });
    assert.equal(second.statusCode, 422, second.body);
    assert.equal(second.json<{ error: { code: string } }>().error.code, 'idempotency_key_reused');
    assert.equal(await queueState(h.queue), before);
    // The same request again is a replay of the first capture.
    const replay = await h.app.inject({ method: 'POST', url: '/v1/captures', headers, payload: JSON.stringify({ target: 'app', reason: 'first' }) });
    assert.equal(replay.statusCode, 200, replay.body);
    const r = replay.json<{ capture: { id: string }; replayed: boolean }>();
    assert.equal(r.capture.id, first.json<{ capture: { id: string } }>().capture.id);
    assert.equal(r.replayed, true);
  });

  void it('a corrupt record → 500 internal without internals in the body', async () => {
    const id = '01ARZ3NDEKTSV4RRFFQ69G5FAW';
    await h.queue.redis.hset(h.queue.keys.record(id), 'id', id, 'status', 'exploded', 'trigger', '{not json');
    const res = await h.app.inject({ method: 'GET', url: `/v1/captures/${id}`, headers: auth('runbook') });
    assert.equal(res.statusCode, 500);
    assert.deepEqual(res.json(), { error: { code: 'internal', message: 'internal error', details: {} } });
    // The cause is in the log, tied to the request.
    assert.ok(h.logs.lines.some((l) => l.includes('"code":"internal"') && l.includes('request failed')));
  });
});
