/** The /heapcap command language: what an engineer types at 3 a.m., and what heapcap understands. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MAX_REASON, parseCommand } from '../src/index.ts';

void test('capture with a quoted unicode reason, extra spaces and smart quotes', () => {
  assert.deepEqual(parseCommand('capture demo "test 🚀"'), { kind: 'capture', target: 'demo', reason: 'test 🚀', reasonLength: 6, keptLength: 6, truncated: false });
  assert.deepEqual(parseCommand('   capture    checkout-api    p99   climbing  '), { kind: 'capture', target: 'checkout-api', reason: 'p99 climbing', reasonLength: 12, keptLength: 12, truncated: false });
  assert.equal((parseCommand('capture demo \u201cp99 since 02:10\u201d') as { reason: string }).reason, 'p99 since 02:10');
  assert.equal((parseCommand('CAPTURE demo')).kind, 'capture');
  assert.deepEqual(parseCommand('capture demo'), { kind: 'capture', target: 'demo', reason: undefined, reasonLength: 0, keptLength: 0, truncated: false });
  assert.equal((parseCommand('capture demo ""') as { reason: unknown }).reason, undefined);
  assert.equal((parseCommand('capture "demo" oom') as { target: string }).target, 'demo');
});

void test("Slack's markup and escapes become what the user saw; URL-encoding typed by the user stays literal", () => {
  const c = parseCommand('capture demo &lt;@here&gt; 5xx &amp; <@U123|alice> in <#C99|incident-42>, see <https://grafana.example/d/x?a=1&amp;b=2|dash> <!channel>') as { reason: string };
  assert.equal(c.reason, '<@here> 5xx & @alice in #incident-42, see dash (https://grafana.example/d/x?a=1&b=2) @channel');
  assert.equal((parseCommand('capture demo 100%25 p99%20high') as { reason: string }).reason, '100%25 p99%20high');
});

void test('a 4,000-character reason is cut to the record limit, saying so', () => {
  const c = parseCommand(`capture demo ${'a'.repeat(4000)}`) as { reason: string; truncated: boolean; reasonLength: number; keptLength: number };
  assert.equal(c.truncated, true);
  assert.equal(c.reasonLength, 4000);
  assert.equal(c.reason.length, MAX_REASON);
  assert.equal(c.reason, `${'a'.repeat(c.keptLength)}… [truncated from 4,000 characters]`);
});

void test('a long emoji reason is cut on a grapheme boundary and counted as a reader counts', () => {
  const long = '👩‍🚒'.repeat(800); // 4,000 UTF-16 units, 800 graphemes
  assert.equal(long.length, 4000);
  const c = parseCommand(`capture demo ${long}`) as { reason: string; truncated: boolean; reasonLength: number; keptLength: number };
  assert.equal(c.truncated, true);
  assert.equal(c.reasonLength, 800);
  assert.ok(c.reason.length <= MAX_REASON, String(c.reason.length));
  assert.match(c.reason, /… \[truncated from 800 characters\]$/);
  assert.equal(c.keptLength, 193);
  // No broken emoji: everything before the note is whole firefighters.
  assert.match(c.reason.replace(/… \[truncated.*$/, ''), /^(👩‍🚒)+$/u);
});

void test('other verbs, aliases and their mistakes', () => {
  assert.deepEqual(parseCommand(''), { kind: 'help' });
  assert.deepEqual(parseCommand('   '), { kind: 'help' });
  assert.deepEqual(parseCommand('help'), { kind: 'help' });
  assert.deepEqual(parseCommand('status 01j7zhh716228kmd1v49a92aez'), { kind: 'status', captureId: '01J7ZHH716228KMD1V49A92AEZ' });
  assert.equal(parseCommand('status').kind, 'usage');
  assert.equal(parseCommand('status a b').kind, 'usage');
  assert.deepEqual(parseCommand('list'), { kind: 'list', target: undefined });
  assert.deepEqual(parseCommand('ls checkout-api'), { kind: 'list', target: 'checkout-api' });
  assert.deepEqual(parseCommand('targets'), { kind: 'targets' });
  assert.deepEqual(parseCommand('schedules demo'), { kind: 'schedules', target: 'demo' });
  assert.deepEqual(parseCommand('diff a1 b2'), { kind: 'diff', a: 'A1', b: 'B2' });
  assert.equal(parseCommand('diff a1').kind, 'usage');
  assert.deepEqual(parseCommand('capture'), { kind: 'usage', verb: 'capture', problem: 'which target? Name one of the targets below.' });
  assert.equal(parseCommand('capture ../../etc').kind, 'usage');
  assert.deepEqual(parseCommand('snapshot-please demo'), { kind: 'unknown', word: 'snapshot-please' });
  assert.deepEqual(parseCommand('demo'), { kind: 'unknown', word: 'demo' });
});

void test('hunt: a target with an optional interval, or a hunt id to see it; mistakes say what is wrong', () => {
  assert.deepEqual(parseCommand('hunt checkout-api'), { kind: 'hunt', target: 'checkout-api', intervalSeconds: 60, allocations: true });
  assert.deepEqual(parseCommand('leak-hunt checkout-api 5m'), { kind: 'hunt', target: 'checkout-api', intervalSeconds: 300, allocations: true });
  assert.deepEqual(parseCommand('hunt checkout-api 90'), { kind: 'hunt', target: 'checkout-api', intervalSeconds: 90, allocations: true });
  // --no-allocations before or after the interval; a Mac's or phone's dash for `--`, or bare.
  for (const text of ['hunt checkout-api 90 --no-allocations', 'hunt checkout-api --no-allocations 90', 'hunt checkout-api 90 \u2014no-allocations', 'hunt checkout-api 90 No-Allocations']) {
    assert.deepEqual(parseCommand(text), { kind: 'hunt', target: 'checkout-api', intervalSeconds: 90, allocations: false }, text);
  }
  assert.deepEqual(parseCommand('hunt checkout-api --no-allocations'), { kind: 'hunt', target: 'checkout-api', intervalSeconds: 60, allocations: false });
  assert.match((parseCommand('hunt --no-allocations') as { problem: string }).problem, /^which target\?/);
  assert.match((parseCommand('hunt demo 60s --allocations') as { problem: string }).problem, /`--no-allocations` to hunt without tracking allocations/);
  assert.deepEqual(parseCommand('hunt 01j7zhh716228kmd1v49a92aez'), { kind: 'huntStatus', huntId: '01J7ZHH716228KMD1V49A92AEZ' });
  assert.deepEqual(parseCommand('hunt'), { kind: 'usage', verb: 'hunt', problem: 'which target? Name one of the targets below (or give a hunt id to see it).' });
  assert.match((parseCommand('hunt demo 2h') as { problem: string }).problem, /`2h` is not an interval from 1s to 1h/);
  assert.match((parseCommand('hunt demo 0s') as { problem: string }).problem, /is not an interval/);
  assert.match((parseCommand('hunt demo 60s extra') as { problem: string }).problem, /a target and at most an interval/);
  assert.match((parseCommand('hunt ../etc 60s') as { problem: string }).problem, /is not a target id/);
});
