/**
 * Runs a bench helper script in its own Node process (`node --import tsx FILE
 * ARGS`), so its peak RSS (VmHWM) is its own and not the bench's, and returns
 * the JSON object it prints as its last stdout line.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const running = new Set<() => void>();
// The bench process may exit early (Ctrl-C, a crash): take the helpers with it.
process.once('exit', () => {
  for (const kill of running) kill();
});

/**
 * Run `bench/lib/<file>` with `args`; rejects on a non-zero exit or at the deadline (the child is killed).
 * `root`: another checkout's bench/lib/<file> instead (a before/after comparison in one run).
 */
export function runHelper<T>(file: string, args: string[], timeoutMs: number, root?: string): Promise<T> {
  const path = root === undefined ? fileURLToPath(new URL(file, import.meta.url)) : join(root, 'bench/lib', file);
  return new Promise((resolve, reject) => {
    // cwd = repo root so `--import tsx` resolves from the workspace's node_modules.
    const child = spawn(process.execPath, ['--import', 'tsx', path, ...args], { cwd: root ?? ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    const kill = (): void => {
      child.kill('SIGKILL');
    };
    running.add(kill);
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (err = (err + d).slice(-20_000)));
    const timer = setTimeout(() => {
      kill();
      reject(new Error(`${file} did not finish within ${timeoutMs} ms; stderr:\n${err}`));
    }, timeoutMs);
    child.once('error', reject);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      running.delete(kill);
      const last = out.trim().split('\n').pop() ?? '';
      if (code !== 0) return reject(new Error(`${file} exited with ${code ?? signal}; stderr:\n${err}\nstdout:\n${out.slice(-2000)}`));
      try {
        resolve(JSON.parse(last) as T);
      } catch {
        reject(new Error(`${file} printed no JSON result; stdout:\n${out.slice(-2000)}\nstderr:\n${err}`));
      }
    });
  });
}
