/**
 * memlab's findLeaks (its three-snapshot leak detector: @memlab/core's
 * analysis.checkLeak over a baseline/target/final visit order, what
 * @memlab/api's findLeaks runs for SnapshotResultReader.fromSnapshots) beside
 * heapcap's hunt, on the same three in-process snapshots of each Node leak
 * shape. heapcap's first suspect is the leaking class with the exact count
 * and the real holder. memlab, left to its default leak filter, reports
 * nothing for any of them (its built-in rules look for detached DOM,
 * unmounted React fibers and oversized objects: not a record in a Map); with a
 * filter that keeps every surviving new object it reports retainer traces
 * (one per cluster of similar paths), ranked its own way, which vary between
 * runs. The table it prints is what docs/analysis.md quotes.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import memlab from '@memlab/core';
import { startNodeTarget, tmpDir, type NodeTarget, type TmpDir } from '@heapcap/testkit';
import { leakHunt, LeakHuntSchema } from '../src/index.ts';
import { writeSnapshot } from './helpers.ts';

const N = 2000;
const GARBAGE = 3000;

memlab.config.muteConsole = true;

/** The class of a memlab leak trace's last node (the leaked object), and the trace's place in memlab's list. */
interface MemlabTrace {
  leaked: string;
  path: string[];
}

/** memlab's findLeaks over three snapshot files; `all`: keep every surviving new object (no built-in filter). */
async function memlabFindLeaks(work: string, files: [string, string, string], all: boolean): Promise<MemlabTrace[]> {
  const fm = new memlab.FileManager();
  const workDir = join(work, `memlab-${all ? 'all' : 'default'}-${Date.now()}`);
  fm.initDirs(memlab.config, { workDir });
  writeFileSync(fm.getSnapshotSequenceMetaFile({ workDir }), JSON.stringify(fm.createVisitOrderWithSnapshots(...files)));
  memlab.config.externalLeakFilter = all ? { leakFilter: () => true } : undefined;
  try {
    const traces = await memlab.analysis.checkLeak();
    return traces.map((t) => {
      // A trace's steps are its keys: `0: [<anonymous>](synthetic) @1 …`, `1:   --2 (shortcut)--->  [global](object) @6047 …`.
      const steps = Object.keys(t)
        .filter((k) => /^\d+:/.test(k))
        .sort((a, b) => parseInt(a, 10) - parseInt(b, 10))
        .map((k) => {
          const m = /\[([^\]]*)\]\((\w+)\) @\d+/.exec(k);
          return m === null ? '?' : `${m[1]}(${m[2]})`;
        });
      return { leaked: steps.at(-1) ?? '?', path: steps };
    });
  } finally {
    memlab.config.externalLeakFilter = undefined;
  }
}

void describe('memlab findLeaks beside the hunt, on the Node leak shapes', { timeout: 900_000 }, () => {
  let work: TmpDir;
  let target: NodeTarget;
  const rows: string[] = [];

  before(async () => {
    work = await tmpDir('heapcap-memlab-hunt');
    target = await startNodeTarget({ script: fileURLToPath(new URL('./fixtures/shapes-target.cjs', import.meta.url)), inspect: false });
  });
  after(async () => {
    console.log(`shape | heapcap hunt #1 | memlab default: leaks | memlab keep-all\n${rows.join('\n')}`);
    await target?.kill();
    await work?.cleanup();
  });

  // Which traces memlab's keep-all run shows varies between runs (its clustering samples); the table records it, the checks do not depend on it.
  const shapes: { command: string; reply: string; leaked: string; memlabName: string; count: number }[] = [
    { command: 'map', reply: 'MAP', leaked: 'SessionRecord', memlabName: 'SessionRecord(object)', count: N },
    { command: 'closures', reply: 'CLOSURES', leaked: 'IncomingRequest', memlabName: 'IncomingRequest(object)', count: N },
    { command: 'listeners', reply: 'LISTENERS', leaked: '(closure)', memlabName: 'tick Array', count: N },
    { command: 'buffers', reply: 'BUFFERS', leaked: 'Buffer', memlabName: 'Buffer(object)', count: N },
    { command: 'conns', reply: 'CONNS', leaked: 'Connection', memlabName: 'Connection(object)', count: N },
    { command: 'timers', reply: 'TIMERS', leaked: 'Timeout', memlabName: 'Timeout(object)', count: N },
    { command: 'pending', reply: 'PENDING', leaked: 'Generator', memlabName: 'Generator(object)', count: N },
  ];
  let k = 0;
  for (const shape of shapes) {
    void test(`${shape.command}: the hunt's first suspect is ${shape.leaked} (+${shape.count}); memlab's default finds nothing; keep-all never names the garbage`, async () => {
      const file = (name: string): string => join(work.path, `${++k}-${name}.heapsnapshot`);
      const baseline = await writeSnapshot(target, file('baseline'));
      await target.request(`${shape.command} ${N}`, shape.reply);
      await target.request(`garbage ${GARBAGE}`, 'GARBAGE');
      const tgt = await writeSnapshot(target, file('target'));
      const final = await writeSnapshot(target, file('final'));
      const hunt = LeakHuntSchema.parse(await leakHunt(baseline, tgt, final, { maxBytes: 1e9 }));
      const top = hunt.suspects?.suspects[0];
      assert.equal(top?.class, shape.leaked, JSON.stringify(hunt.suspects?.suspects.slice(0, 3).map((s) => s.reason)));
      assert.equal(top.countDelta, shape.count);

      const plain = await memlabFindLeaks(work.path, [baseline, tgt, final], false);
      assert.equal(plain.length, 0, `memlab's default filter: ${plain.map((t) => t.leaked).join(', ')}`);
      const all = await memlabFindLeaks(work.path, [baseline, tgt, final], true);
      const rank = all.findIndex((t) => t.leaked === shape.memlabName || t.path.includes(shape.memlabName));
      assert.ok(all.length > 0, 'memlab keep-all reports some trace');
      assert.equal(all.some((t) => t.leaked.startsWith('Garbage(object)')), false, 'memlab never names the garbage either');
      rows.push(`${shape.command} | ${top.reason} | ${plain.length} | ${all.length} traces; first ends at ${all[0]?.leaked ?? '-'}; ${rank >= 0 ? `${shape.memlabName} in trace #${rank + 1}` : `${shape.leaked} in none`}`);
    });
  }
});
