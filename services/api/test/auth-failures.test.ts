/** Requests with a missing or invalid token are limited per client address (token guessing is bounded). */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startRedis, type RedisServer } from '@heapcap/testkit';
import { AuthFailureLimiter, addressKey } from '../src/auth/failure-limit.ts';
import { auth, nodeTarget, startHarness, type Harness } from './harness.ts';

const MAX = 3;

void describe('failed authentications per client address', () => {
  let redis: RedisServer;
  let h: Harness;

  before(async () => {
    redis = await startRedis();
    // trustProxy: the tests choose the client address with X-Forwarded-For.
    h = await startHarness({ redisUrl: redis.url, http: { authFailureMax: MAX, trustProxy: true, rateLimitMax: 1000 }, targets: [nodeTarget('app', 9229)] });
  });
  after(async () => {
    await h?.close();
    await redis?.stop();
  });

  const get = (from: string, headers: Record<string, string> = {}) =>
    h.app.inject({ method: 'GET', url: '/v1/captures', headers: { 'x-forwarded-for': from, ...headers } });

  void it(`the ${MAX + 1}th request without a valid token from one address is 429 with Retry-After, in the envelope`, async () => {
    const from = '203.0.113.10';
    const attempts: Record<string, string>[] = [{}, { authorization: 'Bearer guess-1' }, { authorization: 'Basic eDp5' }];
    for (const headers of attempts) assert.equal((await get(from, headers)).statusCode, 401);
    const limited = await get(from, { authorization: 'Bearer guess-4' });
    assert.equal(limited.statusCode, 429, limited.body);
    const body = limited.json<{ error: { code: string; message: string; details: { limit: number; retryAfterSeconds: number } } }>();
    assert.equal(body.error.code, 'rate_limited');
    assert.equal(body.error.details.limit, MAX);
    const retryAfter = Number(limited.headers['retry-after']);
    assert.ok(retryAfter >= 1 && retryAfter <= 60, String(limited.headers['retry-after']));
    assert.equal(body.error.details.retryAfterSeconds, retryAfter);
    // Refused before the token is looked at: a right guess is not told apart from a wrong one.
    assert.equal((await get(from, auth('runbook'))).statusCode, 429);
    // Public routes (probes) are never limited.
    assert.equal((await h.app.inject({ method: 'GET', url: '/healthz', headers: { 'x-forwarded-for': from } })).statusCode, 200);
  });

  void it('other addresses keep their own budget; valid tokens from them keep the per-token limit only', async () => {
    assert.equal((await get('203.0.113.11', { authorization: 'Bearer wrong' })).statusCode, 401);
    for (let i = 0; i < MAX + 2; i++) assert.equal((await get('203.0.113.12', auth('runbook'))).statusCode, 200);
  });

  void it('IPv6 addresses of one /64 share a budget', async () => {
    for (let i = 1; i <= MAX; i++) assert.equal((await get(`2001:db8:1:2::${i}`)).statusCode, 401);
    assert.equal((await get('2001:db8:1:2:ffff::9')).statusCode, 429);
    assert.equal((await get('2001:db8:1:3::1')).statusCode, 401);
  });
});

void describe('limits from the configuration', () => {
  let redis: RedisServer;
  let h: Harness;

  before(async () => {
    redis = await startRedis();
    h = await startHarness({ redisUrl: redis.url, env: { HEAPCAP_AUTH_FAILURE_LIMIT: '1', HEAPCAP_RATE_LIMIT: '2', HEAPCAP_TRUST_PROXY: '1' } });
  });
  after(async () => {
    await h?.close();
    await redis?.stop();
  });

  void it('HEAPCAP_AUTH_FAILURE_LIMIT, HEAPCAP_RATE_LIMIT and HEAPCAP_TRUST_PROXY (one hop) reach the API', async () => {
    const get = (from: string, headers: Record<string, string> = {}) => h.app.inject({ method: 'GET', url: '/v1/targets', headers: { 'x-forwarded-for': from, ...headers } });
    assert.equal((await get('198.51.100.1')).statusCode, 401);
    assert.equal((await get('198.51.100.1')).statusCode, 429);
    assert.equal((await get('198.51.100.2')).statusCode, 401, 'the nearest proxy is trusted: X-Forwarded-For names the client');
    assert.equal((await get('198.51.100.3', auth('reader'))).statusCode, 200);
    assert.equal((await get('198.51.100.3', auth('reader'))).statusCode, 200);
    assert.equal((await get('198.51.100.3', auth('reader'))).statusCode, 429, 'the third request of the token in the minute');
  });
});

void describe('AuthFailureLimiter', () => {
  void it('blocks at max for the rest of the window, then forgets', () => {
    let now = 1_000;
    const l = new AuthFailureLimiter({ max: 2, windowMs: 60_000, now: () => now });
    l.fail('a');
    assert.equal(l.blockedFor('a'), 0);
    l.fail('a');
    assert.equal(l.blockedFor('a'), 60_000);
    now += 59_000;
    assert.equal(l.blockedFor('a'), 1_000);
    now += 1_000;
    assert.equal(l.blockedFor('a'), 0);
    assert.equal(l.size, 0);
  });

  void it('holds at most maxAddresses, dropping the oldest window first', () => {
    let now = 0;
    const l = new AuthFailureLimiter({ max: 1, windowMs: 1_000_000, maxAddresses: 100, now: () => now });
    for (let i = 0; i < 10_000; i++) {
      now += 1;
      l.fail(`10.0.${i >> 8}.${i & 255}`);
    }
    assert.equal(l.size, 100);
    assert.equal(l.blockedFor('10.0.0.0'), 0, 'the oldest was dropped');
    assert.ok(l.blockedFor('10.0.39.15') > 0, 'the newest is kept');
  });

  void it('keys addresses: IPv4 as is (also IPv4-mapped), IPv6 by /64', () => {
    assert.equal(addressKey('192.0.2.1'), '192.0.2.1');
    assert.equal(addressKey('::ffff:192.0.2.1'), '192.0.2.1');
    assert.equal(addressKey('2001:db8:0:1::5'), '2001:db8:0:1::/64');
    assert.equal(addressKey('2001:0db8:0000:0001:aaaa:bbbb:cccc:dddd'), '2001:db8:0:1::/64');
    assert.equal(addressKey('::1'), '0:0:0:0::/64');
  });
});
