/** Tokens, scopes, dev mode, per-token rate limits, audit lines and log redaction. */
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parseConfig } from '@heapcap/config';
import { createQueue } from '@heapcap/state';
import { createFileSink } from '@heapcap/storage';
import { startRedis, tmpDir, type RedisServer } from '@heapcap/testkit';
import { ConfigFileError } from '@heapcap/config';
import { parseTokens, resolveAuthMode, startApi, hashToken } from '../src/index.ts';
import { componentLogger } from '@heapcap/service';
import { LogCapture, TOKENS, auth, nodeTarget, startHarness, tokensFileText, type Harness } from './harness.ts';

const json = { 'content-type': 'application/json' };

void describe('tokens file', () => {
  void it('parses names, hashes and scopes', () => {
    const tokens = parseTokens(tokensFileText());
    assert.deepEqual(tokens.map((t) => t.name), ['admin', 'runbook', 'reader', 'writer']);
    assert.equal(tokens[0]?.hash.toString('hex'), hashToken(TOKENS.admin));
    assert.deepEqual([...(tokens[2]?.scopes ?? [])], ['captures:read']);
  });

  for (const [what, text, pattern] of [
    ['a token that is not a sha256', 'tokens:\n  - {name: a, sha256: "abc", scopes: [captures:read]}\n', /sha256/],
    ['an unknown scope', `tokens:\n  - {name: a, sha256: "${'a'.repeat(64)}", scopes: [captures:everything]}\n`, /scopes/],
    ['a duplicate name', `tokens:\n  - {name: a, sha256: "${'a'.repeat(64)}", scopes: [captures:read]}\n  - {name: a, sha256: "${'b'.repeat(64)}", scopes: [captures:read]}\n`, /twice/],
    ['an unknown field', `tokens:\n  - {name: a, token: plain, sha256: "${'a'.repeat(64)}", scopes: [captures:read]}\n`, /token/],
    ['no tokens', 'tokens: []\n', /tokens/],
  ] as const) {
    void it(`rejects ${what}`, () => {
      assert.throws(() => parseTokens(text, '/etc/heapcap/tokens.yaml'), (err: unknown) => err instanceof ConfigFileError && /\/etc\/heapcap\/tokens\.yaml/.test(err.message) && pattern.test(err.message));
    });
  }

  void it('start-up needs a tokens file unless --dev', async () => {
    await assert.rejects(resolveAuthMode({ tokensFile: undefined }, { dev: false }), /HEAPCAP_TOKENS_FILE/);
    assert.deepEqual(await resolveAuthMode({ tokensFile: undefined }, { dev: true }), { kind: 'dev' });
    const dir = await tmpDir('heapcap-tokens');
    try {
      const file = join(dir.path, 'tokens.yaml');
      await writeFile(file, tokensFileText());
      // A tokens file wins over --dev: auth is never silently off.
      const mode = await resolveAuthMode({ tokensFile: file }, { dev: true });
      assert.equal(mode.kind, 'tokens');
    } finally {
      await dir.cleanup();
    }
  });
});

void describe('auth, rate limits, audit and redaction', () => {
  let redis: RedisServer;
  let h: Harness;

  before(async () => {
    redis = await startRedis();
    h = await startHarness({ redisUrl: redis.url, http: { rateLimitMax: 5, rateLimitWindowMs: 60_000 }, targets: [nodeTarget('app', 9229)] });
  });
  after(async () => {
    await h?.close();
    await redis?.stop();
  });

  void it('scopes: each token can do what its scopes allow and nothing else', async () => {
    const cases: [keyof typeof TOKENS, string, string, unknown, number][] = [
      ['reader', 'GET', '/v1/targets', undefined, 200],
      ['reader', 'POST', '/v1/targets', nodeTarget('b', 9230), 403],
      ['writer', 'GET', '/v1/targets', undefined, 403],
      ['admin', 'POST', '/v1/targets', nodeTarget('b', 9230), 201],
      ['admin', 'PUT', '/v1/targets/b', nodeTarget('b', 9231), 200],
      ['admin', 'DELETE', '/v1/targets/b', undefined, 204],
    ];
    for (const [who, method, url, body, status] of cases) {
      const res = await h.app.inject({ method: method as 'GET', url, headers: { ...auth(who), ...json }, payload: body === undefined ? undefined : JSON.stringify(body) });
      assert.equal(res.statusCode, status, `${who} ${method} ${url}: ${res.body}`);
    }
    const audit = (await h.queue.audit.recent(10)).map((e) => `${e.who} ${e.action} ${e.targetId ?? ''}`);
    assert.deepEqual(audit.slice(0, 3), ['admin target.delete b', 'admin target.put b', 'admin target.put b']);
  });

  void it('rate limit per token: the 6th request in the window is 429, other tokens and probes are unaffected', async () => {
    // The scope test above used 2 of reader's 5 and 4 of admin's 5.
    for (let i = 0; i < 5; i++) {
      const ok = await h.app.inject({ method: 'GET', url: '/v1/captures', headers: auth('runbook') });
      assert.equal(ok.statusCode, 200, ok.body);
    }
    const limited = await h.app.inject({ method: 'GET', url: '/v1/captures', headers: auth('runbook') });
    assert.equal(limited.statusCode, 429);
    assert.equal(limited.json<{ error: { code: string } }>().error.code, 'rate_limited');
    assert.ok(Number(limited.headers['retry-after']) > 0);
    const other = await h.app.inject({ method: 'GET', url: '/v1/captures', headers: auth('reader') });
    assert.equal(other.statusCode, 200);
    for (let i = 0; i < 10; i++) assert.equal((await h.app.inject({ method: 'GET', url: '/readyz' })).statusCode, 200);
  });

  void it('no log line contains a token, and the API logger redacts authorization headers', () => {
    assert.ok(h.logs.lines.length > 10);
    for (const token of Object.values(TOKENS)) {
      assert.ok(!h.logs.lines.some((l) => l.includes(token)), `token ${token.slice(0, 8)}… in the logs`);
    }
    const capture = new LogCapture();
    componentLogger(capture.logger, 'api').info({ req: { headers: { authorization: `Bearer ${TOKENS.admin}`, host: 'x' } } }, 'headers');
    assert.ok(!capture.lines.join('\n').includes(TOKENS.admin));
    assert.match(capture.lines.join('\n'), /\[redacted\]/);
  });
});

void describe('startApi', () => {
  let redis: RedisServer;

  before(async () => {
    redis = await startRedis();
  });
  after(async () => {
    await redis?.stop();
  });

  void it('--dev refuses a non-loopback address; on loopback every caller is "dev" and it says auth is off', async () => {
    const storage = await tmpDir('heapcap-api-dev');
    const queue = createQueue({ redisUrl: redis.url, prefix: 'dev' });
    const logs = new LogCapture();
    const deps = { queue, sink: createFileSink({ dir: storage.path }), auth: { kind: 'dev' as const }, logger: logs.logger };
    try {
      await assert.rejects(startApi(parseConfig({ HEAPCAP_HOST: '0.0.0.0', HEAPCAP_PORT: '0' }), deps), /loopback/);
      const api = await startApi(parseConfig({ HEAPCAP_HOST: '127.0.0.1', HEAPCAP_PORT: '0' }), deps);
      try {
        assert.ok(logs.lines.some((l) => l.includes('AUTH IS OFF')));
        const put = await fetch(`${api.url}/v1/targets`, { method: 'POST', headers: json, body: JSON.stringify(nodeTarget('devapp', 9229)) });
        assert.equal(put.status, 201);
        const trig = await fetch(`${api.url}/v1/captures`, { method: 'POST', headers: { ...json, 'x-forwarded-for': '203.0.113.9' }, body: '{"target":"devapp"}' });
        assert.equal(trig.status, 202);
        const entry = (await queue.audit.recent(1))[0];
        // X-Forwarded-For is not trusted unless configured: the audit names the socket's address.
        assert.deepEqual([entry?.who, entry?.action, entry?.from], ['dev', 'capture.trigger', '127.0.0.1']);
      } finally {
        await api.close();
      }
      await api.close(); // idempotent
    } finally {
      await queue.close();
      await storage.cleanup();
    }
  });
});
