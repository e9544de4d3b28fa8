/**
 * `heapcap capture` (bin/heapcap, as users run it) lowers every thread of its
 * own to HEAPCAP_NICE (default 10), so that a paused target on the same host
 * gets the CPU first; `0` leaves it alone. Observed from outside, in
 * /proc/PID/task/TID/stat, while the command samples a real Node target.
 *
 * (The rest of the suite runs with HEAPCAP_NICE=0, scripts/run-tests.mjs: at
 * nice 10 beside the CPU hogs of a loaded CI machine every command would crawl.)
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fixturePath, HEAPCAP_BIN, startNodeTarget, threadNiceValues, tmpDir, waitFor, type NodeTarget, type TmpDir } from '@heapcap/testkit';

/** Whether process `pid` holds an established TCP connection to `port` (its sockets' inodes in /proc/net/tcp). */
function connectedTo(pid: number, port: number): boolean {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (m !== null) inodes.add(m[1] as string);
    } catch {
      // Closed meanwhile.
    }
  }
  return readFileSync('/proc/net/tcp', 'utf8')
    .split('\n')
    .slice(1)
    .some((line) => {
      const f = line.trim().split(/\s+/);
      return f[3] === '01' && Number.parseInt((f[2] ?? ':').split(':')[1] ?? '', 16) === port && inodes.has(f[9] ?? '');
    });
}

void describe('heapcap capture yields the CPU to its target', { timeout: 180_000 }, () => {
  let work: TmpDir;
  let target: NodeTarget;
  before(async () => {
    work = await tmpDir('heapcap-nice');
    target = await startNodeTarget({ script: fixturePath('heap-holder.cjs'), env: { HEAP_MB: '2' } });
  });
  after(async () => {
    await target?.kill();
    await work?.cleanup();
  });

  for (const [setting, expected] of [
    [undefined, 10],
    ['0', 0],
  ] as const) {
    void test(`HEAPCAP_NICE ${setting ?? 'unset'}: every thread of the command at nice ${expected}`, async () => {
      const env: NodeJS.ProcessEnv = { ...process.env };
      delete env.HEAPCAP_NICE;
      delete env.NODE_OPTIONS;
      delete env.NODE_TEST_CONTEXT;
      if (setting !== undefined) env.HEAPCAP_NICE = setting;
      // A sampling profile keeps the command busy with the target for a while: long enough to look at it.
      const child = spawn(HEAPCAP_BIN, ['capture', '--node', `127.0.0.1:${target.port}`, '--sampling', '60s', '--out', join(work.path, `out-${expected}`), '--quiet'], { env, stdio: ['ignore', 'ignore', 'pipe'] });
      let stderr = '';
      child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
      const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
      try {
        const pid = child.pid ?? assert.fail('not started');
        // bin/heapcap is a shell script that execs node: wait for node, connected to the target's inspector
        // (the priority is set before it connects).
        await waitFor(async () => readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('heapcap.mjs') && connectedTo(pid, target.port ?? assert.fail("no inspector port")), {
          timeoutMs: 120_000,
          what: 'the command to be connected to the target',
        });
        const nice = threadNiceValues(pid);
        assert.ok(nice.length >= 4, `node has its threads (${nice.length})`);
        assert.deepEqual([...new Set(nice)], [expected], `nice of every thread: ${nice.join(' ')}`);
        // The target itself is left alone.
        assert.deepEqual([...new Set(threadNiceValues(target.pid))], [0]);
      } finally {
        child.kill('SIGINT');
        await exited;
      }
      assert.doesNotMatch(stderr, /internal/);
    });
  }
});
