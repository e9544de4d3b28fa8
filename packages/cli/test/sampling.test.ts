/**
 * `heapcap capture --sampling` through bin/heapcap against a real Node target
 * that allocates: the `.heapprofile` is the SamplingHeapProfile DevTools loads
 * (head, samples naming the allocating function), the target lives on, a
 * cancelled run stops the target's profiler itself and leaves no file, and bad
 * durations are refused before anything touches the target.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { after, before, test } from 'node:test';
import { commandEnv, fixturePath, HEAPCAP_BIN, runHeapcap, samplingProfilerRunning, startCdpProxy, startNodeTarget, tmpDir, waitFor, type NodeTarget, type TmpDir } from '@heapcap/testkit';
import type { SamplingManifest } from '@heapcap/storage/file';
import { EXIT } from '../src/exit-codes.ts';
import { alive, listFiles } from './cli-harness.ts';

interface ProfileNode {
  callFrame: { functionName: string };
  selfSize: number;
  id: number;
  children: ProfileNode[];
}

let target: NodeTarget;
let work: TmpDir;

before(async () => {
  target = await startNodeTarget({ script: fixturePath('allocator.cjs') });
  work = await tmpDir('heapcap-cli-sampling');
});
after(async () => {
  await target?.kill();
  await work?.cleanup();
});

/** Every function name in the profile's call tree. */
function functionNames(head: ProfileNode): Set<string> {
  const names = new Set<string>();
  const stack = [head];
  for (let node = stack.pop(); node !== undefined; node = stack.pop()) {
    names.add(node.callFrame.functionName);
    stack.push(...node.children);
  }
  return names;
}

void test('capture --sampling 2s stores a .heapprofile DevTools can load; the target lives on and is left not sampling', { timeout: 180_000 }, async () => {
  const out = join(work.path, 'ok');
  const res = await runHeapcap(['capture', '--node', `127.0.0.1:${target.port}`, '--sampling', '2s', '--out', out, '--json'], { timeoutMs: 150_000 });
  assert.equal(res.code, 0, `exit code; stderr:\n${res.stderr}`);
  const m = JSON.parse(res.stdout) as SamplingManifest;
  assert.equal(m.kind, 'sampling-profile');
  assert.match(m.artifact.key, /\.heapprofile\.gz$/);
  assert.deepEqual(await listFiles(out), [m.artifact.key, m.artifact.key.replace(/\.heapprofile\.gz$/, '.manifest.json')].sort(), 'the profile and its manifest, nothing else (no summary)');
  const profile = JSON.parse(gunzipSync(await readFile(m.artifact.location)).toString('utf8')) as { head: ProfileNode; samples: { size: number; nodeId: number }[] };
  assert.equal(profile.head.callFrame.functionName, '(root)');
  assert.ok(profile.samples.length > 0, 'samples of the allocations still alive');
  assert.equal(m.profile.samples, profile.samples.length);
  assert.ok(functionNames(profile.head).has('allocateRetainedBlocks'), 'the stacks name the function that allocates');
  assert.equal(m.options.samplingSeconds, 2);
  assert.equal(m.options.samplingIntervalBytes, 32_768);
  assert.ok(m.timings.sampling >= 2000 && m.timings.sampling < 2500, `sampling phase ${m.timings.sampling} ms`);
  const phases = m.timings.connect + m.timings.preflight + m.timings.start + m.timings.sampling + m.timings.stop + m.timings.sink;
  assert.ok(Math.abs(phases - m.timings.total) < 1, 'phases add up to the total');
  assert.equal(m.runtime.pid, target.pid);
  assert.ok(alive(target.pid), 'the target is alive');
  assert.equal(await samplingProfilerRunning(target.wsUrl!), false, 'nothing left sampling in the target');
});

void test('SIGINT mid-sampling: heapcap sends stopSampling itself, exits 130 and leaves no file', { timeout: 180_000 }, async () => {
  const proxy = await startCdpProxy(target.wsUrl!);
  const out = join(work.path, 'cancelled');
  const child = spawn(HEAPCAP_BIN, ['capture', '--ws', proxy.url, '--sampling', '60s', '--out', out], { env: commandEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  try {
    // The bundle may be built on first use: allow for it.
    await waitFor(async () => proxy.calls('HeapProfiler.startSampling') === 1 && (await samplingProfilerRunning(target.wsUrl!)), { timeoutMs: 120_000, intervalMs: 100, what: 'heapcap to start sampling' });
    child.kill('SIGINT');
    assert.equal(await exited, EXIT.cancelled, `exit code; stderr:\n${stderr}`);
    assert.match(stderr, /^cancelled: /m);
    assert.equal(proxy.calls('HeapProfiler.stopSampling'), 1, 'heapcap stopped the profiler itself, not only by dropping the session');
    assert.equal(await samplingProfilerRunning(target.wsUrl!), false, 'the target is not sampling any more');
    assert.deepEqual(await listFiles(out), [], 'no profile, no manifest, no temp file');
    assert.ok(alive(target.pid));
  } finally {
    child.kill('SIGKILL');
    await proxy.close();
  }
});

void test('bad sampling input is refused with invalid_input before the target is touched', { timeout: 120_000 }, async () => {
  const cases: [string[], RegExp][] = [
    [['--sampling', '0s'], /--sampling "0s" must be whole seconds from 1s to 600s/],
    [['--sampling', '1500ms'], /--sampling "1500ms" must be whole seconds/],
    [['--sampling', '11m'], /--sampling "11m" must be whole seconds from 1s to 600s/],
    [['--sampling', '2s', '--gc'], /--gc is for heap snapshots, not with --sampling/],
    [['--sampling', '2s', '--sampling-interval', '100'], /--sampling-interval "100" must be at least 1024 bytes/],
    [['--sampling-interval', '4096'], /--sampling-interval goes with --sampling DURATION/],
  ];
  for (const [args, message] of cases) {
    const out = join(work.path, 'bad');
    const res = await runHeapcap(['capture', '--node', `127.0.0.1:${target.port}`, ...args, '--out', out]);
    assert.equal(res.code, EXIT.usage, `${args.join(' ')}: exit code; stderr:\n${res.stderr}`);
    assert.match(res.stderr, /^invalid_input: /);
    assert.match(res.stderr, message);
    assert.deepEqual(await listFiles(out), []);
  }
});

void test('the target dies mid-sampling: target_closed at once (not after the window), exit 3, no file', { timeout: 180_000 }, async () => {
  const doomed = await startNodeTarget({ script: fixturePath('allocator.cjs') });
  const out = join(work.path, 'closed');
  const child = spawn(HEAPCAP_BIN, ['capture', '--node', `127.0.0.1:${doomed.port}`, '--sampling', '120s', '--out', out], { env: commandEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  try {
    await waitFor(() => samplingProfilerRunning(doomed.wsUrl!), { timeoutMs: 120_000, intervalMs: 100, what: 'heapcap to start sampling' });
    const killedAt = performance.now();
    await doomed.kill('SIGKILL');
    assert.equal(await exited, EXIT.target, `exit code; stderr:\n${stderr}`);
    assert.ok(performance.now() - killedAt < 15_000, `the window is not waited out (${Math.round(performance.now() - killedAt)} ms; stderr: ${stderr})`);
    assert.match(stderr, /^target_closed: /m);
    assert.doesNotMatch(stderr, /could not stop the sampling profiler/, 'a dead target has no profiler left to stop');
    assert.deepEqual(await listFiles(out), []);
  } finally {
    child.kill('SIGKILL');
    await doomed.kill();
  }
});
