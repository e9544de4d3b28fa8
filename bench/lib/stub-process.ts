/**
 * The stub inspector (lib/stub-server.ts) as a child process, so its CPU is
 * measured apart from the bench's: resolves once it prints its port. The
 * child is killed when the bench process exits, whatever happens.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { REPO_ROOT } from '@heapcap/testkit';

/** A running stub inspector: its port, pid, snapshot size and process. */
export interface StubProcess {
  port: number;
  pid: number;
  snapshotBytes: number;
  child: ChildProcess;
}

/** Starts `lib/stub-server.ts` serving a snapshot of `objects` objects. */
export async function startStubProcess(objects: number): Promise<StubProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', join(REPO_ROOT, 'bench/lib/stub-server.ts'), String(objects)], { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
  process.once('exit', () => child.kill('SIGKILL'));
  const line = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout!.setEncoding('utf8').on('data', (d: string) => {
      out += d;
      if (out.includes('\n')) resolve(out.split('\n')[0] ?? '');
    });
    child.once('exit', (code) => reject(new Error(`the stub inspector exited with ${code}`)));
  });
  return { ...(JSON.parse(line) as { port: number; pid: number; snapshotBytes: number }), child };
}
