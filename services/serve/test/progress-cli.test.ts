/**
 * Progress while the target is paused, as typed (bin/heapcap): `capture` and
 * `trigger --wait` (against `bin/heapcap serve --dev`) redraw the phase with
 * its seconds and the total on a terminal (a pseudo-terminal from util-linux
 * `script`), with MiB and MiB/s once the snapshot's bytes flow; off a terminal
 * they print plain lines without escape codes. The target is stopped (SIGSTOP)
 * inside `generate` and `serialize` until the output shows what is asserted,
 * so the phases last as long as the test needs on a fast or a slow machine.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { commandEnv, fixturePath, HEAPCAP_BIN, runHeapcap, startCdpProxy, startDevServe, startNodeTarget, startRedis, tmpDir, waitFor, type CdpProxy, type NodeTarget, type RedisServer, type RunningHeapcap, type TmpDir } from '@heapcap/testkit';

let redis: RedisServer;
let target: NodeTarget;
let dir: TmpDir;
let serve: RunningHeapcap;
/** Between the worker and the registered target: stops the target at the first snapshot chunk once armed. */
let chunkStop: CdpProxy;
let onFirstChunk: (() => void) | undefined;

before(async () => {
  // 15 MB held: a snapshot of ~28 MB, whose serialize lasts long enough to be seen and stopped.
  [redis, target, dir] = await Promise.all([startRedis(), startNodeTarget({ script: fixturePath('heap-holder.cjs'), env: { HEAP_MB: '15' } }), tmpDir('heapcap-progress')]);
  // The test reads the record every 20 ms beside the CLI's GET a second: no rate limit in the way.
  // HEAPCAP_SNAPSHOT_TRANSPORT=cdp: the chunks pass the proxy below (the pipe transport, auto's choice for a
  // local target, writes them to a FIFO the proxy never sees).
  serve = await startDevServe(dir.path, redis.url, { HEAPCAP_RATE_LIMIT: '1000000', HEAPCAP_SNAPSHOT_TRANSPORT: 'cdp' });
  // The worker reaches the target through a CDP proxy that can stop it as its first snapshot chunk passes, so
  // `trigger --wait` finds the record in serialize with bytes however fast this machine serializes (waiting for
  // the record to say serialize and stopping the target then lost the race: the record shows a phase once it has
  // lasted 250 ms, the whole snapshot had streamed by then, and the record sat in sink instead).
  chunkStop = await startCdpProxy(target.wsUrl ?? '', {
    onEvent: (method) => {
      if (method !== 'HeapProfiler.addHeapSnapshotChunk' || onFirstChunk === undefined) return;
      process.kill(target.pid, 'SIGSTOP');
      onFirstChunk();
      onFirstChunk = undefined;
    },
  });
  const added = await runHeapcap(['targets', 'add', 'paused-1', '--ws', chunkStop.url], { env: { HEAPCAP_API_URL: serve.url }, cwd: dir.path });
  assert.equal(added.code, 0, added.stderr);
});
after(async () => {
  await serve?.stop();
  await chunkStop?.close();
  await target?.kill();
  await redis?.stop();
  await dir?.cleanup();
});

/** A running command and everything it printed so far. */
interface Run {
  output(): string;
  done: Promise<number | null>;
  child: ChildProcess;
}

/** `sh -c COMMAND` on a pseudo-terminal (`script -qfec`): what the terminal showed is `output()`. */
function onTerminal(command: string): Run {
  return track(spawn('script', ['-qfec', command, '/dev/null'], { cwd: dir.path, env: commandEnv({ HEAPCAP_API_URL: serve.url }), stdio: ['ignore', 'pipe', 'pipe'] }), 'stdout');
}

/** `bin/heapcap ARGS` with pipes: `output()` is its stderr, stdout goes to `stdout()`. */
function offTerminal(args: string[]): Run & { stdout(): string } {
  const child = spawn(HEAPCAP_BIN, args, { cwd: dir.path, env: commandEnv({ HEAPCAP_API_URL: serve.url }), stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  child.stdout?.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  return { ...track(child, 'stderr'), stdout: () => stdout };
}

function track(child: ChildProcess, stream: 'stdout' | 'stderr'): Run {
  let text = '';
  child[stream]?.setEncoding('utf8').on('data', (d: string) => (text += d));
  const done = new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve(code));
  });
  return { output: () => text, done, child };
}

/** One drawn progress line: phase, seconds in it, total seconds, the rest. */
interface Draw {
  phase: string;
  inPhase: number;
  total: number;
  rest: string;
}

const LINE = /^(\S+) +(\d+\.\d) s \(total (\d+\.\d) s\)(.*)$/;

/** The lines a terminal redraw wrote (each starts with CR + erase line). */
function redraws(output: string): Draw[] {
  return output
    .split('\r\x1b[2K')
    .map((s) => LINE.exec(s.replace(/\r?\n[\s\S]*$/, '')))
    .filter((m) => m !== null)
    .map((m) => ({ phase: m[1]!, inPhase: Number(m[2]), total: Number(m[3]), rest: m[4]! }));
}

/** Plain lines (off a terminal) that are progress lines. */
function plainLines(output: string): Draw[] {
  return output
    .split('\n')
    .map((s) => LINE.exec(s))
    .filter((m) => m !== null)
    .map((m) => ({ phase: m[1]!, inPhase: Number(m[2]), total: Number(m[3]), rest: m[4]! }));
}

/** Seconds shown for `phase`, in drawing order, without repeats. */
function secondsOf(draws: Draw[], phase: string): number[] {
  return [...new Set(draws.filter((d) => d.phase === phase).map((d) => d.inPhase))];
}

/**
 * Stop the target until `until` holds (it is continued on every path). A command that exits first fails at once;
 * either failure says what the command printed and what the target's records say.
 */
async function pausedUntil(run: Run, what: string, until: () => boolean): Promise<void> {
  let exited: number | null | undefined;
  void run.done.then((code) => (exited = code));
  process.kill(target.pid, 'SIGSTOP');
  try {
    await waitFor(
      () => {
        if (until()) return true;
        if (exited !== undefined) throw new Error(`the command exited with ${exited} first`);
        return undefined;
      },
      { timeoutMs: 60_000, intervalMs: 20, what },
    ).catch(async (err: unknown) => {
      const records = await fetch(`${serve.url}/v1/captures?target=paused-1`).then((r) => r.text()).catch((e: unknown) => String(e));
      throw new Error(`${(err as Error).message}\nthe command printed: ${JSON.stringify(run.output().slice(-3000))}\nthe records: ${records.slice(0, 3000)}`);
    });
  } finally {
    process.kill(target.pid, 'SIGCONT');
  }
}

/**
 * On a terminal: at least one redraw a second (counted against the seconds the
 * line itself shows, so a slow machine does not fail it), seconds that only grow,
 * and MiB/s once the bytes flow.
 */
async function assertTerminalProgress(run: Run, waitForPhase: (phase: string) => Promise<void>, inSerialize: () => Promise<void> = () => waitForPhase('serialize')): Promise<void> {
  try {
    await waitForPhase('generate');
    await pausedUntil(run, '3 s of generate on the terminal', () => Math.max(0, ...secondsOf(redraws(run.output()), 'generate')) >= 3);
    await inSerialize();
    await pausedUntil(run, 'a serialize line with MiB/s', () => redraws(run.output()).some((d) => d.phase === 'serialize' && /MiB +at \d+\.\d MiB\/s/.test(d.rest)));
    assert.equal(await run.done, 0, run.output());
  } finally {
    run.child.kill('SIGKILL');
  }
  const draws = redraws(run.output());
  const generate = secondsOf(draws, 'generate');
  const shown = generate.at(-1) ?? 0;
  console.log(`generate: ${generate.length} distinct redraws over ${shown} s (${draws.length} redraws in all)`);
  assert.ok(generate.length >= Math.floor(shown), `at least one redraw a second: ${generate.join(', ')}`);
  assert.deepEqual(generate, [...generate].sort((a, b) => a - b), 'seconds in generate only grow');
  assert.match(draws.find((d) => d.phase === 'generate')!.rest, /the target is building its snapshot/);
  const totals = draws.map((d) => d.total);
  assert.deepEqual(totals, [...totals].sort((a, b) => a - b), 'the total only grows');
}

/** Off a terminal: nothing in the first 5 s, then plain lines, no escape codes. */
async function assertPlainProgress(run: Run, generateStarted: () => Promise<void>, laterPhase: boolean): Promise<void> {
  try {
    await generateStarted();
    await pausedUntil(run, 'two plain generate lines', () => plainLines(run.output()).filter((d) => d.phase === 'generate').length >= 2);
    assert.equal(await run.done, 0, run.output());
  } finally {
    run.child.kill('SIGKILL');
  }
  const text = run.output();
  assert.doesNotMatch(text, /\x1b|\r/, 'no escape codes, no carriage returns');
  const lines = plainLines(text);
  const generate = lines.filter((d) => d.phase === 'generate');
  assert.ok(generate[0]!.total >= 5, `the first line after 5 s: ${text}`);
  // 4.9: both figures are rounded to a tenth.
  assert.ok(generate[1]!.inPhase - generate[0]!.inPhase >= 4.9, `then one every 5 s within the phase: ${text}`);
  // The engine's events reach `capture` at once; `trigger` sees a phase only if a poll (each second) lands in it.
  if (laterPhase) assert.ok(lines.some((d) => d.phase === 'serialize'), `a line at each phase change after the first: ${text}`);
}

/** The running capture's record of the target, through the API. */
async function runningPhase(): Promise<string | undefined> {
  const res = await fetch(`${serve.url}/v1/captures?target=paused-1&status=running`);
  const body = (await res.json()) as { items: { phase: string | null }[] };
  return body.items[0]?.phase ?? undefined;
}

void test('capture on a terminal: the phase and its seconds redrawn while the target is paused, MiB/s while bytes flow', { timeout: 240_000 }, async () => {
  const out = join(dir.path, 'tty');
  const run = onTerminal(`'${HEAPCAP_BIN}' capture --node 127.0.0.1:${target.port} --out '${out}' --json > '${join(dir.path, 'tty.json')}'`);
  await assertTerminalProgress(run, (phase) => waitFor(() => redraws(run.output()).some((d) => d.phase === phase) || undefined, { timeoutMs: 120_000, intervalMs: 10, what: `a ${phase} line` }).then(() => undefined));
  const manifest = JSON.parse(await readFile(join(dir.path, 'tty.json'), 'utf8')) as { timings: { generate: number } };
  assert.ok(manifest.timings.generate >= 3000);
});

void test('capture off a terminal: plain lines from 5 s on, one every 5 s in a long phase, no escape codes', { timeout: 240_000 }, async () => {
  const out = join(dir.path, 'plain');
  // Through a CDP proxy that stops the target as the snapshot request goes out: `capture` is then in
  // generate however fast this machine would have built a 28 MB snapshot (waiting for a sign of generate
  // and stopping the target after it lost the race on a quiet machine: the snapshot was already streaming).
  let stopped = false;
  const proxy = await startCdpProxy(target.wsUrl ?? '', {
    onRequest: (method) => {
      if (method !== 'HeapProfiler.takeHeapSnapshot' || stopped) return;
      process.kill(target.pid, 'SIGSTOP');
      stopped = true;
    },
  });
  try {
    const run = offTerminal(['capture', '--ws', proxy.url, '--out', out, '--transport', 'cdp']);
    await assertPlainProgress(run, () => waitFor(() => stopped || undefined, { timeoutMs: 120_000, intervalMs: 10, what: 'the snapshot request' }).then(() => undefined), true);
    assert.match(run.stdout(), /^captured /);
  } finally {
    if (stopped) process.kill(target.pid, 'SIGCONT');
    await proxy.close();
  }
});

void test('trigger --wait on a terminal: the worker’s phase, seconds and MiB/s from the record', { timeout: 240_000 }, async () => {
  // Armed before the command starts: the first chunk comes after generate, and the proxy stops the target there
  // (pausedUntil then keeps it stopped until the terminal shows serialize with MiB/s, and continues it).
  let stoppedAtChunk = false;
  onFirstChunk = () => (stoppedAtChunk = true);
  const run = onTerminal(`'${HEAPCAP_BIN}' trigger paused-1 --wait 300 --json > '${join(dir.path, 'trigger.json')}'`);
  try {
    await assertTerminalProgress(
      run,
      (phase) => waitFor(async () => (await runningPhase()) === phase || undefined, { timeoutMs: 120_000, intervalMs: 20, what: `the record in ${phase}` }).then(() => undefined),
      () => waitFor(() => stoppedAtChunk || undefined, { timeoutMs: 120_000, intervalMs: 20, what: 'the first snapshot chunk at the proxy' }).then(() => undefined),
    );
  } finally {
    onFirstChunk = undefined;
    if (stoppedAtChunk) process.kill(target.pid, 'SIGCONT');
  }
  const body = JSON.parse(await readFile(join(dir.path, 'trigger.json'), 'utf8')) as { capture: { status: string; progress?: unknown } };
  assert.equal(body.capture.status, 'succeeded');
  assert.equal(body.capture.progress, undefined, 'a finished record has no live progress');
});

void test('trigger --wait --quiet: nothing on stderr through a long generate, the same outcome on stdout', { timeout: 240_000 }, async () => {
  const run = offTerminal(['trigger', 'paused-1', '--wait', '300', '--quiet']);
  try {
    await waitFor(async () => (await runningPhase()) === 'generate' || undefined, { timeoutMs: 120_000, intervalMs: 20, what: 'the record in generate' });
    // Past the 5 s after which a plain progress line would be printed, and past one more every-5-s line.
    const started = Date.now();
    await pausedUntil(run, '11 s of generate', () => Date.now() - started >= 11_000);
    assert.equal(await run.done, 0, run.output());
  } finally {
    run.child.kill('SIGKILL');
  }
  assert.equal(run.output(), '', 'no progress lines');
  assert.match(run.stdout(), /succeeded[\s\S]*\(done\)/);
});

void test('trigger --wait off a terminal: plain lines, no escape codes, the exit code of the outcome', { timeout: 240_000 }, async () => {
  const run = offTerminal(['trigger', 'paused-1', '--wait', '300']);
  await assertPlainProgress(run, () => waitFor(async () => (await runningPhase()) === 'generate' || undefined, { timeoutMs: 120_000, intervalMs: 20, what: 'the record in generate' }).then(() => undefined), false);
  assert.match(run.stdout(), /succeeded[\s\S]*\(done\)/);
});
