// The headroom gate against the kernel: a Node 20 target (HEAP_MB=60, ~67 MB
// heap used; its snapshot costs ~450 MB of extra RSS) moved into a cgroup v1/v2
// memory group. 160 MiB → refused before anything heavy (engine and CLI);
// --force → the snapshot is attempted and the kernel OOM-kills the target,
// which the capture reports as target_closed; 2 GiB → captured, the manifest
// records the estimate and the target's actual peak.
//
// Moving a pid does not move the memory it already has (testkit/src/cgroup.ts),
// so the group's limit bounds exactly what the target allocates afterwards:
// the snapshot. 160 MiB is far below ~450 MB (killed for sure), 2 GiB far above.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { filesUnder, maxRss as maxRssOf } from './probes.ts';
import { runCli as runCliWithin, type CliRun } from './run-cli.ts';
import { captureHeapSnapshot, CaptureError } from '../src/index.ts';
import {
  createMemoryCgroup,
  fixturePath,
  memoryCgroupLayout,
  startNodeTarget,
  tmpDir,
  type MemoryCgroup,
  type NodeTarget,
  type TmpDir,
} from '@heapcap/testkit';

const MiB = 1024 * 1024;
const LOW = 160 * MiB;
const HIGH = 2048 * MiB;
const HEAP_MB = '60';

const runCli = (args: string[]): Promise<CliRun> => runCliWithin(args, 180_000);

const support = memoryCgroupLayout();

void describe('headroom gate in a memory-limited cgroup', { skip: 'unsupported' in support ? `needs a writable memory cgroup: ${support.unsupported}` : false }, () => {
  const targets: NodeTarget[] = [];
  const groups: MemoryCgroup[] = [];
  let out!: TmpDir;
  let low!: MemoryCgroup;
  let target!: NodeTarget;

  before(async () => {
    out = await tmpDir('heapcap-headroom-out');
    low = await createMemoryCgroup(LOW);
    groups.push(low);
    target = await startNodeTarget({ node: 'system', script: fixturePath('heap-holder.cjs'), env: { HEAP_MB } });
    targets.push(target);
    await low.moveIn(target.pid);
  });
  after(async () => {
    await Promise.all(targets.map((t) => t.kill('SIGKILL')));
    for (const g of groups) await g.remove();
    await out?.cleanup();
  });

  void it('refuses in preflight with insufficient_headroom and the numbers; no snapshot started, the target unchanged', async () => {
    const peakBefore = await maxRssOf(target.wsUrl!);
    let consumed = false;
    await assert.rejects(
      captureHeapSnapshot({ endpoint: { kind: 'node', inspect: `127.0.0.1:${target.port}` } }, async () => {
        consumed = true;
      }),
      (err: unknown) => {
        assert.ok(err instanceof CaptureError);
        assert.equal(err.code, 'insufficient_headroom');
        assert.equal(err.phase, 'preflight');
        const d = err.details ?? {};
        assert.equal(d['constraint'], 'cgroup');
        assert.equal(d['limitBytes'], LOW);
        assert.ok((d['heapUsedBytes'] as number) > 60e6, `heap used ${String(d['heapUsedBytes'])}`);
        assert.ok((d['estimateBytes'] as number) > (d['availableBytes'] as number));
        assert.match(err.hint ?? '', /raise the target's memory limit.*replica.*force/);
        return true;
      },
    );
    assert.equal(consumed, false, 'the sink never saw a stream');
    // Unchanged and alive: it answers on its command channel, its peak RSS did not move,
    // and the kernel saw no allocation against the limit (a snapshot would have hit it).
    assert.equal(await target.request('ping', 'ERR ', 10_000), 'ERR ping');
    const grew = (await maxRssOf(target.wsUrl!)) - peakBefore;
    assert.ok(grew < 32 * MiB, `target peak RSS grew by ${grew} bytes`);
    const stats = await low.stats();
    assert.equal(stats.limitHits, 0);
    assert.equal(stats.oomKills, 0);
    assert.ok(stats.maxUsageBytes === null || stats.maxUsageBytes < 48 * MiB, `group max usage ${stats.maxUsageBytes}`);
  });

  void it('the CLI refuses too: exit 6, the error with its numbers as JSON, nothing stored', async () => {
    const run = await runCli(['--node', `127.0.0.1:${target.port}`, '--out', out.path, '--json']);
    assert.equal(run.code, 6, run.stderr);
    const { error } = JSON.parse(run.stdout) as { error: { code: string; phase: string; details: Record<string, unknown> } };
    assert.equal(error.code, 'insufficient_headroom');
    assert.equal(error.phase, 'preflight');
    assert.equal(error.details['limitBytes'], LOW);
    assert.match(run.stderr, /^insufficient_headroom: the snapshot needs about \d+\.\d MiB more memory/m);
    assert.deepEqual(await filesUnder(out.path), []);
    assert.equal((await low.stats()).limitHits, 0);
  });

  void it('--force attempts it: the kernel OOM-kills the target and the capture fails with target_closed, recorded as forced', async () => {
    const run = await runCli(['--node', `127.0.0.1:${target.port}`, '--out', out.path, '--json', '--force']);
    assert.equal(run.code, 3, run.stderr);
    const { error } = JSON.parse(run.stdout) as { error: { code: string; phase: string; details: Record<string, unknown> } };
    assert.equal(error.code, 'target_closed');
    assert.ok(['generate', 'serialize'].includes(error.phase), `phase ${error.phase}`);
    assert.equal(error.details['forced'], true);
    assert.equal(error.details['limitBytes'], LOW);
    const exit = await target.waitExit(30_000);
    assert.equal(exit.signal, 'SIGKILL');
    assert.ok((await low.stats()).oomKills >= 1, 'the kernel OOM-killed it');
    assert.deepEqual(await filesUnder(out.path), [], 'no partial artifact');
  });

  void it('with a limit that leaves room: captured, the manifest records the estimate, the decision and the actual peak', async () => {
    const high = await createMemoryCgroup(HIGH);
    groups.push(high);
    const roomy = await startNodeTarget({ node: 'system', script: fixturePath('heap-holder.cjs'), env: { HEAP_MB } });
    targets.push(roomy);
    await high.moveIn(roomy.pid);
    const run = await runCli(['--node', `127.0.0.1:${roomy.port}`, '--out', out.path, '--json']);
    assert.equal(run.code, 0, run.stderr);
    const m = JSON.parse(run.stdout) as {
      artifact: { location: string };
      estimate: { extraBytes: number; heapUsedBytes: number };
      decision: { verdict: string; action: string; binding: { source: string; limitBytes: number; availableBytes: number } };
      forced: boolean;
      preflight: { cgroup: { limitBytes: number } };
      peak: { estimateExtraBytes: number; rssBeforeBytes: number; actualPeakBytes: number | null; actualExtraBytes: number | null; errorRatio: number | null };
    };
    assert.deepEqual([m.decision.verdict, m.decision.action, m.forced], ['fits', 'capture', false]);
    assert.equal(m.decision.binding.source, 'cgroup');
    assert.equal(m.decision.binding.limitBytes, HIGH);
    assert.equal(m.preflight.cgroup.limitBytes, HIGH);
    assert.ok(m.estimate.extraBytes > 5 * m.estimate.heapUsedBytes && m.estimate.extraBytes < m.decision.binding.availableBytes);
    assert.equal(m.peak.estimateExtraBytes, m.estimate.extraBytes);
    assert.ok(m.peak.actualPeakBytes !== null && m.peak.actualExtraBytes !== null, JSON.stringify(m.peak));
    assert.ok(m.peak.actualExtraBytes > 200e6, `actual extra ${m.peak.actualExtraBytes}`);
    assert.ok(m.peak.errorRatio !== null && Math.abs(m.peak.errorRatio) < 0.5, `estimate vs actual ${m.peak.errorRatio}`);
    // The kernel charged the snapshot to the group: its peak agrees with the target's own.
    const stats = await high.stats();
    assert.equal(stats.oomKills, 0);
    assert.ok(stats.maxUsageBytes === null || stats.maxUsageBytes > 0.5 * m.peak.actualExtraBytes, `group max usage ${stats.maxUsageBytes}`);
    // The manifest on disk is the one printed.
    const manifestPath = m.artifact.location.replace(/^file:\/\//, '').replace(/\.heapsnapshot(\.gz)?$/, '.manifest.json');
    const stored = JSON.parse(await readFile(manifestPath, 'utf8')) as typeof m;
    assert.deepEqual(stored.peak, m.peak);
    assert.equal(stored.estimate.extraBytes, m.estimate.extraBytes);
  });
});
