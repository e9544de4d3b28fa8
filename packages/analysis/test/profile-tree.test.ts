/**
 * The folded call tree (flame graphs) of real sampling heap profiles of a real
 * Node target (testkit's alloc-sites.cjs): it folds exactly as the summary
 * does (each frame's self bytes are its site's bytes, no `node:` frame), a
 * node's total is its self plus its children's, and the growth tree of two
 * profiles of one session puts the leak's growth on the leaking function.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { fixturePath, startNodeTarget, startSamplingSession, type NodeTarget, type SamplingSession } from '@heapcap/testkit';
import { CaptureError } from '@heapcap/errors';
import { frameKey } from '../src/profile/profile-tree.ts';
import { profileTree, profileTreeDiff, summarizeProfile, ProfileTreeSchema, ProfileTreeDiffSchema, type ProfileTree } from '../src/index.ts';

const INTERVAL = 8192;
/** The leak's functions (an optimized leakSessions inlines the other two, and V8 then names it alone). */
const LEAK_FUNCTIONS = ['Session', 'createSession', 'leakSessions'];

let target: NodeTarget;
let session: SamplingSession;
let first: unknown;
let second: unknown;

before(async () => {
  target = await startNodeTarget({ script: fixturePath('alloc-sites.cjs') });
  session = await startSamplingSession(target.wsUrl!, INTERVAL);
  await target.request('leak 4000', 'LEAKED');
  await target.request('cache 2000', 'CACHED');
  first = await session.profile();
  await target.request('leak 20000', 'LEAKED');
  await target.request('cache 2000', 'CACHED');
  second = await session.profile();
});
after(async () => {
  await session?.close().catch(() => undefined);
  await target?.kill();
});

/** Self bytes per frame identity, summed over the tree's nodes. */
function selfByFrame(tree: ProfileTree): Map<string, number> {
  const out = new Map<string, number>();
  for (const n of tree.nodes) {
    if (n.frame === null || n.selfBytes === 0) continue;
    const key = frameKey(tree.frames[n.frame]!);
    out.set(key, (out.get(key) ?? 0) + n.selfBytes);
  }
  return out;
}

void test('the tree folds as the summary does: per frame, self bytes are the site bytes; totals add up', () => {
  const tree = ProfileTreeSchema.parse(profileTree(second, { samplingIntervalBytes: INTERVAL }));
  const summary = summarizeProfile(second, { samplingIntervalBytes: INTERVAL, limit: 10_000 });
  assert.equal(tree.nodes[0]!.frame, null);
  assert.equal(tree.nodes[0]!.totalBytes, summary.totalBytes);
  assert.equal(tree.samples, summary.samples);
  assert.deepEqual(selfByFrame(tree), new Map(summary.sites.map((s) => [frameKey(s), s.bytes])));
  // node: frames are folded into their caller; one stands alone only for a stack of Node's own frames (its bootstrap).
  const nodeFrames = tree.nodes.flatMap((n, i) => (n.frame !== null && tree.frames[n.frame]!.url.startsWith('node:') ? [i] : []));
  for (const i of nodeFrames) assert.ok(tree.nodes[i]!.parent === 0 && !tree.nodes.some((n) => n.parent === i), `node ${i}: a node: frame under the root, alone`);
  assert.ok(tree.nodes.some((n) => n.frame !== null && tree.frames[n.frame]!.functionName === 'fillCache'), 'the cache site');
  // A node's total is its own bytes plus its children's; parents come first.
  const children = new Map<number, number>();
  tree.nodes.forEach((n, i) => {
    if (n.parent >= 0) {
      assert.ok(n.parent < i, 'pre-order');
      children.set(n.parent, (children.get(n.parent) ?? 0) + n.totalBytes);
    }
  });
  tree.nodes.forEach((n, i) => assert.ok(Math.abs(n.totalBytes - n.selfBytes - (children.get(i) ?? 0)) < 1e-6, `node ${i}`));
  const top = summary.sites[0]!;
  assert.ok(LEAK_FUNCTIONS.includes(top.functionName), top.functionName);
  const leaf = tree.nodes.find((n) => n.frame !== null && frameKey(tree.frames[n.frame]!) === frameKey(top) && n.selfBytes > 0)!;
  assert.ok(leaf.selfObjects > 0 && leaf.selfSamples > 0);
});

void test('the growth tree: the self bytes of the leaking function grew most; a non-profile is profile_invalid', () => {
  const diff = ProfileTreeDiffSchema.parse(profileTreeDiff(first, second, { samplingIntervalBytes: INTERVAL }));
  const grown = diff.nodes
    .filter((n) => n.frame !== null)
    .map((n) => ({ f: diff.frames[n.frame!]!, delta: n.selfBytes - n.baseSelfBytes }))
    .sort((a, b) => b.delta - a.delta);
  assert.ok(LEAK_FUNCTIONS.includes(grown[0]!.f.functionName), JSON.stringify(grown.slice(0, 3)));
  assert.ok(diff.totalBytes > diff.base.totalBytes);
  assert.equal(diff.nodes[0]!.baseTotalBytes, diff.base.totalBytes);
  assert.throws(() => profileTree({ snapshot: {} }), (e: unknown) => e instanceof CaptureError && e.code === 'profile_invalid');
});
