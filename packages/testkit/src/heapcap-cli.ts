/** `heapcap ARGS` as a child process, the way an operator runs it, from the TypeScript sources. */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { childEnv } from './node-bin.ts';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const CLI = fileURLToPath(new URL('../../cli/src/main.ts', import.meta.url));

/** How one CLI run ended and what it printed. */
export interface HeapcapRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Runs `heapcap ARGS` through tsx with cwd at the workspace root; SIGKILL and rejection at the deadline. */
export function runHeapcap(args: string[], opts: { timeoutMs: number; env?: Record<string, string> }): Promise<HeapcapRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', CLI, ...args], { cwd: ROOT, env: childEnv(opts.env), stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`heapcap ${args.join(' ')} did not finish within ${opts.timeoutMs} ms\n${stderr}`));
    }, opts.timeoutMs);
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    // 'close', not 'exit': stdout and stderr are complete.
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}
