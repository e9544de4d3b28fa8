/**
 * Schedules API: bad input is a 400 `validation_failed` naming the field and
 * the reason, with nothing created (no definition, no job scheduler); who may
 * change a schedule; pins. Real Redis; no captures run.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startRedis, type RedisServer } from '@heapcap/testkit';
import { auth, nodeTarget, startHarness, type Harness } from './harness.ts';
import { schedulerIds } from './schedule-helpers.ts';

let redis: RedisServer;
before(async () => {
  redis = await startRedis();
});
after(async () => {
  await redis?.stop();
});

interface ErrorBody {
  error: { code: string; message: string; details: { fields?: { in: string; path: string; message: string }[] } };
}

const TARGETS = [
  { ...nodeTarget('checkout-1', 9), labels: { service: 'checkout', env: 'prod' } },
  { ...nodeTarget('checkout-2', 9), labels: { service: 'checkout', env: 'prod' } },
];

void describe('schedules: bad input (default minimum interval, 1 minute)', () => {
  let h: Harness;
  before(async () => {
    h = await startHarness({ redisUrl: redis.url, targets: TARGETS });
  });
  after(() => h?.close());

  const cases: [string, unknown, string, RegExp][] = [
    ['a cron that does not parse', { target: 'checkout-1', cron: '61 * * * *' }, 'cron', /not a valid cron expression/],
    ['a cron of words', { target: 'checkout-1', cron: 'at 3 on tuesdays please' }, 'cron', /not a valid cron expression/],
    ['a cron with 6 fields', { target: 'checkout-1', cron: '0 */5 * * * *' }, 'cron', /5 fields/],
    ['an interval below the minimum', { target: 'checkout-1', every: '30s' }, 'every', /30s is below the minimum interval 1m \(HEAPCAP_SCHEDULE_MIN_INTERVAL\)/],
    ['an interval that is no duration', { target: 'checkout-1', every: 'hourly' }, 'every', /not a duration/],
    ['retention keepLast 0', { target: 'checkout-1', every: '15m', retention: { keepLast: 0 } }, 'retention.keepLast', /at least 1/],
    ['an unknown target', { target: 'checkout-9', every: '15m' }, 'target', /no target "checkout-9" in the registry/],
    ['a selector that matches nothing', { selector: { service: 'chekout' }, every: '15m' }, 'selector', /matches no registered target/],
    ['both every and cron', { target: 'checkout-1', every: '15m', cron: '*/15 * * * *' }, 'cron', /exactly one of every/],
    ['neither every nor cron', { target: 'checkout-1' }, 'every', /exactly one of every/],
    ['both target and selector', { target: 'checkout-1', selector: { service: 'checkout' }, every: '15m' }, 'selector', /exactly one of target/],
    ['an unknown time zone', { target: 'checkout-1', cron: '0 3 * * *', timezone: 'Atlantis/Capital' }, 'timezone', /unknown time zone/],
    ['maxConcurrent 0', { selector: { service: 'checkout' }, every: '15m', maxConcurrent: 0 }, 'maxConcurrent', /too small|>=1/i],
  ];
  for (const [name, body, field, reason] of cases) {
    void it(`${name} → 400 on ${field}, nothing created`, async () => {
      for (const [method, url] of [
        ['POST', '/v1/schedules'],
        ['PUT', '/v1/schedules/bad-one'],
      ] as const) {
        const res = await h.app.inject({ method, url, headers: auth('runbook'), payload: body as object });
        assert.equal(res.statusCode, 400, `${method}: ${res.body}`);
        const err = res.json<ErrorBody>().error;
        assert.equal(err.code, 'validation_failed');
        const fields = err.details.fields ?? [];
        assert.deepEqual(fields.map((f) => `${f.in}.${f.path}`), [`body.${field}`], res.body);
        assert.match(fields[0]!.message, reason);
      }
      const list = await h.app.inject({ method: 'GET', url: '/v1/schedules', headers: auth('reader') });
      assert.deepEqual(list.json<{ items: unknown[] }>().items, []);
      assert.deepEqual(await schedulerIds(h.queue), []);
      assert.deepEqual(await h.queue.schedules.list(), []);
    });
  }

  void it('the recipe: every 30 minutes on every replica of checkout, keep 48', async () => {
    const res = await h.app.inject({
      method: 'POST',
      url: '/v1/schedules',
      headers: auth('runbook'),
      payload: { id: 'checkout-30m', selector: { service: 'checkout', env: 'prod' }, every: '30m', maxConcurrent: 1, retention: { keepLast: 48 } },
    });
    assert.equal(res.statusCode, 201, res.body);
    const v = res.json<{ matches: number; nextRunAt: string[]; retention: { keepLast: number }; state: string }>();
    assert.equal(v.matches, 2);
    assert.equal(v.retention.keepLast, 48);
    assert.equal(v.state, 'active');
    const runs = v.nextRunAt.map((t) => Date.parse(t));
    assert.deepEqual([runs[1]! - runs[0]!, runs[2]! - runs[1]!], [1_800_000, 1_800_000]);
    assert.deepEqual(await schedulerIds(h.queue), ['checkout-30m']);
    // The same id again: 409; PUT replaces it.
    const again = await h.app.inject({ method: 'POST', url: '/v1/schedules', headers: auth('runbook'), payload: { id: 'checkout-30m', target: 'checkout-1', every: '1h' } });
    assert.equal(again.statusCode, 409);
    assert.equal((await h.app.inject({ method: 'DELETE', url: '/v1/schedules/checkout-30m', headers: auth('runbook') })).statusCode, 204);
    assert.deepEqual(await schedulerIds(h.queue), []);
  });
});

void describe('schedules: who may change them', () => {
  let h: Harness;
  before(async () => {
    h = await startHarness({ redisUrl: redis.url, targets: TARGETS });
  });
  after(() => h?.close());

  void it('captures:write creates and changes its own; another writer gets 403; targets:admin changes any; readers only read', async () => {
    const body = { id: 'mine', target: 'checkout-1', cron: '0 3 * * *', timezone: 'Europe/Berlin' };
    assert.equal((await h.app.inject({ method: 'POST', url: '/v1/schedules', headers: auth('reader'), payload: body })).statusCode, 403);
    const created = await h.app.inject({ method: 'POST', url: '/v1/schedules', headers: auth('writer'), payload: body });
    assert.equal(created.statusCode, 201, created.body);
    const next = created.json<{ nextRunAt: string[] }>().nextRunAt[0]!;
    assert.match(next, /T0[12]:00:00\.000Z$/, '03:00 in Berlin is 01:00 or 02:00 UTC');
    for (const [method, url] of [
      ['POST', '/v1/schedules/mine/pause'],
      ['DELETE', '/v1/schedules/mine'],
      ['PUT', '/v1/schedules/mine'],
    ] as const) {
      const res = await h.app.inject({ method, url, headers: auth('runbook'), ...(method === 'PUT' ? { payload: body } : {}) });
      assert.equal(res.statusCode, 403, `${method} ${url}: ${res.body}`);
      assert.match(res.json<ErrorBody>().error.message, /belongs to "writer".*targets:admin/);
    }
    const paused = await h.app.inject({ method: 'POST', url: '/v1/schedules/mine/pause', headers: auth('writer') });
    assert.equal(paused.statusCode, 200);
    const resumed = await h.app.inject({ method: 'POST', url: '/v1/schedules/mine/resume', headers: auth('admin') });
    assert.equal(resumed.statusCode, 200);
    const replaced = await h.app.inject({ method: 'PUT', url: '/v1/schedules/mine', headers: auth('admin'), payload: { ...body, cron: '0 4 * * *' } });
    assert.equal(replaced.statusCode, 200, replaced.body);
    assert.equal(replaced.json<{ schedule: { owner: string; cron: string } }>().schedule.owner, 'writer', 'an admin edit keeps the owner');
    const read = await h.app.inject({ method: 'GET', url: '/v1/schedules/mine', headers: auth('reader') });
    assert.equal(read.json<{ schedule: { cron: string } }>().schedule.cron, '0 4 * * *');
    assert.equal((await h.app.inject({ method: 'GET', url: '/v1/schedules/nope', headers: auth('reader') })).statusCode, 404);
    assert.equal((await h.app.inject({ method: 'DELETE', url: '/v1/schedules/mine', headers: auth('admin') })).statusCode, 204);
    const actions = (await h.queue.audit.recent(50)).filter((a) => a.action.startsWith('schedule.')).map((a) => `${a.action} by ${a.who}`);
    assert.deepEqual(actions.reverse(), ['schedule.create by writer', 'schedule.pause by writer', 'schedule.resume by admin', 'schedule.update by admin', 'schedule.delete by admin']);
  });

  void it('pin and unpin: 404 for an unknown capture, audited, shown on the record', async () => {
    assert.equal((await h.app.inject({ method: 'POST', url: '/v1/captures/NOPE/pin', headers: auth('runbook') })).statusCode, 404);
    const { record } = await h.queue.requestCapture({ targetId: 'checkout-1', trigger: { kind: 'rest', who: 'runbook' } });
    assert.equal((await h.app.inject({ method: 'POST', url: `/v1/captures/${record.id}/pin`, headers: auth('reader') })).statusCode, 403);
    const pinned = await h.app.inject({ method: 'POST', url: `/v1/captures/${record.id}/pin`, headers: auth('runbook'), payload: { reason: 'incident 4711' } });
    assert.equal(pinned.statusCode, 200, pinned.body);
    assert.deepEqual(
      (({ by, reason }) => ({ by, reason }))(pinned.json<{ capture: { pinned: { by: string; reason: string } } }>().capture.pinned),
      { by: 'runbook', reason: 'incident 4711' },
    );
    const unpinned = await h.app.inject({ method: 'DELETE', url: `/v1/captures/${record.id}/pin`, headers: auth('runbook') });
    assert.equal(unpinned.json<{ capture: { pinned: unknown } }>().capture.pinned, null);
    const actions = (await h.queue.audit.recent(10)).filter((a) => a.captureId === record.id).map((a) => a.action);
    assert.deepEqual(actions, ['capture.unpin', 'capture.pin']);
  });
});
