/** Run fixtures/worker-child.ts as a separate process (to SIGKILL it mid-capture). */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { GiveUp, waitFor } from '@heapcap/testkit';
import type { Harness } from './harness.ts';

export interface WorkerProcess {
  child: ChildProcess;
  /** SIGKILL (no cleanup at all) or SIGTERM (graceful); waits for exit. Idempotent. */
  kill(signal?: NodeJS.Signals): Promise<void>;
  output(): string;
}

/** Start a worker process on the harness's Redis, prefix and store; resolves once it consumes. */
export async function startWorkerProcess(h: Harness, extraEnv: Record<string, string> = {}): Promise<WorkerProcess> {
  const script = fileURLToPath(new URL('../fixtures/worker-child.ts', import.meta.url));
  // Node 22's own type stripping where this runtime has it (the service's tests run on it): tsx's loader
  // hooks cost a worker's start ~1 CPU-s more.
  const loader = (process.features as { typescript?: string }).typescript === 'strip' ? [] : ['--import', 'tsx'];
  const child = spawn(process.execPath, [...loader, script], {
    env: { ...process.env, HEAPCAP_TEST_REDIS_URL: h.redisUrl, HEAPCAP_TEST_PREFIX: h.prefix, HEAPCAP_TEST_STORE: h.storeDir.path, ...extraEnv },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const reap = (): void => {
    child.kill('SIGKILL');
  };
  process.once('exit', reap);
  let out = '';
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  void exited.then(() => process.off('exit', reap));
  try {
    await waitFor(() => {
      if (child.exitCode !== null) throw new GiveUp(`worker process exited: ${out}`);
      return out.includes('READY');
    }, { timeoutMs: 30_000, what: 'the worker process to print READY' });
  } catch (err) {
    child.kill('SIGKILL');
    throw err;
  }
  let killing: Promise<void> | undefined;
  return {
    child,
    output: () => out,
    kill: (signal = 'SIGTERM') =>
      (killing ??= (async () => {
        if (child.exitCode !== null || child.signalCode !== null) return;
        child.kill(signal);
        const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
        await exited;
        clearTimeout(timer);
      })()),
  };
}
