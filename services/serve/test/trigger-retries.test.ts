/**
 * `heapcap trigger --wait` on a dead target (issue 40, item 5), through `bin/heapcap` against a real
 * `bin/heapcap serve --dev`: the target is registered on a port that was bound and closed, so each attempt
 * fails with `target_unreachable` (connection refused) and BullMQ retries it after its backoff. While the
 * command waits it prints each failed attempt with its error and the time to the retry (not "waiting for a
 * worker"), and the outcome's total counts every attempt and the backoffs between them, not the last
 * attempt's few milliseconds.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { after, before, test } from 'node:test';
import { commandEnv, HEAPCAP_BIN, runHeapcap, startDevServe, startRedis, tmpDir, waitFor, type RedisServer, type RunningHeapcap, type TmpDir } from '@heapcap/testkit';

let redis: RedisServer;
let dir: TmpDir;
let serve: RunningHeapcap;
let deadPort: number;

/** A port nothing listens on: bound, then closed. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

before(async () => {
  [redis, dir, deadPort] = await Promise.all([startRedis(), tmpDir('heapcap-retries'), closedPort()]);
  serve = await startDevServe(dir.path, redis.url, { HEAPCAP_RATE_LIMIT: '1000000' });
  const added = await runHeapcap(['targets', 'add', 'dead-1', '--inspect', `127.0.0.1:${deadPort}`], { env: { HEAPCAP_API_URL: serve.url }, cwd: dir.path });
  assert.equal(added.code, 0, added.stderr);
});
after(async () => {
  await serve?.stop();
  await redis?.stop();
  await dir?.cleanup();
});

interface FailedAttempt {
  attempt: number;
  of: number;
  code: string;
  message: string;
  startedAt: string;
  failedAt: string;
  nextAttemptAt: string | null;
}

void test('trigger --wait on a dead target shows each failed attempt with its error while it waits, and the real total', async () => {
  const child = spawn(HEAPCAP_BIN, ['trigger', 'dead-1', '--wait', '120', '--json'], { cwd: dir.path, env: commandEnv({ HEAPCAP_API_URL: serve.url }), stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  let stdout = '';
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  let exited: number | null | undefined;
  const done = new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve((exited = code)));
  });
  // The engine's message: `cannot reach an inspector at 127.0.0.1:PORT (ECONNREFUSED)`.
  const refused = (message: string): boolean => message.includes(`127.0.0.1:${deadPort}`) && message.includes('ECONNREFUSED');
  // While the command still waits (it has not exited), the first failed attempt is on its stderr, with its error.
  const attemptLine = new RegExp(`attempt 1 of 3 failed: target_unreachable \\([^\\n]*127\\.0\\.0\\.1:${deadPort} \\(ECONNREFUSED\\)\\); retrying in \\d+ s`);
  await waitFor(
    () => {
      if (attemptLine.test(stderr)) return true;
      if (exited !== undefined) throw new Error(`the command exited with ${exited} first; stderr: ${stderr}`);
      return undefined;
    },
    { timeoutMs: 60_000, intervalMs: 50, what: 'the first failed attempt on stderr while waiting' },
  );
  assert.equal(exited, undefined, 'the attempt line came while the command was still waiting');
  assert.equal(await done, 3, `exit code of a target problem; stderr: ${stderr}`);
  assert.match(stderr, /attempt 2 of 3 failed: target_unreachable \(/, stderr);

  const { capture } = JSON.parse(stdout) as { capture: { status: string; error: { code: string; message: string }; attempts: number; timings: Record<string, number>; failedAttempts: FailedAttempt[] } };
  assert.equal(capture.status, 'failed');
  assert.equal(capture.error.code, 'target_unreachable');
  assert.equal(capture.attempts, 3);
  // Every attempt is listed with its error; the retried ones say when the next was due, the last one that none followed.
  assert.deepEqual(
    capture.failedAttempts.map((f) => [f.attempt, f.of, f.code, refused(f.message), f.nextAttemptAt === null]),
    [
      [1, 3, 'target_unreachable', true, false],
      [2, 3, 'target_unreachable', true, false],
      [3, 3, 'target_unreachable', true, true],
    ],
  );
  const delays = capture.failedAttempts.filter((f) => f.nextAttemptAt !== null).map((f) => Date.parse(f.nextAttemptAt!) - Date.parse(f.failedAt));
  // BullMQ's exponential backoff from 5 s: 5 s, then 10 s.
  assert.deepEqual(delays, [5_000, 10_000]);
  // The next attempt started no earlier than it was due.
  for (let i = 1; i < capture.failedAttempts.length; i++) {
    assert.ok(Date.parse(capture.failedAttempts[i]!.startedAt) >= Date.parse(capture.failedAttempts[i - 1]!.nextAttemptAt!), `attempt ${i + 1} started after its backoff`);
  }
  // The total runs from the first attempt's start to the end: at least the backoffs, not the last attempt's milliseconds.
  const sum = delays.reduce((x, y) => x + y, 0);
  assert.ok(capture.timings['total']! >= sum, `total ${capture.timings['total']} ms ≥ the retry delays ${sum} ms`);
  assert.ok(capture.timings['connect']! < sum, 'the phases stay the last attempt’s');
});
