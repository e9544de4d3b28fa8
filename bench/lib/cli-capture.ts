/**
 * One capture by the `heapcap` command as users run it (bin/heapcap: the
 * bundle on plain node), measured from outside: its CPU time per thread
 * (/proc/PID/task/TID/schedstat, sampled every 20 ms until it exits; main
 * thread apart from the rest: libuv's pool, where gzip runs, and V8's
 * helpers, where the GC runs concurrently), its peak RSS (VmHWM) and the
 * manifest it prints (phase timings, sizes, spill).
 */
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const BIN = fileURLToPath(new URL('../../bin/heapcap', import.meta.url));

/** What one CLI capture did and cost. */
export interface CliCapture {
  timings: Record<'connect' | 'preflight' | 'warm' | 'gc' | 'generate' | 'serialize' | 'sink' | 'total', number>;
  /** Snapshot bytes (uncompressed) and bytes stored. */
  bytes: number;
  storedBytes: number;
  spilledBytes: number;
  /** CPU time of the whole process (all threads) and of its main thread, in ms. */
  cpuMs: number;
  mainCpuMs: number;
  peakRssKb: number;
}

/** Runs `bin/heapcap capture <target args> --out <out> --json --quiet [extra]`; rejects on a non-zero exit or at the deadline. */
export function cliCapture(targetArgs: string[], out: string, extra: string[], timeoutMs: number, env: NodeJS.ProcessEnv = process.env, bin: string = BIN): Promise<CliCapture> {
  const child = spawn(bin, ['capture', ...targetArgs, '--out', out, '--json', '--quiet', ...extra], { stdio: ['ignore', 'pipe', 'pipe'], env });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr = (stderr + d).slice(-20_000)));
  // Per thread: the last reading before it went away (a thread's time is gone with it).
  const threads = new Map<string, number>();
  let peakRssKb = 0;
  const poll = (): void => {
    const pid = child.pid;
    if (pid === undefined) return;
    try {
      for (const tid of readdirSync(`/proc/${pid}/task`)) {
        try {
          threads.set(tid, Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]));
        } catch {
          // The thread ended between the listing and the read.
        }
      }
      const hwm = Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
      if (hwm > peakRssKb) peakRssKb = hwm;
    } catch {
      // Exited (or still bash, before its exec into node).
    }
  };
  const timer = setInterval(poll, 20);
  return new Promise((resolve, reject) => {
    const deadline = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('error', reject);
    child.once('exit', (code, signal) => {
      clearInterval(timer);
      clearTimeout(deadline);
      if (code !== 0) {
        reject(new Error(`heapcap capture exited with ${code ?? signal}; stderr:\n${stderr}`));
        return;
      }
      try {
        const m = JSON.parse(stdout) as {
          timings: CliCapture['timings'];
          artifact: { bytesUncompressed: number; bytesStored: number };
          /** Absent from builds before 2026-11-24 (bench/cli-cpu.ts runs one). */
          stream?: { spilledBytes: number };
        };
        const pid = String(child.pid);
        const allNs = [...threads.values()].reduce((a, b) => a + b, 0);
        resolve({
          timings: m.timings,
          bytes: m.artifact.bytesUncompressed,
          storedBytes: m.artifact.bytesStored,
          spilledBytes: m.stream?.spilledBytes ?? 0,
          cpuMs: allNs / 1e6,
          mainCpuMs: (threads.get(pid) ?? 0) / 1e6,
          peakRssKb,
        });
      } catch (err) {
        reject(new Error(`heapcap capture printed no manifest (${String(err)}); stdout:\n${stdout.slice(-2000)}\nstderr:\n${stderr}`));
      }
    });
  });
}

/** Builds the CLI bundle now if a source changed (bin/heapcap would do it on the first timed run). */
export function ensureCliBuilt(): Promise<void> {
  const child = spawn(BIN, ['--help'], { stdio: ['ignore', 'ignore', 'inherit'] });
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`bin/heapcap --help exited with ${code}`))));
  });
}
