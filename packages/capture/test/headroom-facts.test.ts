// Preflight memory facts read inside real Node targets: ESM entry points on
// Node 18 (no process.getBuiltinModule: the command-line API's require), 20
// and 22; a target moved into a memory-limited cgroup; other cgroup layouts
// (v2, a v1 mount whose root is the container's group) laid out in a
// directory; and nothing left behind in the target.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CdpSession, decideHeadroom, gatherMemoryFacts, gatherRuntimeFacts, preflightOnly, resolveEndpoint } from '../src/index.ts';
import {
  createMemoryCgroup,
  fixturePath,
  memoryCgroupLayout,
  startNodeTarget,
  tmpDir,
  type MemoryCgroup,
  type NodeTarget,
  type NodeVersion,
  type TmpDir,
} from '@heapcap/testkit';

const MiB = 1024 * 1024;
const SESSION = { connectTimeoutMs: 10_000, commandTimeoutMs: 30_000 };

/** What a target exposes that an evaluation could leave behind: global names, process listeners. */
const FOOTPRINT = `JSON.stringify({ globals: Object.getOwnPropertyNames(globalThis).sort(),
  listeners: process.eventNames().map((n) => String(n) + ':' + process.listenerCount(n)).sort() })`;

async function footprint(wsUrl: string): Promise<string> {
  const s = await CdpSession.connect(wsUrl, SESSION);
  try {
    const r = await s.send('Runtime.evaluate', { expression: FOOTPRINT, returnByValue: true });
    return r.result.value as string;
  } finally {
    await s.close();
  }
}

void describe('preflight memory facts', () => {
  const targets: NodeTarget[] = [];
  after(async () => {
    await Promise.all(targets.map((t) => t.kill('SIGKILL')));
  });

  for (const [node, access] of [
    ['18', 'commandLineAPI'],
    ['system', 'getBuiltinModule'],
    ['22', 'getBuiltinModule'],
  ] as [NodeVersion, string][]) {
    void it(`ESM entry on Node ${node}: facts gathered (${access}), nothing left behind`, async () => {
      const t = await startNodeTarget({ node, script: fixturePath('heap-holder.mjs'), env: { HEAP_MB: '20' } });
      targets.push(t);
      const wsUrl = t.wsUrl!;
      const before = await footprint(wsUrl);
      const report = await preflightOnly({ endpoint: { kind: 'node', ws: wsUrl } });
      const m = report.headroom.memory;
      assert.equal(m.access, access);
      assert.deepEqual(m.warnings, []);
      assert.equal(report.facts.pid, t.pid);
      assert.ok(report.facts.heap.usedBytes > 20 * 1e6, `heap used ${report.facts.heap.usedBytes}`);
      assert.ok(m.rssBytes !== null && m.rssBytes > report.facts.heap.usedBytes, `rss ${m.rssBytes}`);
      assert.ok(m.maxRssBytes !== null && m.maxRssBytes >= m.rssBytes * 0.9, `maxRSS ${m.maxRssBytes}`);
      assert.ok(m.heapLimitBytes !== null && m.heapLimitBytes > 256 * MiB, `heap limit ${m.heapLimitBytes}`);
      assert.ok(m.host !== null && m.host.totalBytes > m.host.availableBytes && m.host.availableBytes > 0);
      const layout = memoryCgroupLayout();
      if (!('unsupported' in layout)) assert.equal(m.cgroup?.version, layout.version, 'the cgroup this machine mounts');
      assert.ok(report.headroom.estimate.extraBytes > report.facts.heap.usedBytes);
      assert.equal(await footprint(wsUrl), before, 'no globals or process listeners added by preflight');
    });
  }

  void describe('in a memory-limited cgroup', { skip: 'unsupported' in memoryCgroupLayout() ? 'needs root and a memory cgroup' : false }, () => {
    let group: MemoryCgroup | undefined;
    after(async () => {
      await Promise.all(targets.map((t) => t.kill('SIGKILL')));
      await group?.remove();
    });

    void it('an ESM target moved into a 300 MiB group reports that limit and the group it is set on', async () => {
      group = await createMemoryCgroup(300 * MiB);
      const t = await startNodeTarget({ node: 'system', script: fixturePath('heap-holder.mjs'), env: { HEAP_MB: '20' } });
      targets.push(t);
      await group.moveIn(t.pid);
      const report = await preflightOnly({ endpoint: { kind: 'node', ws: t.wsUrl! } });
      const cg = report.headroom.memory.cgroup;
      assert.equal(cg?.limitBytes, 300 * MiB);
      assert.equal(cg?.limitDir, group.dir);
      assert.ok(cg.dir === group.dir, `target's own group ${cg.dir}`);
      // Charges made before the move stay with the old group (see testkit/src/cgroup.ts).
      assert.ok(cg.usageBytes < 300 * MiB);
      assert.equal(report.headroom.binding?.source, 'cgroup');
      assert.equal(report.headroom.binding?.limitBytes, 300 * MiB);
    });
  });

  void describe('other cgroup layouts (files laid out in a directory, read by a real target)', () => {
    let dir!: TmpDir;
    let target!: NodeTarget;
    let session: CdpSession | undefined;
    before(async () => {
      dir = await tmpDir('heapcap-cgroup-layout');
      target = await startNodeTarget({ node: 'system', script: fixturePath('heap-holder.cjs'), env: { HEAP_MB: '5' } });
      targets.push(target);
      session = await CdpSession.connect(target.wsUrl!, SESSION);
    });
    after(async () => {
      await session?.close();
      await dir?.cleanup();
    });

    async function layout(files: Record<string, string>): Promise<string> {
      for (const [rel, text] of Object.entries(files)) {
        await mkdir(join(dir.path, rel, '..'), { recursive: true });
        await writeFile(join(dir.path, rel), text);
      }
      return join(dir.path, 'proc');
    }

    async function factsWith(procDir: string) {
      const endpoint = await resolveEndpoint({ kind: 'node', ws: target.wsUrl! }, { timeoutMs: 10_000 });
      if (session === undefined) throw new Error('no session');
      const facts = await gatherRuntimeFacts(session, endpoint);
      return { facts, memory: await gatherMemoryFacts(session, endpoint, procDir) };
    }

    void it('cgroup v2: the tightest limit is on the pod above the container; usage and inactive_file from that level', async () => {
      const cg = join(dir.path, 'v2');
      const proc = await layout({
        'proc/cgroup': '0::/kubepods/pod1/ctr\n',
        'proc/mountinfo': `29 1 0:26 / ${cg} rw,nosuid,nodev - cgroup2 cgroup2 rw,nsdelegate\n`,
        'v2/kubepods/pod1/ctr/memory.max': 'max\n',
        'v2/kubepods/pod1/ctr/memory.current': '300000000\n',
        'v2/kubepods/pod1/ctr/memory.stat': 'anon 250000000\nfile 50000000\ninactive_file 20000000\n',
        'v2/kubepods/pod1/memory.max': '1000000000\n',
        'v2/kubepods/pod1/memory.current': '600000000\n',
        'v2/kubepods/pod1/memory.stat': 'anon 500000000\ninactive_file 50000000\nactive_file 50000000\n',
        'v2/kubepods/memory.max': 'max\n',
        'v2/kubepods/memory.current': '900000000\n',
        'v2/memory.current': '1\n',
      });
      const { memory } = await factsWith(proc);
      assert.deepEqual(memory.cgroup, {
        version: 2,
        path: '/kubepods/pod1/ctr',
        dir: join(cg, 'kubepods/pod1/ctr'),
        limitBytes: 1_000_000_000,
        limitDir: join(cg, 'kubepods/pod1'),
        usageBytes: 600_000_000,
        inactiveFileBytes: 50_000_000,
      });
    });

    void it('cgroup v1 inside a container: the mount root is the container’s group; hierarchy walk stops at the mount', async () => {
      const cg = join(dir.path, 'v1');
      const proc = await layout({
        'proc/cgroup': '12:pids:/docker/abc\n4:memory:/docker/abc\n0::/\n',
        'proc/mountinfo': `35 31 0:32 /docker/abc ${cg} rw,relatime - cgroup cgroup rw,memory\n41 31 0:38 / ${join(dir.path, 'unified')} rw - cgroup2 cgroup2 rw\n`,
        'v1/memory.limit_in_bytes': '536870912\n',
        'v1/memory.usage_in_bytes': '400000000\n',
        'v1/memory.stat': 'cache 100000000\ninactive_file 1\ntotal_inactive_file 80000000\n',
      });
      const { facts, memory } = await factsWith(proc);
      assert.deepEqual(memory.cgroup, {
        version: 1,
        path: '/docker/abc',
        dir: cg,
        limitBytes: 536_870_912,
        limitDir: cg,
        usageBytes: 400_000_000,
        inactiveFileBytes: 80_000_000,
      });
      const report = decideHeadroom(facts, memory);
      assert.equal(report.binding?.source, 'cgroup');
      assert.equal(report.binding?.usageBytes, 320_000_000);
    });

    void it('cgroup v1 with no limit anywhere (the unlimited value) and unreadable files: no limit, no error', async () => {
      const cg = join(dir.path, 'v1-unlimited');
      const proc = await layout({
        'proc/cgroup': '4:memory:/\n',
        'proc/mountinfo': `35 31 0:32 / ${cg} rw - cgroup cgroup rw,memory\n`,
        'v1-unlimited/memory.limit_in_bytes': '9223372036854771712\n',
        'v1-unlimited/memory.usage_in_bytes': '123\n',
      });
      const { memory } = await factsWith(proc);
      assert.equal(memory.cgroup?.limitBytes, null);
      assert.equal(memory.cgroup?.usageBytes, 123);
      const none = await factsWith(join(dir.path, 'does-not-exist'));
      assert.equal(none.memory.cgroup, null);
      assert.deepEqual(none.memory.warnings, []);
    });
  });
});
