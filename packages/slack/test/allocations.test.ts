/**
 * `diff` of two allocation sampling profiles in Slack: the top grown site in
 * the notification text and first in the list, within Slack's limits, and an
 * honest line when nothing grew. The same allocation part in the diff of two
 * snapshots that have continuous profiles beside them.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { allocationDiffMessage, checkMessage, diffMessage, type AllocationDiffView, type DiffView } from '../src/index.ts';

const now = Date.parse('2026-11-29T03:00:00Z');
const view = (grown: AllocationDiffView['grown']): AllocationDiffView => ({
  targetId: 'checkout-api',
  base: { captureId: '01J7ZHH716228KMD1V49A92AEZ', createdAt: '2026-11-29T02:30:00Z' },
  head: { captureId: '01J7ZJ2B8Q4K7T0V5N3XW6YDCE', createdAt: '2026-11-29T02:55:00Z' },
  totalBytesDelta: grown.reduce((n, s) => n + s.bytesDelta, 0),
  grown,
});

void test('the top grown allocation site leads the notification and the list', () => {
  const m = allocationDiffMessage(
    view([
      { functionName: 'createSession', url: '/srv/app/session.js', line: 22, column: 23, baseBytes: 1_048_576, headBytes: 13_631_488, bytesDelta: 12_582_912 },
      { functionName: '', url: 'file:///srv/app/cache.mjs', line: 8, column: 3, baseBytes: 0, headBytes: 65_536, bytesDelta: 65_536 },
    ]),
    now,
  );
  assert.deepEqual(checkMessage(m), []);
  assert.match(m.text, /^Where checkout-api's live allocations grew: `01J7ZHH716228KMD1V49A92AEZ` \(30 min ago\) → `01J7ZJ2B8Q4K7T0V5N3XW6YDCE` \(5 min ago\), sampled live bytes \+12\.1 MiB\nTop grown site: createSession \/srv\/app\/session\.js:22:23 \+12\.0 MiB\n/);
  const sections = (m.blocks ?? []).flatMap((b) => (b.type === 'section' && b.text !== undefined ? [b.text.text] : []));
  assert.match(sections.join('\n'), /\*Allocation sites\*, largest growth first:\n• \+12\.0 MiB `createSession \/srv\/app\/session\.js:22:23` \(1\.0 MiB → 13\.0 MiB\)\n• \+0\.1 MiB `\(anonymous\) file:\/\/\/srv\/app\/cache\.mjs:8:3` \(0\.0 MiB → 0\.1 MiB\)/);
});

void test('nothing grew: said so, no top site', () => {
  const m = allocationDiffMessage(view([]), now);
  assert.deepEqual(checkMessage(m), []);
  assert.doesNotMatch(m.text, /Top grown site/);
  assert.match(m.text, /No allocation site grew between these two profiles\./);
});

void test('two snapshots with profiles beside them: the top grown site follows the #1 suspect, its section after the suspects', () => {
  const grown = [
    { functionName: 'createSession', url: '/srv/app/session.js', line: 22, column: 23, baseBytes: 1_048_576, headBytes: 13_631_488, bytesDelta: 12_582_912 },
    { functionName: 'fillCache', url: '/srv/app/cache.js', line: 8, column: 3, baseBytes: 0, headBytes: 65_536, bytesDelta: 65_536 },
  ];
  const snapshots = (allocations: DiffView['allocations']): DiffView => ({
    base: view([]).base,
    head: view([]).head,
    targetId: 'checkout-api',
    retained: false,
    totalSelfSizeDelta: 2_000_000,
    nodeCountDelta: 20_000,
    classes: [{ name: 'Session', status: 'grown', countDelta: 20_000, selfSizeDelta: 2_000_000 }],
    suspects: { mode: 'summary', note: 'no analysis', suspects: [{ rank: 1, class: 'Session', reason: '+20,000 instances (+1.9 MiB self)', path: null }] },
    allocations,
  });
  const m = diffMessage(snapshots({ totalBytesDelta: 12_648_448, grown }), now);
  assert.deepEqual(checkMessage(m), []);
  assert.match(m.text, /\n#1 suspect: Session \+20,000 instances \(\+1\.9 MiB self\)\nTop grown site: createSession \/srv\/app\/session\.js:22:23 \+12\.0 MiB\n/);
  const sections = (m.blocks ?? []).flatMap((b) => (b.type === 'section' && b.text !== undefined ? [b.text.text] : []));
  const at = (re: RegExp): number => sections.findIndex((t) => re.test(t));
  const sites = at(/^\*Allocation sites\* \(profiles beside the snapshots\), largest growth first:\n• \+12\.0 MiB `createSession \/srv\/app\/session\.js:22:23` \(1\.0 MiB → 13\.0 MiB\)\n• \+0\.1 MiB `fillCache/);
  assert.ok(at(/^\*Suspects/) < sites && sites < at(/^\*Classes\*/), sections.join('\n---\n'));
  // Profiles beside them but nothing grew: said so, no top site; without profiles (null), no allocation part at all.
  const none = diffMessage(snapshots({ totalBytesDelta: 0, grown: [] }), now);
  assert.doesNotMatch(none.text, /Top grown site/);
  assert.match(JSON.stringify(none.blocks), /No allocation site grew between their profiles\./);
  const without = diffMessage(snapshots(null), now);
  assert.doesNotMatch(without.text, /Top grown site/);
  assert.doesNotMatch(JSON.stringify(without.blocks), /Allocation sites/);
});
