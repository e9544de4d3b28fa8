/**
 * Issue 25, defect 1: unsigned requests must not erase the audit log. Before
 * the fix every refused Slack request was one `slack.rejected` entry, so
 * 105,000 of them pushed every real entry out of the capped stream. Here the
 * stream is capped at ~300 entries and 100,000 unsigned requests arrive (98,000
 * from one address, 2,000 from 500 others): the refusals add at most
 * 2 × 10 + 1 entries per minute whatever their number, so the earlier entries
 * stay where they were.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { pino } from 'pino';
import { parseConfig } from '@heapcap/config';
import { SlackReplies } from '@heapcap/slack';
import { createTestWorld, slackSign, slashCommandBody, startRedis, type RedisServer, type TestWorld } from '@heapcap/testkit';
import { buildApp, type ApiInstance } from '../src/index.ts';
import { SlackAuthorizer } from '../src/auth/slack-auth.ts';
import { parseSlackUsers } from '../src/auth/slack-users.ts';

const SECRET = 'flood-test-signing-secret-0123456';
const AUDIT_CAP = 300;
const FROM_ONE = 98_000;
const SPREAD_SOURCES = 500;
const PER_SPREAD_SOURCE = 4;

let redis: RedisServer;
let world: TestWorld;

before(async () => {
  redis = await startRedis();
  world = await createTestWorld(redis.url, { queue: { auditMaxLen: AUDIT_CAP } });
});
after(async () => {
  await world?.cleanup();
  await redis?.stop();
});

async function slackApp(): Promise<ApiInstance> {
  const replies = new SlackReplies(world.queue, { attempts: 1, baseDelayMs: 50 });
  world.onCleanup(() => replies.close());
  const a = await buildApp({
    config: parseConfig({}),
    queue: world.queue,
    sink: world.store,
    auth: { kind: 'dev' },
    logger: pino({ level: 'silent' }),
    slack: {
      signingSecret: SECRET,
      authorizer: new SlackAuthorizer(parseSlackUsers('grants:\n  - { name: nobody, team: T0TEST, users: [U0NOBODY], scopes: [captures:read] }\n'), async () => []),
      replies,
      links: { publicUrl: 'http://heapcap.test', mode: 'api', ttlSeconds: 900 },
      responseOrigins: ['https://hooks.slack.com'],
    },
  });
  await a.ready();
  return a;
}

void test('defect 1: unsigned Slack flood keeps the audit log', async () => {
  const app = await slackApp();
  let closed = false;
  world.onCleanup(async () => {
    if (!closed) await app.close();
  });
  // Real entries first: registry changes through the API (audited), then more than the cap would hold of a flood.
  for (let i = 0; i < 20; i++) {
    const res = await app.inject({ method: 'PUT', url: `/v1/targets/real-${i}`, headers: { 'content-type': 'application/json' }, payload: { id: `real-${i}`, kind: 'node', inspect: '127.0.0.1:9' } });
    assert.equal(res.statusCode < 300, true, res.body);
  }
  const earlier = (await world.queue.audit.recent(1_000)).filter((e) => e.action === 'target.put').map((e) => e.id);
  assert.equal(earlier.length, 20);

  const body = slashCommandBody({ text: 'capture real-0 "forged"', response_url: 'http://127.0.0.1:9/x' });
  const forged = slackSign('not-the-signing-secret-000000', body);
  const statuses = new Map<number, number>();
  const send = async (remoteAddress: string): Promise<void> => {
    const res = await app.inject({ method: 'POST', url: '/slack/commands', headers: forged, payload: body, remoteAddress });
    statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1);
  };
  const batch = 200;
  for (let i = 0; i < FROM_ONE; i += batch) await Promise.all(Array.from({ length: batch }, () => send('203.0.113.7')));
  const spread = Array.from({ length: SPREAD_SOURCES * PER_SPREAD_SOURCE }, (_, i) => `10.1.${Math.floor((i % SPREAD_SOURCES) / 250)}.${(i % SPREAD_SOURCES) % 250}`);
  for (let i = 0; i < spread.length; i += batch) await Promise.all(spread.slice(i, i + batch).map(send));

  // The window's summaries are written at close (or when the minute ends).
  await app.close();
  closed = true;
  assert.equal([...statuses.values()].reduce((a, b) => a + b, 0), 100_000, 'the whole flood was answered');
  const after = await world.queue.audit.recent(10_000);
  const ids = new Set(after.map((e) => e.id));
  assert.deepEqual(earlier.filter((id) => !ids.has(id)), [], 'every earlier audit entry is still there');
  // The flooding address is refused before its body is read once it spent its 30 failures
  // (give or take the first concurrent batch, whose requests were all checked before any failed).
  const flooder401 = (statuses.get(401) ?? 0) - SPREAD_SOURCES * PER_SPREAD_SOURCE;
  assert.ok(flooder401 >= 30 && flooder401 <= 30 + batch, JSON.stringify([...statuses]));
  assert.equal(statuses.get(429), FROM_ONE - flooder401);

  const rejected = after.filter((e) => e.action === 'slack.rejected');
  assert.ok(rejected.length <= 2 * 10 + 1, `${rejected.length} slack.rejected entries`);
  // Nothing is lost from the count: first entries plus the summaries' repeats add up to every refusal.
  const counted = rejected.reduce((n, e) => n + (typeof e.details?.['repeated'] === 'number' ? e.details['repeated'] : 1), 0);
  assert.equal(counted, FROM_ONE + SPREAD_SOURCES * PER_SPREAD_SOURCE);
  const flooder = rejected.filter((e) => e.from === '203.0.113.7');
  assert.deepEqual(flooder.map((e) => e.details?.['reason'] ?? e.details?.['reasons']), [{ bad_signature: flooder401 - 1, rate_limited: FROM_ONE - flooder401 }, 'bad_signature']);
  assert.ok(rejected.some((e) => e.details?.['otherSources'] === true), 'sources past the tenth share one summary');
});
