// `heapcap capture --dry-run` on each target kind (node, node-pid, chromium):
// prints the preflight facts and the decision, exits 0 (6 when it would be
// refused), and takes nothing: no artifact, and the target's peak RSS does not
// move (a snapshot of these heaps raises it by hundreds of MiB).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { filesUnder, maxRss as maxRssOf } from './probes.ts';
import { runCli as runCliWithin, type CliRun } from './run-cli.ts';
import {
  fixturePath,
  freePort,
  peakRssKb,
  rssKb,
  startChromium,
  startNodeTarget,
  startPageServer,
  tmpDir,
  type Chromium,
  type NodeTarget,
  type PageServer,
  type TmpDir,
} from '@heapcap/testkit';

const MiB = 1024 * 1024;

const runCli = (args: string[]): Promise<CliRun> => runCliWithin(args, 60_000);

/** The lines every dry run prints, whatever the target. */
function assertFactsPrinted(stdout: string): void {
  assert.match(stdout, /^dry run: .*; nothing taken$/m);
  assert.match(stdout, /^ {2}heap used +\d+\.\d MiB/m);
  assert.match(stdout, /^ {2}estimate +\+\d+\.\d MiB during the snapshot \((node-v8-1[12]|chromium): [\d.]+ × heap \+ [\d.]+ MiB\)/m);
  assert.match(stdout, /^ {2}decision +(capture|refuse)/m);
}

void describe('heapcap capture --dry-run', () => {
  let out!: TmpDir;
  const targets: NodeTarget[] = [];
  before(async () => {
    out = await tmpDir('heapcap-dry-run-out');
  });
  after(async () => {
    await Promise.all(targets.map((t) => t.kill('SIGKILL')));
    await out?.cleanup();
  });

  void it('node: prints facts (rss, cgroup, host) and "capture (fits)", takes nothing', async () => {
    const t = await startNodeTarget({ node: 'system', script: fixturePath('heap-holder.cjs'), env: { HEAP_MB: '40' } });
    targets.push(t);
    const peakBefore = await maxRssOf(t.wsUrl!);
    const run = await runCli(['--node', `127.0.0.1:${t.port}`, '--out', out.path, '--dry-run']);
    assert.equal(run.code, 0, run.stderr);
    assertFactsPrinted(run.stdout);
    assert.match(run.stdout, new RegExp(`^dry run: node 127\\.0\\.0\\.1:${t.port} \\(node v20\\.[\\d.]+, V8 11\\.3[\\d.]+-node\\.\\d+, pid ${t.pid}\\)`, 'm'));
    assert.match(run.stdout, /^ {2}rss +\d+\.\d MiB \(peak so far \d+\.\d MiB\)$/m);
    assert.match(run.stdout, /^ {2}host +\d+\.\d MiB available of \d+\.\d MiB \(target\)$/m);
    assert.match(run.stdout, /^ {2}facts via +getBuiltinModule$/m);
    assert.match(run.stdout, /^ {2}decision +capture \(fits\)$/m);
    assert.deepEqual(await filesUnder(out.path), []);
    const grew = (await maxRssOf(t.wsUrl!)) - peakBefore;
    assert.ok(grew < 32 * MiB, `target peak RSS grew by ${grew} bytes`);
  });

  void it('node with --memory-limit below the estimate: exit 6, JSON decision "refuse" with the configured limit binding; --force turns it into "capture"', async () => {
    const t = targets[0]!;
    const run = await runCli(['--node', `127.0.0.1:${t.port}`, '--out', out.path, '--dry-run', '--memory-limit', '256', '--json']);
    assert.equal(run.code, 6, run.stderr);
    const r = JSON.parse(run.stdout) as { dryRun: boolean; verdict: string; action: string; forced: boolean; binding: { source: string; limitBytes: number }; estimate: { extraBytes: number } };
    assert.equal(r.dryRun, true);
    assert.deepEqual([r.verdict, r.action, r.forced], ['exceeds', 'refuse', false]);
    assert.deepEqual([r.binding.source, r.binding.limitBytes], ['configured', 256 * MiB]);
    const forced = await runCli(['--node', `127.0.0.1:${t.port}`, '--out', out.path, '--dry-run', '--memory-limit', '256', '--force']);
    assert.equal(forced.code, 0, forced.stderr);
    assert.match(forced.stdout, /^ {2}decision +capture, forced/m);
    assert.deepEqual(await filesUnder(out.path), []);
  });

  void it('node-pid: opens the inspector with SIGUSR1, prints the facts of that pid, takes nothing', async () => {
    const port = await freePort();
    const t = await startNodeTarget({ node: 'system', script: fixturePath('heap-holder.cjs'), env: { HEAP_MB: '40' }, inspect: false, nodeFlags: [`--inspect-port=127.0.0.1:${port}`] });
    targets.push(t);
    const run = await runCli(['--pid', String(t.pid), '--port', String(port), '--out', out.path, '--dry-run']);
    assert.equal(run.code, 0, run.stderr);
    assertFactsPrinted(run.stdout);
    assert.match(run.stdout, new RegExp(`^dry run: node pid ${t.pid} .*pid ${t.pid}\\); nothing taken$`, 'm'));
    assert.match(run.stdout, /^ {2}rss +\d+\.\d MiB/m);
    assert.deepEqual(await filesUnder(out.path), []);
    await t.waitForStderr(/Debugger listening on ws:\/\/\S+/, 5_000);
    // The dry run closed the inspector it opened: read the peak (VmHWM, the same
    // high-water mark as resourceUsage().maxRSS) from /proc instead.
    const peak = peakRssKb(t.pid) * 1024;
    const rssNow = rssKb(t.pid) * 1024;
    // 40 MiB of heap: a snapshot would have pushed the peak ~300 MiB above the current RSS.
    assert.ok(peak - rssNow < 64 * MiB, `peak ${peak} vs rss ${rssNow}`);
  });

  void describe('chromium', () => {
    let browser: Chromium | undefined;
    let server: PageServer | undefined;
    before(async () => {
      server = await startPageServer();
      browser = await startChromium();
      await browser.openPage(server.url('/app/leaky?mb=20'));
    });
    after(async () => {
      await browser?.close();
      await server?.close();
    });

    void it('prints what the renderer reports, the capturing host, the chromium model; takes nothing', async () => {
      const run = await runCli(['--chromium', `127.0.0.1:${browser!.port}`, '--url-pattern', 'leaky', '--out', out.path, '--dry-run']);
      assert.equal(run.code, 0, run.stderr);
      assertFactsPrinted(run.stdout);
      assert.match(run.stdout, /^dry run: chromium 127\.0\.0\.1:\d+ page "heapcap test page" \(chromium .*Chrom.*, V8 \d+\.\d+[\d.]*\); nothing taken$/m);
      assert.match(run.stdout, /^ {2}heap used +\d+\.\d MiB \(V8 heap limit \d+\.\d MiB\)$/m);
      assert.match(run.stdout, /^ {2}host +\d+\.\d MiB available of \d+\.\d MiB \(capturing host\)$/m);
      assert.match(run.stdout, /^ {2}facts via +browser$/m);
      assert.match(run.stdout, /\(chromium: /);
      assert.match(run.stdout, /^ {2}note +a page cannot see its renderer process RSS/m);
      assert.deepEqual(await filesUnder(out.path), []);
    });

    void it('with a configured limit the page cannot fit: exit 6, refused', async () => {
      const run = await runCli(['--chromium', `127.0.0.1:${browser!.port}`, '--url-pattern', 'leaky', '--out', out.path, '--dry-run', '--memory-limit', '200']);
      assert.equal(run.code, 6, run.stderr);
      assert.match(run.stdout, /^ {2}limit +configured: .* \(binding\)$/m);
      assert.match(run.stdout, /^ {2}decision +refuse: insufficient_headroom/m);
      assert.deepEqual(await filesUnder(out.path), []);
    });
  });
});
