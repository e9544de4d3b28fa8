/**
 * What `heapcap serve` refuses or explains on `/heapcap`: requests that are
 * not verifiably Slack's (401, nothing enqueued, audited), Slack users without
 * the scope (a polite refusal, nothing enqueued, audited), and whatever an
 * engineer types (unicode, spaces, URL-encoded text, nothing, 4,000
 * characters, typos): always a 200 with a sensible ephemeral reply.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { slackSign, slashCommandBody, waitFor } from '@heapcap/testkit';
import { ackedId, auditMark, RUNBOOK_TOKEN, SIGNING_SECRET, startSlackServe, USERS, type SlackAnswer, type SlackServe } from './slack-serve-harness.ts';

let h: SlackServe;

before(async () => {
  h = await startSlackServe();
});
after(async () => {
  await h?.close();
});

/** Records and jobs now (what "nothing enqueued" compares). */
async function enqueued(): Promise<{ records: number; jobs: number }> {
  const d = await h.queue.depth();
  return { records: Object.values(d.records).reduce((a, b) => a + b, 0), jobs: Object.values(d.jobs).reduce((a, b) => a + b, 0) };
}

void test('not verifiably from Slack → 401 with a reason, nothing enqueued, audited', async () => {
  const mark = await auditMark(h.queue);
  const before = await enqueued();
  const hook = h.slack.hook();
  const body = slashCommandBody({ text: 'capture demo "forged"', response_url: hook.url });
  const now = Math.floor(Date.now() / 1000);
  const cases: [string, string, Record<string, string>][] = [
    ['wrong signature', body, slackSign('not-the-signing-secret-000000', body, now)],
    ['missing headers', body, { 'content-type': 'application/x-www-form-urlencoded' }],
    ['timestamp 6 minutes old', body, slackSign(SIGNING_SECRET, body, now - 360)],
    ['body altered after signing', body.replace('forged', 'altered'), slackSign(SIGNING_SECRET, body, now)],
  ];
  const reasons: string[] = [];
  for (const [what, sent, headers] of cases) {
    const res = await h.post('/slack/commands', sent, headers);
    assert.equal(res.status, 401, `${what}: ${JSON.stringify(res.body)}`);
    assert.equal(res.body?.error?.code, 'unauthorized', what);
    reasons.push(String(res.body?.error?.details['reason']));
  }
  assert.deepEqual(reasons, ['bad_signature', 'missing_headers', 'stale_timestamp', 'bad_signature']);
  // The interactions endpoint is guarded the same way.
  const payload = new URLSearchParams({ payload: JSON.stringify({ type: 'block_actions' }) }).toString();
  assert.equal((await h.post('/slack/interactions', payload, slackSign('not-the-signing-secret-000000', payload))).status, 401);

  assert.deepEqual(await enqueued(), before, 'nothing enqueued');
  assert.equal(hook.posts().length, 0);
  // The first refusal of an address is audited at once; the next ones of the same minute are
  // counted into one summary entry at the minute's end (slack-flood.test.ts: a flood cannot empty the log).
  const audit = (await h.auditSince(mark)).filter((e) => e.action === 'slack.rejected');
  assert.deepEqual(audit.map((e) => [e.who, e.details?.['reason'], e.details?.['endpoint']]), [['slack:unverified', 'bad_signature', '/slack/commands']]);
  assert.ok(audit.every((e) => e.from === '127.0.0.1'), 'audited with the client address');
});

void test('a Slack user without captures:write → a polite refusal, nothing enqueued, audited with the Slack user and team', async () => {
  const mark = await auditMark(h.queue);
  const before = await enqueued();
  const reader = await h.command('capture demo "I only read"', { fields: { user_id: USERS.reader, user_name: 'reader' } });
  assert.equal(reader.status, 200);
  assert.equal(reader.body?.response_type, 'ephemeral');
  assert.match(reader.body?.text ?? '', new RegExp(`Sorry <@${USERS.reader}>, \`capture\` needs the \`captures:write\` scope.*your user is \`${USERS.reader}\` in team \`T0TEST\``, 's'));
  // Someone from another workspace has no grant at all, not even to read.
  const stranger = await h.command('list', { fields: { team_id: 'T0OTHER', user_id: 'U0STRANGER' } });
  assert.match(stranger.body?.text ?? '', /`list` needs the `captures:read` scope/);
  // But readers may read.
  const list = await h.command('targets', { fields: { user_id: USERS.reader } });
  assert.match(JSON.stringify(list.body), /`demo` node/);
  assert.deepEqual(await enqueued(), before, 'nothing enqueued');
  assert.equal(reader.hook.posts().length, 0);
  const denied = (await h.auditSince(mark)).filter((e) => e.action === 'slack.denied');
  assert.deepEqual(
    denied.map((e) => [e.who, e.targetId, e.details?.['command'], e.details?.['requiredScope'], e.details?.['slackUser'], e.details?.['slackTeam']]),
    [
      [`slack:T0TEST/${USERS.reader}`, 'demo', 'capture', 'captures:write', USERS.reader, 'T0TEST'],
      ['slack:T0OTHER/U0STRANGER', undefined, 'list', 'captures:read', 'U0STRANGER', 'T0OTHER'],
    ],
  );
});

/** A command that must answer 200 with an ephemeral reply; returns it. */
async function ok(text: string, rawText?: string): Promise<SlackAnswer & { text: string }> {
  const answer =
    rawText === undefined
      ? await h.command(text)
      : await (async () => {
          // The body exactly as given (hand-encoded), signed as is.
          const hook = h.slack.hook();
          const body = slashCommandBody({ response_url: hook.url }).replace('text=', `text=${rawText}`);
          return h.post('/slack/commands', body, slackSign(SIGNING_SECRET, body));
        })();
  assert.equal(answer.status, 200, `${text}: ${JSON.stringify(answer.body)}`);
  assert.equal(answer.body?.response_type, 'ephemeral', text);
  return { ...answer, text: answer.body?.text ?? '' };
}

/** Capture with `text` and return the record's reason once the capture has ended (one at a time: no coalescing). */
async function reasonOf(answer: SlackAnswer): Promise<string | undefined> {
  const record = await h.finished(ackedId(answer));
  return record.trigger.reason;
}

void test('what engineers type: every edge case gets a 200 and a sensible reply', async () => {
  assert.equal(await reasonOf(await ok('capture demo "deploy 🚀🔥 für Müller — 日本語 👩‍🚒"')), 'deploy 🚀🔥 für Müller — 日本語 👩‍🚒');
  assert.equal(await reasonOf(await ok('   capture     demo      p99    climbing   ')), 'p99 climbing');
  // Slack form-encodes the text; a user who types %20 or + means them literally.
  assert.equal(await reasonOf(await ok('(url-encoded)', encodeURIComponent('capture demo 100%+ a%20b & c=d'))), '100%+ a%20b & c=d');
  // Slack's own escapes and mentions become what the user saw; nothing can ping @channel.
  assert.equal(await reasonOf(await ok('capture demo &lt;urgent&gt; <!channel> ask <@U0LEAD|lead>')), '<urgent> @channel ask @lead');

  const cut = await ok(`capture demo ${'Ω'.repeat(3_995)} 🚀🚀🚀🚀`);
  assert.match(cut.text, /Capture `[0-9A-Z]{26}` of `demo` is queued/);
  assert.match(JSON.stringify(cut.body?.blocks), /Your reason had 4,000 characters; the record keeps the first 965 and says it was truncated/);
  const kept = await reasonOf(cut);
  assert.equal(kept, `${'Ω'.repeat(965)}… [truncated from 4,000 characters]`);

  const help = await ok('');
  assert.match(JSON.stringify(help.body), /\/heapcap capture <target> \[reason\]/);
  assert.match(JSON.stringify((await ok('help')).body), /\/heapcap status <captureId>/);
  const unknown = await ok('snapshot-plz demo');
  assert.match(unknown.text, /I don't know `snapshot-plz`\.\nTargets you may capture: `demo`/);
  assert.match((await ok('demo')).text, /Did you mean `\/heapcap capture demo`\?/);
  assert.match((await ok('capture demoo')).text, /There is no target `demoo`\. Did you mean `demo`\?\nTargets you may capture: `demo`/);
  assert.match((await ok('capture')).text, /`\/heapcap capture <target> \[reason\]`: which target\?/);
  assert.match((await ok('capture ../etc/passwd')).text, /is not a target id/);
  assert.match((await ok('status 01J7ZHH716228KMD1V49A92AEZ')).text, /There is no capture `01J7ZHH716228KMD1V49A92AEZ`/);
  assert.match((await ok('status')).text, /which capture\?/);
  assert.match((await ok('list')).text, /^Last \d+ captures\n• `[0-9A-Z]{26}` `demo` succeeded/);
  assert.match((await ok('list nosuch')).text, /There is no target `nosuch`/);
  assert.match(JSON.stringify((await ok('targets')).body), /`demo` node · service=demo/);
  assert.match((await ok('schedules demo')).text, /^No schedules of `demo`\./);
  assert.match((await ok('schedules nosuch')).text, /There is no target `nosuch`/);
  // A yearly cron: it never runs during the test (its captures would join the ones asserted below).
  const created = await fetch(`${h.serve.url}/v1/schedules`, {
    method: 'POST',
    headers: { authorization: `Bearer ${RUNBOOK_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ id: 'demo-yearly', target: 'demo', cron: '0 0 1 1 *', retention: { keepLast: 5 } }),
  });
  assert.equal(created.status, 201, await created.text());
  assert.match((await ok('schedules')).text, /^Schedules \(1\)\n• `demo-yearly` `demo`, cron `0 0 1 1 \*` · next in [\d.]+ h · keep 5 · no capture yet$/);
  assert.match((await ok('schedules demo')).text, /^Schedules of demo \(1\)\n• `demo-yearly`/);
  const [head, base] = (await h.queue.listCaptures({ targetId: 'demo', status: 'succeeded', limit: 2 })).items;
  assert.ok(head !== undefined && base !== undefined);
  const diff = await ok(`diff ${base.id} ${head.id.toLowerCase()}`);
  assert.match(diff.text, new RegExp(`^What grew in demo: \`${base.id}\` \\(.+\\) → \`${head.id}\` \\(.+\\), heap [+−][\\d.]+ MiB, [+−][\\d,]+ objects\n`));
  assert.match(JSON.stringify(diff.body?.blocks), /Self sizes; for retained sizes analyse both captures/);
  // Neither capture is analysed: the suspects come first, marked summary-only, saying what to ask for.
  assert.match(JSON.stringify(diff.body?.blocks), new RegExp(`\\*Suspects \\(summary-only, no holders\\)\\*: summary-only \\(no holders\\): base ${base.id} has no analysis \\(POST /v1/captures/${base.id}/analysis\\)`));
  assert.match((await ok('diff 01J7ZHH716228KMD1V49A92AEZ 01J7ZHH716228KMD1V49A92AF0')).text, /There is no capture `01J7ZHH716228KMD1V49A92AEZ` or `01J7ZHH716228KMD1V49A92AF0`/);
  // Captures of two targets: the API's force=true does not exist in Slack, so the reply says what to do instead.
  const other = (await h.queue.requestCapture({ targetId: 'gone', trigger: { kind: 'rest', who: 'slack-test' } })).record;
  assert.match((await ok(`diff ${head.id} ${other.id}`)).text, /Cannot compare `[0-9A-Z]{26}` and `[0-9A-Z]{26}`: they are captures of two targets \(`demo` and `gone`\); compare two captures of one target \(`\/heapcap list gone`\)/);
  // A leak hunt from Slack: started through the API's path (audited), followed with `hunt <id>`, suspects first.
  // --no-allocations reaches the record (the worker reads it there) and the reply says tracking is off.
  const started = await ok('hunt demo 1s --no-allocations');
  assert.match(started.text, /^:mag: Leak hunt `([0-9A-Z]{26})` of `demo` started: three snapshots 1 s apart.* Allocation tracking is off/);
  const huntId = /`([0-9A-Z]{26})`/.exec(started.text)?.[1] ?? '';
  const ended = await waitFor(async () => {
    const hunt = await h.queue.leakHunts.get(huntId);
    return hunt?.status === 'succeeded' || hunt?.status === 'failed' ? hunt : undefined;
  }, { timeoutMs: 120_000, intervalMs: 200, what: 'the Slack hunt to end' });
  assert.equal(ended.status, 'succeeded', JSON.stringify(ended.error));
  assert.equal(ended.requestedBy.startsWith('slack:'), true, ended.requestedBy);
  assert.equal(ended.allocations, false);
  const shown = await ok(`hunt ${huntId.toLowerCase()}`);
  assert.match(shown.text, /^Leak hunt of demo: /);
  assert.match(JSON.stringify(shown.body?.blocks), /\*Suspects\*, largest surviving new memory first:[\s\S]*\*Classes\*, largest surviving self size first:/);
  assert.match((await ok('hunt 01J7ZHH716228KMD1V49A92AEZ')).text, /There is no leak hunt `01J7ZHH716228KMD1V49A92AEZ`/);
  assert.match((await ok('hunt nosuch')).text, /There is no target `nosuch`/);
  const last = (await h.queue.listCaptures({ targetId: 'demo', limit: 1 })).items[0]!;
  const status = await ok(`status ${last.id.toLowerCase()}`);
  assert.match(JSON.stringify(status.body), /demo: heap snapshot succeeded/);
  assert.match(JSON.stringify(status.body), /Download the snapshot/);  // Two allocation sampling profiles: compared by allocation site, the top grown site in the text.
  const sampled: string[] = [];
  for (let i = 0; i < 2; i++) {
    const res = await fetch(`${h.serve.url}/v1/captures?wait=60`, {
      method: 'POST',
      headers: { authorization: `Bearer ${RUNBOOK_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ target: 'demo', options: { kind: 'sampling', samplingSeconds: 1, samplingIntervalBytes: 1024 } }),
    });
    const body = (await res.json()) as { capture: { id: string; status: string } };
    assert.equal(body.capture.status, 'succeeded', JSON.stringify(body));
    sampled.push(body.capture.id);
  }
  const profiles = await ok(`diff ${sampled[0]!} ${sampled[1]!}`);
  assert.match(profiles.text, new RegExp(`^Where demo's live allocations grew: \`${sampled[0]!}\` \\(.+\\) → \`${sampled[1]!}\` \\(.+\\), sampled live bytes [+−][\\d.]+ MiB\n`));
  assert.match(JSON.stringify(profiles.body?.blocks), /\*Allocation sites\*, largest growth first:/);
});
