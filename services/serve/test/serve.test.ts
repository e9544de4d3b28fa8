import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { after, before, test } from 'node:test';
import { fixturePath, freePort, startNodeTarget, startRedis, tmpDir, waitFor, type NodeTarget, type RedisServer, type TmpDir } from '@heapcap/testkit';
import { statusMain, triggerMain } from '@heapcap/cli';

const CLI = fileURLToPath(new URL('../src/heapcap.ts', import.meta.url));

let redis: RedisServer;
let dir: TmpDir;
let target: NodeTarget;

before(async () => {
  redis = await startRedis();
  dir = await tmpDir('heapcap-serve');
  target = await startNodeTarget({ script: fixturePath('heap-holder.cjs'), env: { HEAP_MB: '5' } });
});
after(async () => {
  await target?.kill();
  await redis?.stop();
  await dir?.cleanup();
});

/** `heapcap ARGS` as a child process with only HEAPCAP_* variables we set. */
function heapcap(args: string[], env: Record<string, string>): { child: ChildProcess; output: () => string; exited: Promise<number | null> } {
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('HEAPCAP_'))) as Record<string, string>;
  const child = spawn(process.execPath, ['--import', 'tsx', CLI, ...args], { env: { ...base, HEAPCAP_LOG_LEVEL: 'warn', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const reap = (): void => {
    child.kill('SIGKILL');
  };
  process.once('exit', reap);
  let out = '';
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  void exited.then(() => process.off('exit', reap));
  return { child, output: () => out, exited };
}

function collect(): { stream: PassThrough; text: () => string } {
  const stream = new PassThrough();
  let text = '';
  stream.on('data', (d: Buffer) => (text += d.toString()));
  return { stream, text: () => text };
}

async function exitWithin<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([p, new Promise<never>((_, rej) => (timer = setTimeout(() => rej(new Error(`${what} did not exit within ${ms} ms`)), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

void test('serve refuses to start without a tokens file unless --dev', async () => {
  const run = heapcap(['serve'], { HEAPCAP_REDIS_URL: redis.url });
  assert.equal(await exitWithin(run.exited, 20_000, 'serve'), 2);
  assert.match(run.output(), /HEAPCAP_TOKENS_FILE is not set/);
});

void test('serve says how to start Redis when it cannot reach it', async () => {
  const port = await freePort();
  const run = heapcap(['serve', '--dev'], { HEAPCAP_REDIS_URL: `redis://127.0.0.1:${port}` });
  assert.equal(await exitWithin(run.exited, 20_000, 'serve'), 1);
  assert.match(run.output(), /Redis is not reachable at redis:\/\/127\.0\.0\.1:\d+/);
  assert.match(run.output(), /redis-server --daemonize yes/);
  assert.match(run.output(), /docker compose up -d redis/);
});

void test('serve --dev: api + worker in one process; trigger --wait and status through REST; SIGTERM stops it', async () => {
  const port = await freePort();
  const targetsFile = join(dir.path, 'heapcap.targets.yaml');
  await writeFile(targetsFile, `targets:\n  - id: demo\n    kind: node\n    inspect: 127.0.0.1:${target.port}\n    labels: { service: demo }\n`);
  const run = heapcap(['serve', '--dev'], {
    HEAPCAP_REDIS_URL: redis.url,
    HEAPCAP_PORT: String(port),
    HEAPCAP_STORAGE: `file://${join(dir.path, 'captures')}`,
    HEAPCAP_TARGETS_FILE: targetsFile,
  });
  try {
    await waitFor(() => {
      if (run.child.exitCode !== null) throw new Error(`serve exited: ${run.output()}`);
      return run.output().includes('heapcap serving on');
    }, { timeoutMs: 30_000, what: 'serve to listen' });
    assert.match(run.output(), /AUTHENTICATION IS OFF/);
    const env = { HEAPCAP_API_URL: `http://127.0.0.1:${port}` };
    const out = collect();
    const err = collect();
    const code = await triggerMain(['demo', '--wait', '60', '--reason', 'e2e', '--json'], env, { stdout: out.stream, stderr: err.stream });
    assert.equal(code, 0, err.text());
    const body = JSON.parse(out.text()) as { capture: { id: string; status: string; timings: Record<string, number>; artifact: { location: string } } };
    assert.equal(body.capture.status, 'succeeded');
    assert.ok(body.capture.timings['generate']! >= 0);
    assert.ok(body.capture.artifact.location.startsWith(join(dir.path, 'captures')));
    const s = collect();
    assert.equal(await statusMain([body.capture.id], env, { stdout: s.stream, stderr: collect().stream }), 0);
    assert.match(s.text(), new RegExp(`capture ${body.capture.id}  target demo  succeeded`));
    assert.match(s.text(), /timings {3}queued \d+ ms, connect/);
    const missing = collect();
    assert.equal(await statusMain(['NOPE'], env, { stdout: collect().stream, stderr: missing.stream }), 2);
    assert.match(missing.text(), /not_found/);
    const unknown = collect();
    assert.equal(await triggerMain(['no-such-target'], env, { stdout: collect().stream, stderr: unknown.stream }), 2);
    run.child.kill('SIGTERM');
    assert.equal(await exitWithin(run.exited, 30_000, 'serve after SIGTERM'), 0);
  } finally {
    run.child.kill('SIGKILL');
  }
});

void test('trigger and status explain an unreachable API', async () => {
  const port = await freePort();
  const err = collect();
  assert.equal(await triggerMain(['demo'], { HEAPCAP_API_URL: `http://127.0.0.1:${port}` }, { stdout: collect().stream, stderr: err.stream }), 1);
  assert.match(err.text(), /api_unreachable: cannot reach the heapcap API .*is `heapcap serve` running/);
});
