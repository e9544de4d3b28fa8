/**
 * Retainer paths of a real snapshot: a linked list of 500 objects on a global
 * makes a path of 501 steps to its tail, which is kept to 40 steps at each end
 * with one `elided` step between them saying how many were left out.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { tmpDir, type NodeTarget, type TmpDir } from '@heapcap/testkit';
import { formatPath, loadSnapshotGraph } from '../src/index.ts';
import { nodeClass, retainerPath, shortestPathTree } from '../src/paths.ts';
import { startLeakTarget, writeSnapshot } from './helpers.ts';

const LINKS = 500;

void describe('retainer paths', { timeout: 120_000 }, () => {
  let work: TmpDir;
  let target: NodeTarget;
  before(async () => {
    work = await tmpDir('heapcap-paths');
    target = await startLeakTarget();
  });
  after(async () => {
    await target?.kill();
    await work?.cleanup();
  });

  void test('a 500-link chain: both ends kept, the middle elided with its count', async () => {
    await target.request(`chain ${LINKS}`, 'CHAINED');
    const graph = await loadSnapshotGraph(await writeSnapshot(target, join(work.path, 'chain.heapsnapshot')), 1e9);
    const tree = shortestPathTree(graph);
    const links: number[] = [];
    for (let i = 0; i < graph.nodeCount; i++) if (nodeClass(graph, i) === 'Link') links.push(i);
    assert.equal(links.length, LINKS);
    // The tail is the Link with the longest path (global → __chain → 499 × next).
    const paths = links.map((n) => retainerPath(graph, tree, n) ?? []);
    const short = paths.filter((p) => p.every((s) => s.edgeType !== 'elided'));
    assert.equal(short.length, 79, 'links at depth ≤ 80 have their whole path');
    const tail = paths.find((p) => p.some((s) => s.edge === `${LINKS + 1 - 80} steps`));
    assert.ok(tail !== undefined, 'the tail: 501 steps, 421 elided');
    assert.equal(tail.length, 81);
    assert.deepEqual([tail[0]?.class, tail[1]?.edge, tail[1]?.class], ['global', '__chain', 'Link']);
    assert.equal(tail[40]?.edgeType, 'elided');
    assert.ok(tail.slice(41).every((s) => s.edge === 'next' && s.class === 'Link'));
    assert.match(formatPath(tail), /^\(root\) → \.\S+ global → \.__chain Link → \.next Link .* → … \(421 steps elided\) → \.next Link/);
  });
});
