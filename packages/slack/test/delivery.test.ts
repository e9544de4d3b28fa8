/**
 * SlackDelivery on a real Redis, with a loopback stand-in for Slack: results
 * reach the response_url once, retries respect Slack's 5 posts per URL,
 * past the window (or a refused URL) they go through chat.postMessage with the
 * bot token, a reply waits out a restart of the delivery, and what cannot be
 * delivered is logged with its capture id. Records are moved by the queue's
 * own worker-side transitions (no target needed to end a capture).
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { pino } from 'pino';
import type { HeapcapQueue } from '@heapcap/state';
import { createTestWorld, jsonLogSink, startRedis, startSlackStandIn, waitFor, type JsonLogSink, type RedisServer, type SlackStandIn, type TestWorld } from '@heapcap/testkit';
import { SlackDelivery, SlackReplies, SlackWebApi, type DeliveryTuning, type SlackReplyJob } from '../src/index.ts';

let redis: RedisServer;
let slack: SlackStandIn;
let world: TestWorld;

before(async () => {
  redis = await startRedis();
  slack = await startSlackStandIn();
  world = await createTestWorld(redis.url, { targets: [{ id: 'demo', kind: 'node', inspect: '127.0.0.1:9', labels: { service: 'demo' } }] });
});
after(async () => {
  await world?.cleanup();
  await slack?.close();
  await redis?.stop();
});

const BOT = 'xoxb-test-0000-bot-token';

/** A delivery with a log sink; closed by the test. */
function delivery(queue: HeapcapQueue, options: { bot?: boolean; tuning?: Partial<DeliveryTuning>; origins?: string[] } = {}): { d: SlackDelivery; logs: JsonLogSink } {
  const logs = jsonLogSink();
  const log = pino({ level: 'debug' }, logs.stream);
  const web = options.bot === true ? new SlackWebApi({ token: BOT, apiUrl: slack.apiUrl, log }) : undefined;
  const d = new SlackDelivery({ queue, store: world.store, links: { publicUrl: 'http://heapcap.test', mode: 'api', ttlSeconds: 900 }, responseOrigins: options.origins ?? [slack.origin], web, log, tuning: options.tuning });
  return { d, logs };
}

/** A queued capture of `demo` and a reply job for it (channel `channel`). */
async function askedCapture(replies: SlackReplies, responseUrl: string, channel: string, issuedAtMs = Date.now()): Promise<string> {
  const { record } = await world.queue.requestCapture({ targetId: 'demo', trigger: { kind: 'slack', who: 'slack:T0TEST/U0ONCALL', reason: 'delivery test' }, force: true });
  const job: SlackReplyJob = { captureId: record.id, responseUrl, issuedAtMs, channelId: channel, teamId: 'T0TEST', userId: 'U0ONCALL' };
  assert.equal(await replies.arrange(job), true);
  return record.id;
}

/** End a capture as a worker would (running → succeeded). */
async function succeed(id: string): Promise<void> {
  const started = await world.queue.attempts.start(id, 'demo');
  assert.ok(started.ok);
  const artifact = { key: `demo/${id}.heapsnapshot.gz`, manifestKey: `demo/${id}.manifest.json`, location: '/x', bytesUncompressed: 5_000_000, bytesStored: 600_000, sha256: 'ab', gzip: true };
  assert.ok((await world.queue.attempts.succeed(id, 'demo', started.attempts, { connect: 5, generate: 100, serialize: 200, total: 320 }, artifact)).ok);
}

const errorsFor = (logs: JsonLogSink, id: string): Record<string, unknown>[] => logs.lines().filter((l) => l['captureId'] === id && l['level'] === 50);

void test('500, 500, 200: delivered once, in channel; a second reply for the same channel is not arranged', async () => {
  const replies = new SlackReplies(world.queue, { attempts: 8, baseDelayMs: 50 });
  const { d, logs } = delivery(world.queue);
  await d.start();
  try {
    const hook = slack.hook([500, 500]);
    const id = await askedCapture(replies, hook.url, 'C1');
    assert.equal(await replies.arrange({ captureId: id, responseUrl: slack.hook().url, issuedAtMs: Date.now(), channelId: 'C1', teamId: 'T0TEST', userId: 'U2' }), false);
    await succeed(id);
    const [post] = await hook.waitFor(1);
    assert.equal(post?.body['response_type'], 'in_channel');
    assert.match(JSON.stringify(post?.body), /demo: heap snapshot succeeded/);
    assert.match(JSON.stringify(post?.body), /http:\/\/heapcap\.test\/v1\/captures\/[0-9A-Z]+\/artifact/);
    await waitFor(() => logs.lines().some((l) => l['captureId'] === id && l['msg'] === 'slack reply delivered'), { timeoutMs: 10_000, what: 'delivered log line' });
    assert.deepEqual(hook.posts().map((p) => p.status), [500, 500, 200]);
  } finally {
    await d.close();
    await replies.close();
  }
});

void test('500 for ever, no bot token: 5 posts and no more, logged as undeliverable with the capture id', async () => {
  const replies = new SlackReplies(world.queue, { attempts: 8, baseDelayMs: 20 });
  const { d, logs } = delivery(world.queue);
  await d.start();
  try {
    const hook = slack.hook('always-500');
    const id = await askedCapture(replies, hook.url, 'C2');
    await succeed(id);
    const [line] = await waitFor(() => (errorsFor(logs, id).length > 0 ? errorsFor(logs, id) : undefined), { timeoutMs: 30_000, what: 'undeliverable log line' });
    assert.match(String(line?.['msg']), /slack reply undeliverable: the response_url took its 5 posts, and no bot token \(HEAPCAP_SLACK_BOT_TOKEN\)/);
    assert.equal(hook.posts().length, 5);
    assert.equal((await world.queue.getCapture(id))?.status, 'succeeded');
    assert.doesNotMatch(logs.text().join('\n'), new RegExp(hook.url.split('/').pop()!));
  } finally {
    await d.close();
    await replies.close();
  }
});

void test('past the response_url window, or after Slack refused the URL: chat.postMessage with the bot token', async () => {
  const replies = new SlackReplies(world.queue, { attempts: 8, baseDelayMs: 20 });
  const { d, logs } = delivery(world.queue, { bot: true });
  await d.start();
  try {
    const late = slack.hook();
    const lateId = await askedCapture(replies, late.url, 'CLATE', Date.now() - 31 * 60_000);
    const expired = slack.hook([404]);
    const expiredId = await askedCapture(replies, expired.url, 'CEXPIRED');
    await succeed(lateId);
    await succeed(expiredId);
    const posted = await waitFor(() => (slack.calls('chat.postMessage').length >= 2 ? slack.calls('chat.postMessage') : undefined), { timeoutMs: 30_000, what: 'two chat.postMessage calls' });
    const byChannel = new Map(posted.map((c) => [c.body['channel'], c]));
    assert.equal(byChannel.get('CLATE')?.headers.authorization, `Bearer ${BOT}`);
    assert.match(JSON.stringify(byChannel.get('CLATE')?.body['blocks']), new RegExp(lateId));
    assert.match(JSON.stringify(byChannel.get('CEXPIRED')?.body['blocks']), new RegExp(expiredId));
    assert.equal(late.posts().length, 0, 'nothing is posted to a response_url past its window');
    assert.deepEqual(expired.posts().map((p) => p.status), [404]);
    assert.ok(!logs.text().join('\n').includes(BOT), 'the bot token is never logged');
  } finally {
    await d.close();
    await replies.close();
  }
});

void test('a reply waits for its capture across a restart of the delivery, and is posted once', async () => {
  const replies = new SlackReplies(world.queue, { attempts: 8, baseDelayMs: 20 });
  const hook = slack.hook();
  const id = await askedCapture(replies, hook.url, 'CRESTART');
  const first = delivery(world.queue, { tuning: { waitSliceMs: 60_000 } });
  await first.d.start();
  // The job is taken and waiting for the capture; closing hands it back promptly.
  await waitFor(async () => (await replies.counts())['active'] === 1, { timeoutMs: 10_000, what: 'the reply job to be active' });
  const t0 = performance.now();
  await first.d.close();
  assert.ok(performance.now() - t0 < 10_000, 'close does not wait for the capture');
  const second = delivery(world.queue);
  await second.d.start();
  try {
    await succeed(id);
    await hook.waitFor(1);
    await waitFor(() => second.logs.lines().some((l) => l['captureId'] === id && l['msg'] === 'slack reply delivered'), { timeoutMs: 10_000, what: 'delivered' });
    assert.equal(hook.posts().length, 1);
  } finally {
    await second.d.close();
    await replies.close();
  }
});

void test('defect 5: a response_url outside HEAPCAP_SLACK_RESPONSE_HOSTS is never posted to; the reply goes through chat.postMessage', async () => {
  const replies = new SlackReplies(world.queue, { attempts: 8, baseDelayMs: 20 });
  // The stand-in's hooks stand for any address a forged or replayed job could name (loopback, Redis, 169.254.169.254).
  const { d, logs } = delivery(world.queue, { bot: true, origins: ['https://hooks.slack.com'] });
  await d.start();
  try {
    const elsewhere = slack.hook();
    const id = await askedCapture(replies, elsewhere.url, 'CELSEWHERE');
    await succeed(id);
    const posted = await waitFor(() => slack.calls('chat.postMessage').find((c) => c.body['channel'] === 'CELSEWHERE'), { timeoutMs: 30_000, what: 'chat.postMessage to CELSEWHERE' });
    assert.match(JSON.stringify(posted.body['blocks']), new RegExp(id));
    assert.equal(elsewhere.posts().length, 0, 'nothing is posted to a response_url outside the allowed hosts');
    const line = logs.lines().find((l) => l['captureId'] === id && l['msg'] === 'slack reply delivered');
    assert.match(String(line?.['because']), /the response_url's origin http:\/\/127\.0\.0\.1:\d+ is not one of HEAPCAP_SLACK_RESPONSE_HOSTS \(https:\/\/hooks\.slack\.com\)/);
    assert.doesNotMatch(logs.text().join('\n'), new RegExp(elsewhere.url.split('/').pop()!), 'the URL path is never logged');
  } finally {
    await d.close();
    await replies.close();
  }
});
