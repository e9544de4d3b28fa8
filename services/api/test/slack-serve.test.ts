/**
 * `/heapcap` against a running `heapcap serve` (the bundled bin/heapcap), real
 * Redis and a real Node target, with a loopback stand-in for Slack: a signed
 * command is acknowledged within Slack's 3 s, the capture runs, its result
 * reaches the channel exactly once with timings and a download link that
 * works with the configured token; posts are retried within Slack's limits,
 * fall back to chat.postMessage, and an undeliverable reply never fails the
 * capture; "Capture again" starts a new capture. No secret reaches the logs.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, test } from 'node:test';
import { assertSnapshotShape, waitFor, type HeapSnapshotJson, type StandInHook } from '@heapcap/testkit';
import { ackedId, BOT_TOKEN, RUNBOOK_TOKEN, SIGNING_SECRET, startSlackServe, USERS, type SlackServe } from './slack-serve-harness.ts';

let h: SlackServe;
/** The first result message (test 1), whose button test 4 clicks. */
let firstResult: { captureId: string; blocks: unknown[] } | undefined;
const hooks: StandInHook[] = [];

before(async () => {
  h = await startSlackServe();
  // Channel CNOBOT is one the bot is not in: chat.postMessage is refused there.
  h.slack.answer('chat.postMessage', (fields) => ({ body: fields['channel'] === 'CNOBOT' ? { ok: false, error: 'channel_not_found' } : { ok: true, ts: '1.2' } }));
});
after(async () => {
  await h?.close();
});

/** Waits for serve's "delivered" log line of a capture (after it, no further post for that reply is made). */
function delivered(captureId: string): Promise<Record<string, unknown>> {
  return waitFor(() => h.logLines().find((l) => l['captureId'] === captureId && l['msg'] === 'slack reply delivered'), { timeoutMs: 60_000, what: `the reply of ${captureId} to be delivered` });
}

/** The download link in a result message (Slack-escaped `&` undone). */
function downloadLink(blocks: unknown[]): string {
  const url = /<([^|>]+)\|Download the snapshot>/.exec(JSON.stringify(blocks))?.[1];
  assert.ok(url !== undefined, `no download link in ${JSON.stringify(blocks).slice(0, 500)}`);
  return url.replace(/&amp;/g, '&');
}

void test('a signed /heapcap capture demo "test 🚀": ack < 3 s, one in-channel result with timings and a link that downloads the snapshot', async () => {
  const answer = await h.command('capture demo "test 🚀"');
  hooks.push(answer.hook);
  assert.equal(answer.status, 200, JSON.stringify(answer.body));
  assert.ok(answer.ms < 3_000, `acknowledged in ${answer.ms.toFixed(0)} ms`);
  assert.equal(answer.body?.response_type, 'ephemeral');
  assert.match(answer.body?.text ?? '', /Capture `[0-9A-Z]{26}` of `demo` is queued\.\nThe result will be posted in this channel when it ends\./);
  const id = ackedId(answer);

  const record = await h.finished(id);
  assert.equal(record.status, 'succeeded', JSON.stringify(record.error));
  assert.deepEqual(record.trigger, { kind: 'slack', who: `slack:T0TEST/${USERS.oncall}`, reason: 'test 🚀' });
  const [post] = await answer.hook.waitFor(1);
  await delivered(id);
  assert.equal(answer.hook.posts().length, 1, 'exactly one message reached the channel');
  const message = post!.body as { response_type: string; text: string; blocks: unknown[] };
  assert.equal(message.response_type, 'in_channel');
  const json = JSON.stringify(message.blocks);
  assert.match(json, /demo: heap snapshot succeeded/);
  assert.match(json, new RegExp(`<@${USERS.oncall}>`));
  assert.match(json, /\*Why:\* test 🚀/);
  assert.match(json, /\*Phase timings\*\\n```queued .*\\nconnect .*generate .*serialize .*total +[\d.]+ m?s```/);
  assert.match(json, /\*Snapshot\*\\n[\d.]+ MiB/);
  firstResult = { captureId: id, blocks: message.blocks };

  const link = downloadLink(message.blocks);
  assert.equal(link, `${h.serve.url}/v1/captures/${id}/artifact`);
  const refused = await fetch(link);
  assert.equal(refused.status, 401, 'the link needs the configured auth');
  await refused.body?.cancel();
  const res = await fetch(link, { headers: { authorization: `Bearer ${RUNBOOK_TOKEN}` } });
  assert.equal(res.status, 200);
  const bytes = Buffer.from(await res.arrayBuffer());
  assert.equal(createHash('sha256').update(bytes).digest('hex'), record.artifact?.sha256);
  assertSnapshotShape(JSON.parse(bytes.toString('utf8')) as HeapSnapshotJson);

  const trigger = (await h.queue.audit.recent(50)).find((e) => e.action === 'capture.trigger' && e.captureId === id);
  assert.equal(trigger?.who, `slack:T0TEST/${USERS.oncall}`);
  assert.deepEqual({ ...trigger?.details, reason: undefined }, { outcome: 'created', via: 'slack', slackTeam: 'T0TEST', slackUser: USERS.oncall, slackUserName: 'oncall', slackChannel: 'C0INCIDENT', reason: undefined });
});

void test('a failed capture is reported in the channel with its code, its phase and what to check', async () => {
  const answer = await h.command('capture gone is it even up?', { fields: { channel_id: 'C0FAIL' } });
  const id = ackedId(answer);
  const record = await h.finished(id);
  assert.equal(record.status, 'failed');
  const [post] = await answer.hook.waitFor(1);
  const json = JSON.stringify(post!.body);
  assert.match(json, /:x: gone: heap snapshot failed/);
  assert.match(json, /\*Error\* `target_unreachable` in phase `connect`/);
  const texts = (post!.body['blocks'] as { text?: { text: string } }[]).map((b) => b.text?.text ?? '');
  assert.ok(record.error?.hint !== undefined, 'target_unreachable carries a hint');
  assert.ok(texts.includes(`*What to check:* ${record.error.hint.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;')}`), texts.join('\n'));
  assert.doesNotMatch(json, /Download the snapshot/);
  assert.match(json, /"action_id":"heapcap_capture_again","value":"gone"/);
});

void test('response_url answering 500 twice, then 200: delivered once', async () => {
  const hook = h.slack.hook([500, 500]);
  hooks.push(hook);
  const answer = await h.command('capture demo retry test', { hook, fields: { channel_id: 'C0RETRY' } });
  const id = ackedId(answer);
  await h.finished(id);
  await hook.waitFor(1);
  await delivered(id);
  assert.deepEqual(hook.posts().map((p) => p.status), [500, 500, 200]);
  assert.match(JSON.stringify(hook.delivered()[0]?.body), new RegExp(id));
});

void test('response_url answering 500 always: 5 posts at most, the capture still succeeds, the failure is logged with the capture id', async () => {
  // CNOBOT: the bot's chat.postMessage fallback is refused too, so nothing can deliver it.
  const lost = h.slack.hook('always-500');
  // CBOT: the bot can post there: the result arrives through chat.postMessage instead.
  const rescued = h.slack.hook('always-500');
  hooks.push(lost, rescued);
  const a = await h.command('capture demo nobody hears this', { hook: lost, fields: { channel_id: 'CNOBOT' } });
  const b = await h.command('capture demo the bot posts this', { hook: rescued, fields: { channel_id: 'CBOT' } });
  const lostId = ackedId(a);
  const rescuedId = ackedId(b);
  assert.equal((await h.finished(lostId)).status, 'succeeded');
  assert.equal((await h.finished(rescuedId)).status, 'succeeded');

  const failure = await waitFor(() => h.logLines().find((l) => l['captureId'] === lostId && l['level'] === 50), { timeoutMs: 60_000, what: 'the undeliverable log line' });
  assert.match(String(failure['msg']), /^slack reply undeliverable: the response_url took its 5 posts; chat\.postMessage: Slack answered channel_not_found/);
  assert.equal(lost.posts().length, 5, "Slack's 5 posts per response_url, never a sixth");
  assert.equal((await h.queue.getCapture(lostId))?.status, 'succeeded');

  await waitFor(() => h.logLines().find((l) => l['captureId'] === rescuedId && l['via'] === 'chat.postMessage'), { timeoutMs: 60_000, what: 'the bot fallback' });
  assert.equal(rescued.posts().length, 5);
  const call = h.slack.calls('chat.postMessage').find((c) => c.body['channel'] === 'CBOT');
  assert.equal(call?.headers.authorization, `Bearer ${BOT_TOKEN}`);
  assert.match(JSON.stringify(call?.body['blocks']), new RegExp(`heap snapshot succeeded`));
});

void test('"Capture again", correctly signed: a new capture of the same target, acknowledged and reported to the button\'s response_url', async () => {
  assert.ok(firstResult !== undefined, 'needs the first test');
  const actions = (firstResult.blocks as { type: string; block_id?: string; elements?: { action_id: string; value: string }[] }[]).find((b) => b.type === 'actions');
  const button = actions?.elements?.[0];
  assert.ok(actions?.block_id !== undefined && button !== undefined);
  const hook = h.slack.hook();
  hooks.push(hook);
  const payload = {
    type: 'block_actions',
    team: { id: 'T0TEST', domain: 'heapcap-test' },
    user: { id: USERS.oncall, username: 'oncall', team_id: 'T0TEST' },
    api_app_id: 'A0HEAPCAP',
    container: { type: 'message', channel_id: 'C0INCIDENT', is_ephemeral: false },
    channel: { id: 'C0INCIDENT', name: 'incident-4711' },
    trigger_id: `${Date.now()}.again`,
    response_url: hook.url,
    actions: [{ type: 'button', action_id: button.action_id, block_id: actions.block_id, value: button.value, action_ts: String(Date.now() / 1000) }],
  };
  const answer = await h.interaction(payload);
  assert.equal(answer.status, 200);
  assert.equal(answer.body, null);
  const [ack] = await hook.waitFor(1);
  const ackBody = ack!.body as { response_type: string; text: string };
  assert.equal(ackBody.response_type, 'ephemeral');
  const id = /Capture `([0-9A-Z]{26})` of `demo`/.exec(ackBody.text)?.[1];
  assert.ok(id !== undefined && id !== firstResult.captureId, ackBody.text);
  const record = await h.finished(id);
  assert.equal(record.targetId, 'demo');
  assert.deepEqual(record.trigger, { kind: 'slack', who: `slack:T0TEST/${USERS.oncall}`, reason: `Capture again (after ${firstResult.captureId})` });
  const [, result] = await hook.waitFor(2);
  assert.equal((result!.body as { response_type: string }).response_type, 'in_channel');
  assert.match(JSON.stringify(result!.body), new RegExp(id));

  // A reader clicking the same button is refused; nothing starts.
  const refusedHook = h.slack.hook();
  hooks.push(refusedHook);
  const before = (await h.queue.listCaptures({ limit: 100 })).items.length;
  const refused = await h.interaction({ ...payload, user: { id: USERS.reader, username: 'reader', team_id: 'T0TEST' }, response_url: refusedHook.url, trigger_id: `${Date.now()}.reader` });
  assert.equal(refused.status, 200);
  const [refusal] = await refusedHook.waitFor(1);
  assert.match(String((refusal!.body as { text: string }).text), /needs the `captures:write` scope/);
  assert.equal((await h.queue.listCaptures({ limit: 100 })).items.length, before);
});

void test('SIGTERM: serve with Slack on stops cleanly (the Slack delivery hands back its waiting replies)', async () => {
  // A reply waiting for a capture that has not ended yet: the delivery must not hold shutdown for it.
  const answer = await h.command('capture gone waiting at shutdown', { fields: { channel_id: 'C0STOP' } });
  assert.equal(answer.status, 200);
  const t0 = performance.now();
  assert.equal(await h.serve.stop('SIGTERM'), 0);
  assert.ok(performance.now() - t0 < 40_000, `stopped in ${(performance.now() - t0).toFixed(0)} ms`);
  assert.match(h.allOutput(), /"msg":"stopped"/);
});

void test('no secret reached the logs of the whole run, shutdown included: signing secret, bot token, response_url capabilities', () => {
  const out = h.allOutput();
  assert.ok(h.logLines().length > 50, 'serve logged (at debug level)');
  assert.ok(!out.includes(SIGNING_SECRET), 'signing secret in the logs');
  assert.ok(!out.includes(BOT_TOKEN), 'bot token in the logs');
  assert.ok(!out.includes(RUNBOOK_TOKEN), 'bearer token in the logs');
  assert.ok(hooks.length >= 5);
  for (const hook of hooks) {
    const capability = hook.url.split('/').pop()!;
    assert.ok(!out.includes(capability), `response_url ${hook.url} in the logs`);
  }
});
