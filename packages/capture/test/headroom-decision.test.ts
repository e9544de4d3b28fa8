// The gate's arithmetic on given facts: which limit binds, when it refuses,
// what force changes, what the refusal tells the operator. No target needed.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  previousEstimate,
  PREVIOUS_CAPTURE_SAFETY,
  decideHeadroom,
  headroomError,
  MEMORY_MODELS,
  modelFamily,
  type MemoryFacts,
  type RuntimeFacts,
} from '../src/index.ts';

const MiB = 1024 * 1024;

function node(heapUsedMb: number, v8 = '11.3.244.8-node.38'): RuntimeFacts {
  return { product: 'node', version: 'v20.20.2', v8Version: v8, pid: 1, heap: { usedBytes: heapUsedMb * MiB, totalBytes: heapUsedMb * 1.2 * MiB } };
}

function memory(over: Partial<MemoryFacts> = {}): MemoryFacts {
  return {
    access: 'getBuiltinModule',
    rssBytes: 200 * MiB,
    maxRssBytes: 220 * MiB,
    heapLimitBytes: 4096 * MiB,
    constrainedMemoryBytes: null,
    availableMemoryBytes: null,
    cgroup: null,
    host: { totalBytes: 16384 * MiB, availableBytes: 12000 * MiB, source: 'target' },
    warnings: [],
    ...over,
  };
}

function cgroup(limitMb: number | null, usageMb: number, inactiveMb = 0): MemoryFacts['cgroup'] {
  return {
    version: 2,
    path: '/kubepods/pod/ctr',
    dir: '/sys/fs/cgroup/kubepods/pod/ctr',
    limitBytes: limitMb === null ? null : limitMb * MiB,
    limitDir: limitMb === null ? null : '/sys/fs/cgroup/kubepods/pod',
    usageBytes: usageMb * MiB,
    inactiveFileBytes: inactiveMb * MiB,
  };
}

void describe('headroom decision', () => {
  void it('refuses a 300 MB heap in a 2 GB container (the issue’s example) and says what to do', () => {
    const report = decideHeadroom(node(300), memory({ cgroup: cgroup(2048, 450) }));
    assert.equal(report.verdict, 'exceeds');
    assert.equal(report.action, 'refuse');
    assert.equal(report.forced, false);
    assert.equal(report.binding?.source, 'cgroup');
    const err = headroomError(report);
    assert.equal(err.code, 'insufficient_headroom');
    assert.equal(err.details?.['limitBytes'], 2048 * MiB);
    assert.equal(err.details?.['usageBytes'], 450 * MiB);
    assert.equal(err.details?.['heapUsedBytes'], 300 * MiB);
    assert.equal(err.details?.['estimateBytes'], report.estimate.extraBytes);
    assert.ok((err.details?.['requiredLimitBytes'] as number) > 2048 * MiB);
    assert.match(err.hint ?? '', /raise the target's memory limit to at least \d+\.\d MiB, capture a replica with more room, or force it/);
  });

  void it('lets the same heap through when the container has room', () => {
    const report = decideHeadroom(node(300), memory({ cgroup: cgroup(8192, 450) }));
    assert.equal(report.verdict, 'fits');
    assert.equal(report.action, 'capture');
    assert.ok(report.binding !== null && report.estimate.extraBytes <= report.binding.availableBytes);
  });

  void it('force takes a capture that does not fit and records it; force on one that fits records nothing', () => {
    const forced = decideHeadroom(node(300), memory({ cgroup: cgroup(2048, 450) }), { force: true });
    assert.deepEqual([forced.verdict, forced.action, forced.forced], ['exceeds', 'capture', true]);
    const fits = decideHeadroom(node(300), memory({ cgroup: cgroup(8192, 450) }), { force: true });
    assert.deepEqual([fits.verdict, fits.action, fits.forced], ['fits', 'capture', false]);
  });

  void it('counts the cgroup working set (usage minus inactive file cache), not the page cache', () => {
    // 1 GB limit, 900 MB usage of which 700 MB is reclaimable file cache.
    const withCache = decideHeadroom(node(40), memory({ cgroup: cgroup(1024, 900, 700), host: null }));
    assert.equal(withCache.binding?.usageBytes, 200 * MiB);
    assert.equal(withCache.verdict, 'fits');
    const without = decideHeadroom(node(40), memory({ cgroup: cgroup(1024, 900, 0), host: null }));
    assert.equal(without.verdict, 'exceeds');
  });

  void it('the tightest of cgroup, configured limit and host binds', () => {
    const report = decideHeadroom(node(50), memory({ cgroup: cgroup(4096, 300) }), { memoryLimitBytes: 600 * MiB });
    assert.deepEqual(
      report.constraints.map((c) => c.source),
      ['cgroup', 'configured', 'host'],
    );
    assert.equal(report.binding?.source, 'configured');
    // configured limit − target RSS − margin (64 MiB floor).
    assert.equal(report.binding?.availableBytes, 600 * MiB - 200 * MiB - 64 * MiB);
    assert.equal(report.verdict, 'exceeds');
  });

  void it('falls back to process.constrainedMemory() when no cgroup files could be read', () => {
    const report = decideHeadroom(node(50), memory({ constrainedMemoryBytes: 512 * MiB, availableMemoryBytes: 100 * MiB, host: null }));
    assert.equal(report.binding?.source, 'constrained-memory');
    assert.equal(report.binding?.usageBytes, 412 * MiB);
    assert.equal(report.verdict, 'exceeds');
  });

  void it('with no limit known it captures and says so (verdict unknown)', () => {
    const chromium: RuntimeFacts = { product: 'chromium', version: 'HeadlessChrome/156', v8Version: '15.6.75.27', heap: { usedBytes: 30 * MiB, totalBytes: 40 * MiB } };
    const report = decideHeadroom(chromium, memory({ access: 'browser', rssBytes: null, maxRssBytes: null, host: null }));
    assert.deepEqual([report.verdict, report.action, report.binding], ['unknown', 'capture', null]);
    assert.equal(report.estimate.peakBytes, null);
    // A configured limit for a remote browser: usage is the JS heap (the page cannot see its RSS).
    const limited = decideHeadroom(chromium, memory({ access: 'browser', rssBytes: null, maxRssBytes: null, host: null }), { memoryLimitBytes: 256 * MiB });
    assert.equal(limited.binding?.usageBytes, 40 * MiB);
    assert.equal(limited.verdict, 'exceeds');
  });

  void it('picks the model by runtime and V8 version, and a per-target override replaces it', () => {
    assert.equal(modelFamily('node', '11.3.244.8-node.38'), 'node-v8-11');
    assert.equal(modelFamily('node', '10.2.154.26-node.36'), 'node-v8-11');
    assert.equal(modelFamily('node', '12.4.254.21-node.33'), 'node-v8-12');
    assert.equal(modelFamily('node', '13.6.233.10-node.21'), 'node-v8-12');
    assert.equal(modelFamily('chromium', '15.6.75.27'), 'chromium');
    const report = decideHeadroom(node(100), memory(), { model: { factor: 2, constantBytes: 0 } });
    assert.equal(report.estimate.extraBytes, 200 * MiB);
    assert.equal(report.estimate.peakBytes, 400 * MiB);
    const fitted = decideHeadroom(node(100), memory());
    const m = MEMORY_MODELS['node-v8-11'];
    assert.equal(fitted.estimate.extraBytes, Math.round(m.factor * 100 * MiB + m.constantBytes));
  });

  void it('a previous capture of the target replaces the model: its extra per heap byte, scaled to today, with the safety factor', () => {
    // A flat array of 200,000 tiny objects on Node 20: 19 MiB heap, 359 MiB extra; the model says ~144 MiB.
    const previous = { heapUsedBytes: 19 * MiB, extraBytes: 359 * MiB };
    const report = decideHeadroom(node(38), memory({ cgroup: cgroup(1024, 100), host: null }), { previous });
    assert.equal(report.estimate.source, 'previous capture');
    assert.equal(report.estimate.previousBytes, Math.round((PREVIOUS_CAPTURE_SAFETY * 359 * MiB * 38) / 19));
    assert.equal(report.estimate.extraBytes, report.estimate.previousBytes);
    const m = MEMORY_MODELS['node-v8-11'];
    assert.equal(report.estimate.modelBytes, Math.round(m.factor * 38 * MiB + m.constantBytes));
    // The model alone fits 1 GiB (~283 MiB needed); the previous capture says it does not (~826 MiB > ~822 MiB available).
    assert.equal(report.verdict, 'exceeds');
    assert.equal(decideHeadroom(node(38), memory({ cgroup: cgroup(1024, 100), host: null })).verdict, 'fits');
    // Large strings: the previous capture says far less than the model, and that is what the gate uses.
    const strings = decideHeadroom(node(44), memory(), { previous: { heapUsedBytes: 44 * MiB, extraBytes: 19 * MiB } });
    assert.equal(strings.estimate.extraBytes, Math.round(PREVIOUS_CAPTURE_SAFETY * 19 * MiB));
    assert.ok(strings.estimate.modelBytes > 10 * strings.estimate.extraBytes);
    // Nothing usable (no heap then, or no measured extra): the model.
    for (const bad of [{ heapUsedBytes: 0, extraBytes: 10 * MiB }, { heapUsedBytes: 10 * MiB, extraBytes: 0 }]) {
      const r = decideHeadroom(node(38), memory(), { previous: bad });
      assert.equal(r.estimate.source, 'model');
      assert.equal(r.estimate.previousBytes, null);
      assert.equal(r.estimate.extraBytes, r.estimate.modelBytes);
    }
    assert.equal(previousEstimate(undefined, 10 * MiB), null);
  });

  void it('a tiny heap is estimated at the family minimum (a snapshot of 4 MB of heap still cost 33–44 MB)', () => {
    const m = MEMORY_MODELS['node-v8-12'];
    const tiny = decideHeadroom(node(4, '12.4.254.21-node.33'), memory());
    assert.equal(tiny.estimate.extraBytes, m.minimumBytes);
    assert.ok(m.factor * 4 * MiB + m.constantBytes < m.minimumBytes);
    const big = decideHeadroom(node(100, '12.4.254.21-node.33'), memory());
    assert.equal(big.estimate.extraBytes, Math.round(m.factor * 100 * MiB + m.constantBytes));
  });

  void it('a Chromium page is charged for its DOM nodes, which the JS heap does not see', () => {
    const chromium: RuntimeFacts = { product: 'chromium', version: 'HeadlessChrome/156', v8Version: '15.6.75.27', heap: { usedBytes: 1 * MiB, totalBytes: 2 * MiB } };
    const m = MEMORY_MODELS.chromium;
    const browser = (domNodes: number | null) => ({ jsHeapSizeLimitBytes: null, usedJSHeapSizeBytes: null, totalJSHeapSizeBytes: null, deviceMemoryGiB: null, domNodes });
    const bare = { access: 'browser' as const, rssBytes: null, maxRssBytes: null, host: null };
    const base = Math.round(m.factor * MiB + m.constantBytes);
    // 420,000 DOM nodes (20,000 rows of a div and 10 spans): 862 MB measured, the heap alone says ~66 MB.
    const big = decideHeadroom(chromium, memory({ ...bare, browser: browser(420_008) }));
    assert.equal(big.estimate.extraBytes, Math.round(m.factor * MiB + m.constantBytes + m.perDomNodeBytes * 420_008));
    assert.ok(big.estimate.extraBytes > 800e6);
    assert.equal(decideHeadroom(chromium, memory({ ...bare, browser: browser(null) })).estimate.extraBytes, base);
    // Node targets have no DOM term.
    assert.equal(MEMORY_MODELS['node-v8-12'].perDomNodeBytes, 0);
  });

  void it('a configured margin replaces the default one', () => {
    const report = decideHeadroom(node(10), memory({ cgroup: cgroup(1024, 100), host: null }), { marginBytes: 0 });
    assert.equal(report.binding?.marginBytes, 0);
    assert.equal(report.binding?.availableBytes, 924 * MiB);
  });
});
