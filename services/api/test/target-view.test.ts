/** A node target's ws URL (user info, inspector session id) is shown whole only to targets:admin. */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startRedis, type RedisServer } from '@heapcap/testkit';
import type { Target } from '@heapcap/state';
import { redactWsUrl } from '../src/plugins/app/target-view.ts';
import { auth, nodeTarget, startHarness, type Harness } from './harness.ts';

const SECRET_WS = 'ws://ops:s3cret@127.0.0.1:9339/6c0a9f2e-4b1d-4c3e-9a8f-1d2e3f4a5b6c?token=abc';
const WS_TARGET: Target = { id: 'by-ws', kind: 'node', ws: SECRET_WS, labels: {} };

void describe('ws URLs in target responses', () => {
  let redis: RedisServer;
  let h: Harness;

  before(async () => {
    redis = await startRedis();
    h = await startHarness({ redisUrl: redis.url, targets: [WS_TARGET, nodeTarget('by-port', 9229)] });
  });
  after(async () => {
    await h?.close();
    await redis?.stop();
  });

  void it('captures:read sees ws://HOST:PORT/… in GET /v1/targets/:id and the list; nothing else of the URL', async () => {
    for (const who of ['reader', 'runbook'] as const) {
      const one = await h.app.inject({ method: 'GET', url: '/v1/targets/by-ws', headers: auth(who) });
      assert.equal(one.statusCode, 200, one.body);
      assert.equal(one.json<{ target: { ws: string } }>().target.ws, 'ws://127.0.0.1:9339/…');
      const list = await h.app.inject({ method: 'GET', url: '/v1/targets', headers: auth(who) });
      assert.equal(list.statusCode, 200, list.body);
      for (const secret of ['ops', 's3cret', '6c0a9f2e', 'token=abc']) assert.ok(!one.body.includes(secret) && !list.body.includes(secret), `${who} saw ${secret}`);
      // inspect HOST:PORT is not a secret: shown as registered.
      assert.match(list.body, /"inspect":"127\.0\.0\.1:9229"/);
    }
  });

  void it('targets:admin sees the URL as registered', async () => {
    const one = await h.app.inject({ method: 'GET', url: '/v1/targets/by-ws', headers: auth('admin') });
    assert.equal(one.json<{ target: { ws: string } }>().target.ws, SECRET_WS);
    const list = await h.app.inject({ method: 'GET', url: '/v1/targets', headers: auth('admin') });
    assert.ok(list.body.includes(SECRET_WS.replaceAll('/', '\\/')) || list.body.includes(SECRET_WS));
  });

  void it('the redacted form keeps scheme, host and port, also a default port', () => {
    assert.equal(redactWsUrl('wss://u:p@inspector.internal/x'), 'wss://inspector.internal:443/…');
    assert.equal(redactWsUrl('ws://[::1]:9229/uuid'), 'ws://[::1]:9229/…');
    assert.equal(redactWsUrl('ws://h/uuid'), 'ws://h:80/…');
  });
});
