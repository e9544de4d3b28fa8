/** Every message heapcap sends fits Slack's Block Kit limits, at the worst inputs it can meet, and says what an engineer needs. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { CaptureRecord, RegisteredTarget } from '@heapcap/state';
import {
  captureAckMessage,
  captureMessage,
  checkMessage,
  deliverable,
  diffMessage,
  huntMessage,
  huntStartedMessage,
  helpMessage,
  LIMITS,
  listMessage,
  parseCommand,
  refusalMessage,
  targetsMessage,
  unknownCommandMessage,
  unknownTargetMessage,
  usageMessage,
  type DiffView,
  type SlackMessage,
} from '../src/index.ts';

const worstReason = (parseCommand(`capture demo ${'<&>'.repeat(1400)}`) as { reason: string }).reason;

function record(over: Partial<CaptureRecord> = {}): CaptureRecord {
  return {
    id: '01J7ZHH716228KMD1V49A92AEZ',
    targetId: 'checkout-api',
    labels: { service: 'checkout', env: 'prod' },
    trigger: { kind: 'slack', who: 'slack:T0123ABCD/U0456EFGH', reason: 'p99 climbing' },
    options: { warm: 'auto', gc: false, gzip: true, exposeInternals: false, captureNumericValue: false, forceHeadroom: false, kind: 'snapshot', samplingSeconds: 30, samplingIntervalBytes: 32_768 },
    status: 'succeeded',
    phase: null,
    error: null,
    timings: { queued: 12, connect: 8.2, preflight: 30, warm: 0, gc: 0, generate: 1200, serialize: 3100, sink: 40, total: 4390 },
    artifact: { key: 'checkout-api/2026/01/01/x.heapsnapshot.gz', manifestKey: 'm', location: '/x', bytesUncompressed: 76_200_000, bytesStored: 9_800_000, sha256: 'ab', gzip: true },
    attempts: 1,
    coalesced: 0,
    pinned: null,
    expired: null,
    createdAt: '2026-01-01T02:10:00.000Z',
    startedAt: '2026-01-01T02:10:00.012Z',
    finishedAt: '2026-01-01T02:10:04.402Z',
    updatedAt: '2026-01-01T02:10:04.402Z',
    ...over,
  };
}

function fits(m: SlackMessage): void {
  assert.deepEqual(checkMessage(m), [], JSON.stringify(m).slice(0, 300));
}

const link = { kind: 'api' as const, url: 'https://heapcap.example/v1/captures/01J7ZHH716228KMD1V49A92AEZ/artifact' };

void test('the result of a succeeded capture: in channel, who and why, timings table, sizes, link, Capture again', () => {
  const m = captureMessage(record({ coalesced: 2 }), link, { inChannel: true });
  fits(m);
  assert.equal(m.response_type, 'in_channel');
  const json = JSON.stringify(m);
  assert.match(json, /checkout-api: heap snapshot succeeded/);
  assert.match(json, /<@U0456EFGH> \(\+2 joined\)/);
  assert.match(json, /\*Why:\* p99 climbing/);
  assert.match(json, /generate +1\.2 s\\nserialize +3\.1 s/);
  assert.match(json, /total +4\.4 s/);
  assert.match(json, /72\.7 MiB/);
  assert.match(json, /9\.3 MiB \(gzip\)/);
  assert.match(json, /<https:\/\/heapcap\.example\/v1\/captures\/01J7ZHH716228KMD1V49A92AEZ\/artifact\|Download the snapshot>/);
  assert.match(json, /artifacts:read/);
  assert.match(json, /"action_id":"heapcap_capture_again","value":"checkout-api"/);
});

void test('a capture that was retried says which attempts failed, why, and when each retry was due; many long errors still fit', () => {
  const failedAttempts = [
    { attempt: 1, of: 3, code: 'target_unreachable', message: 'connect ECONNREFUSED 127.0.0.1:9229', phase: 'connect', startedAt: '2026-01-01T02:10:00.000Z', failedAt: '2026-01-01T02:10:00.020Z', nextAttemptAt: '2026-01-01T02:10:05.020Z' },
    { attempt: 2, of: 3, code: 'target_unreachable', message: 'connect ECONNREFUSED 127.0.0.1:9229', startedAt: '2026-01-01T02:10:05.100Z', failedAt: '2026-01-01T02:10:05.120Z', nextAttemptAt: '2026-01-01T02:10:15.120Z' },
  ];
  const m = captureMessage(record({ attempts: 3, failedAttempts }), link, { inChannel: true });
  fits(m);
  const json = JSON.stringify(m);
  assert.match(json, /\*Failed attempts\*\\n• attempt 1 of 3 failed in `connect`: `target_unreachable` \(connect ECONNREFUSED 127\.0\.0\.1:9229\); retried 5\.0 s later\\n• attempt 2 of 3 failed: `target_unreachable` \(connect ECONNREFUSED 127\.0\.0\.1:9229\); retried 10\.0 s later/);
  // A capture that never retried says nothing of attempts.
  assert.doesNotMatch(JSON.stringify(captureMessage(record(), link, { inChannel: true })), /Failed attempts/);
  const long = Array.from({ length: 40 }, (_, i) => ({ ...failedAttempts[1]!, attempt: i + 1, of: 40, message: `${'x'.repeat(2_000)} <&> ${i}`, nextAttemptAt: i === 39 ? null : failedAttempts[1]!.nextAttemptAt }));
  const worst = captureMessage(record({ status: 'failed', attempts: 40, failedAttempts: long, error: { code: 'target_unreachable', message: 'x'.repeat(5_000) } }), null, { inChannel: true });
  fits(worst);
  assert.match(JSON.stringify(worst), /…and \d+ more/);
});

void test('a result links to its console pages beside the download: the capture, the compare with the previous capture, the target\'s curve', () => {
  const pages = { capture: 'https://heapcap.example/ui/#/captures/01J7ZHH716228KMD1V49A92AEZ', target: 'https://heapcap.example/ui/#/targets/checkout-api', compare: 'https://heapcap.example/ui/#/compare?base=01J7ZHH716228KMD1V49A92AAA&head=01J7ZHH716228KMD1V49A92AEZ' };
  const m = captureMessage(record(), link, { inChannel: true, console: pages });
  fits(m);
  const sections = (m.blocks ?? []).flatMap((b) => (b.type === 'section' && b.text !== undefined ? [b.text.text] : []));
  const at = sections.findIndex((t) => t.includes('<https://heapcap.example/ui/#/captures/01J7ZHH716228KMD1V49A92AEZ|Open the capture in the console>'));
  assert.ok(at >= 0, sections.join('\n---\n'));
  // `&` in a link target is written as Slack reads it; the download link comes right after.
  assert.match(sections[at]!, /<https:\/\/heapcap\.example\/ui\/#\/compare\?base=01J7ZHH716228KMD1V49A92AAA&amp;head=01J7ZHH716228KMD1V49A92AEZ\|Compare with the previous capture>/);
  assert.match(sections[at]!, /<https:\/\/heapcap\.example\/ui\/#\/targets\/checkout-api\|checkout-api's memory curve>/);
  assert.match(sections[at + 1]!, /Download the snapshot/);
  // No previous capture: no compare link. A failed capture still links to its page (the error and the waterfall).
  const first = captureMessage(record({ status: 'failed', artifact: null }), null, { inChannel: true, console: { ...pages, compare: null } });
  assert.doesNotMatch(JSON.stringify(first), /compare/);
  assert.match(JSON.stringify(first), /Open the capture in the console/);
});

void test('a failed capture says the code, the phase, and what to check', () => {
  const failed = record({
    status: 'failed',
    artifact: null,
    error: { code: 'target_unreachable', message: 'connect ECONNREFUSED 127.0.0.1:9229', hint: 'Is the target running with --inspect?', phase: 'connect' },
  });
  const m = captureMessage(failed, null, { inChannel: true });
  fits(m);
  const json = JSON.stringify(m);
  assert.match(json, /\*Error\* `target_unreachable` in phase `connect`/);
  assert.match(json, /\*What to check:\* Is the target running with --inspect\?/);
  assert.doesNotMatch(json, /Download/);
});

void test('a presigned link warns that anyone holding it can download the snapshot, and escapes its &', () => {
  const m = captureMessage(record(), { kind: 'presigned', url: 'http://minio:9000/b/k?X-Amz-A=1&X-Amz-B=2', expiresInSeconds: 3600 }, { inChannel: true });
  fits(m);
  const json = JSON.stringify(m);
  assert.match(json, /X-Amz-A=1&amp;X-Amz-B=2\|Download/);
  assert.match(json, /Anyone holding this link can download the snapshot until it expires \(in 60 min 0 s\)/);
});

void test('user text cannot mention @channel or break the message; the worst inputs still fit', () => {
  const nasty = record({
    trigger: { kind: 'rest', who: 'x'.repeat(200), reason: worstReason },
    labels: Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`label${i}`, 'v'.repeat(256)])),
    status: 'failed',
    error: { code: 'internal', message: '<!channel> '.repeat(500), hint: '&'.repeat(5000), phase: 'serialize' },
    timings: Object.fromEntries(Array.from({ length: 400 }, (_, i) => [`phase-${i}`, i * 1000])),
  });
  const m = captureMessage(nasty, link, { inChannel: true });
  fits(m);
  assert.doesNotMatch(JSON.stringify(m), /<!channel>/);
  fits(listMessage(Array.from({ length: 10 }, () => nasty), 'checkout-api'));
  fits(captureAckMessage({ record: nasty, outcome: 'coalesced', truncated: { from: 4000, kept: 964 }, replyArranged: false }));
});

void test('replies: help, unknown command and target with suggestions, usage, refusal, targets at scale', () => {
  const ids = Array.from({ length: 1000 }, (_, i) => `service-${String(i).padStart(4, '0')}-${'x'.repeat(100)}`);
  for (const m of [
    helpMessage('/heapcap'),
    unknownCommandMessage('/heapcap', 'checkout-api', ['checkout-api'], true),
    unknownCommandMessage('/heapcap', 'x'.repeat(5000), ids, true),
    unknownTargetMessage('chekout-api', ['checkout-api', 'search'], true),
    unknownTargetMessage('z', ids, true),
    usageMessage('/heapcap', 'capture', 'which target?', ids, true),
    refusalMessage({ userId: 'U1', teamId: 'T1' }, 'capture', 'captures:write'),
  ]) {
    fits(m);
    assert.equal(m.response_type, 'ephemeral');
  }
  assert.match(JSON.stringify(unknownCommandMessage('/heapcap', 'checkout-api', ['checkout-api'], true)), /Did you mean `\/heapcap capture checkout-api`/);
  assert.match(JSON.stringify(unknownTargetMessage('Checkout-Apj', ['checkout-api', 'search'], true)), /Did you mean `checkout-api`\?/);
  assert.match(JSON.stringify(refusalMessage({ userId: 'U1', teamId: 'T1' }, 'capture', 'captures:write')), /HEAPCAP_SLACK_USERS_FILE/);
  const registered: RegisteredTarget[] = ids.map((id) => ({ target: { id, kind: 'node', inspect: '127.0.0.1:9229', labels: { service: 's' } }, source: 'file', updatedAt: '' }));
  const t = targetsMessage(registered, true);
  fits(t);
  assert.match(JSON.stringify(t), /more not shown: GET \/v1\/targets/);
});

void test('a message that breaks a limit is sent as its text alone', () => {
  const broken: SlackMessage = { text: 'result', blocks: Array.from({ length: LIMITS.blocksPerMessage + 1 }, () => ({ type: 'divider' as const })) };
  const { message, problems } = deliverable(broken);
  assert.deepEqual(problems, ['message: blocks has 51, the limit is 50']);
  assert.equal(message.blocks, undefined);
  assert.equal(message.text, 'result');
  assert.deepEqual(checkMessage({ text: 'x', blocks: [{ type: 'header', text: { type: 'plain_text', text: 'h'.repeat(151) } }] }), ['blocks[0] (header): text has 151, the limit is 150']);
});

void test('the result of a sampling profile says so and downloads as .heapprofile', () => {
  const m = captureMessage(
    record({
      options: { ...record().options, kind: 'sampling', samplingSeconds: 30 },
      artifact: { ...record().artifact!, key: 'checkout-api/2026/01/01/x.heapprofile.gz', kind: 'sampling-profile', bytesUncompressed: 40_000 },
    }),
    link,
    { inChannel: true },
  );
  fits(m);
  const json = JSON.stringify(m);
  assert.match(json, /checkout-api: sampling profile succeeded/);
  assert.match(json, /\*Sampling profile\*/);
  assert.match(json, /Download the sampling profile>/);
  assert.match(json, /-o 01J7ZHH716228KMD1V49A92AEZ\.heapprofile /);
  assert.doesNotMatch(json, /heap snapshot/);
});

void test('diff: the suspects come first, with who holds them; summary-only ones say so; the worst inputs still fit', () => {
  const view = (suspects: DiffView['suspects'], classes: DiffView['classes'] = [{ name: '(string)', status: 'grown', countDelta: 9_000, selfSizeDelta: 900_000 }]): DiffView => ({
    base: { captureId: '01J7ZHH716228KMD1V49A92AEZ', createdAt: '2026-01-01T02:00:00.000Z' },
    head: { captureId: '01J7ZHH716228KMD1V49A92AF0', createdAt: '2026-01-01T02:10:00.000Z' },
    targetId: 'checkout-api',
    retained: true,
    totalSelfSizeDelta: 2_000_000,
    nodeCountDelta: 20_000,
    classes,
    suspects,
    consoleUrl: 'https://heapcap.example/ui/#/compare?base=01J7ZHH716228KMD1V49A92AEZ&head=01J7ZHH716228KMD1V49A92AF0',
  });
  const now = Date.parse('2026-01-01T02:15:00.000Z');
  const graph = diffMessage(
    view({
      mode: 'graph',
      suspects: [{ rank: 1, class: 'Session', reason: '+5,000 Session instances holding +1.5 MiB, all held by `sessions` (Map)', path: '(root) → .sessions Map → .table (internal array) → 12 Session' }],
    }),
    now,
  );
  fits(graph);
  const sections = (graph.blocks ?? []).flatMap((b) => (b.type === 'section' && b.text !== undefined ? [b.text.text] : []));
  const at = (re: RegExp): number => sections.findIndex((t) => re.test(t));
  assert.ok(at(/^\*Suspects\*, largest new retained memory first:\n\*1\.\* \+5,000 Session instances holding \+1\.5 MiB, all held by `sessions` \(Map\)\n {4}`\(root\) → \.sessions Map/) >= 0, sections.join('\n---\n'));
  assert.ok(at(/^\*Suspects\*/) < at(/^\*Classes\*/), 'suspects before classes');
  assert.ok(at(/^:mag: <https:\/\/heapcap\.example\/ui\/#\/compare\?base=01J7ZHH716228KMD1V49A92AEZ&amp;head=01J7ZHH716228KMD1V49A92AF0\|Open the compare in the console>/) < at(/^\*Suspects\*/), 'the console\'s compare above the suspects');
  // A phone's notification shows the first suspect, not the strings that grew with it.
  assert.match(graph.text, /\n#1 suspect: Session \+5,000 Session instances .* held by `sessions` \(Map\)\n/);

  const summary = diffMessage(view({ mode: 'summary', note: 'summary-only (no holders): base 01J7ZHH716228KMD1V49A92AEZ has no analysis (POST /v1/captures/01J7ZHH716228KMD1V49A92AEZ/analysis)', suspects: [{ rank: 1, class: 'Session', reason: '+5,000 instances (+390.6 KiB self); holder unknown (summary only)', path: null }] }), now);
  fits(summary);
  assert.match(JSON.stringify(summary.blocks), /\*Suspects \(summary-only, no holders\)\*: summary-only \(no holders\): base 01J7ZHH716228KMD1V49A92AEZ has no analysis \(POST \/v1\/captures\/01J7ZHH716228KMD1V49A92AEZ\/analysis\)\\n\*1\.\* `Session` \+5,000 instances/);
  assert.match(JSON.stringify(diffMessage(view({ mode: 'graph', suspects: [] }), now).blocks), /No suspects: nothing grew beyond noise\./);

  // Class names, reasons and paths come from the target's heap: at their worst they are long and full of markup.
  const nasty = '<!channel>&`'.repeat(2_000);
  const worst = diffMessage(
    view(
      { mode: 'summary', note: nasty, suspects: Array.from({ length: 10 }, (_, i) => ({ rank: i + 1, class: nasty, reason: nasty, path: nasty })) },
      Array.from({ length: 10 }, () => ({ name: nasty, status: 'new', countDelta: 1, selfSizeDelta: 1 })),
    ),
    now,
  );
  fits(worst);
  assert.doesNotMatch(JSON.stringify(worst.blocks), /<!channel>/);
});

void test('hunt: started, running, failed, and its report with the suspects first; the worst inputs still fit', () => {
  const hunt = {
    id: '01J7ZHH716228KMD1V49A92AEZ',
    targetId: 'checkout-api',
    intervalMs: 60_000,
    requestedBy: 'slack',
    status: 'queued' as const,
    phase: null,
    snapshots: [],
    createdAt: '2026-01-01T02:00:00.000Z',
  };
  const page = 'https://heapcap.example/ui/#/hunts/01J7ZHH716228KMD1V49A92AEZ';
  const started = huntStartedMessage('/heapcap', hunt, page);
  fits(started);
  assert.match(started.text, /follow it live in the console: <https:\/\/heapcap\.example\/ui\/#\/hunts\/01J7ZHH716228KMD1V49A92AEZ\|the hunt's page>/);
  assert.match(started.text, /Leak hunt `01J7ZHH716228KMD1V49A92AEZ` of `checkout-api` started: three snapshots 60 s apart .* See it with `\/heapcap hunt 01J7ZHH716228KMD1V49A92AEZ` \(in about 3 min\)/);
  // It says whether it tracks allocations (the record's `allocations`; absent on older hunts: tracked).
  assert.match(started.text, /It tracks allocations from the baseline to the target snapshot, .* \(`--no-allocations` turns it off\)/);
  assert.match(huntStartedMessage('/heapcap', { ...hunt, allocations: false }).text, /Allocation tracking is off \(`--no-allocations`\): its suspects will not say where they were allocated/);
  assert.match(huntMessage('/heapcap', { ...hunt, status: 'running', phase: 'wait' }, null).text, /is running \(wait\); 0 of 3 snapshots taken/);
  const failed = huntMessage('/heapcap', { ...hunt, status: 'failed', phase: 'target', error: { code: 'snapshot_ids_reset', message: 'ids cleared', hint: 'keep other inspector clients away' } }, null);
  assert.match(failed.text, /failed in target: `snapshot_ids_reset` ids cleared\nkeep other inspector clients away/);
  const report = {
    suspects: {
      mode: 'graph' as const,
      suspects: [{ rank: 1, class: 'Session', reason: '+500 Session instances holding +62.5 KiB, all held by `sessions` (Map)', path: '(root) → .sessions Map', allocatedAt: 'allocated at src/session.js:44 createSession ← src/routes/login.js:12' }],
    },
    classes: [{ name: 'Session', count: 500, selfSize: 32_000 }],
    survivingCount: 2_100,
    createdCount: 9_000,
  };
  const done = huntMessage('/heapcap', { ...hunt, status: 'succeeded' }, report, page);
  fits(done);
  assert.match(JSON.stringify(done.blocks), /<https:\/\/heapcap\.example\/ui\/#\/hunts\/01J7ZHH716228KMD1V49A92AEZ\|Open the report in the console>: suspect #1 first/);
  assert.match(done.text, /^Leak hunt of checkout-api: #1 suspect: Session \+500 Session instances .* held by `sessions` \(Map\)/);
  const sections = (done.blocks ?? []).flatMap((b) => (b.type === 'section' && b.text !== undefined ? [b.text.text] : []));
  // Under the suspect: where its objects were allocated (a hunt that tracked allocations).
  assert.ok(sections.some((t) => t.includes('`(root) → .sessions Map`\n    allocated at src/session.js:44 createSession ← src/routes/login.js:12')), sections.join('\n---\n'));
  assert.ok(sections.findIndex((t) => t.startsWith('*Suspects*, largest surviving new memory first:\n*1.* +500 Session')) < sections.findIndex((t) => t.startsWith('*Classes*')), sections.join('\n---\n'));
  const nasty = '<!channel>&`'.repeat(2_000);
  const worst = huntMessage(
    '/heapcap',
    { ...hunt, targetId: 'x'.repeat(200), status: 'succeeded' },
    { ...report, suspects: { mode: 'graph', suspects: Array.from({ length: 10 }, (_, i) => ({ rank: i + 1, class: nasty, reason: nasty, path: nasty })) }, classes: Array.from({ length: 20 }, () => ({ name: nasty, count: 1, selfSize: 1 })) },
  );
  fits(worst);
  assert.doesNotMatch(JSON.stringify(worst.blocks), /<!channel>/);
  fits(huntMessage('/heapcap', { ...hunt, status: 'failed', error: { code: 'internal', message: nasty, hint: nasty } }, null));
});
