/**
 * `heapcap serve --dev` for the demo: started through the CLI like a user
 * would, its JSON logs to a file (they would drown the demo's output), its
 * operator messages (the auth-off banner, errors) straight to the terminal.
 */
import { createWriteStream } from 'node:fs';
import { startChild, sleep, waitForLine, type DemoChild } from './demo-procs.ts';

/** What the demo runs the service with. */
export interface ServeSetup {
  redisUrl: string;
  targetsFile: string;
  /** HEAPCAP_STORAGE value. */
  storage: string;
  /** 0 = any free port. */
  port: number;
  logFile: string;
  signal: AbortSignal;
}

/** A running service and its base URL. */
export interface RunningService {
  child: DemoChild;
  url: string;
}

/** Start `heapcap serve --dev`; resolves once it says where it listens (60 s: the first tsx load is slow on 2 cores). */
export async function startService(s: ServeSetup): Promise<RunningService> {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    HEAPCAP_REDIS_URL: s.redisUrl,
    HEAPCAP_TARGETS_FILE: s.targetsFile,
    HEAPCAP_STORAGE: s.storage,
    HEAPCAP_HOST: '127.0.0.1',
    HEAPCAP_PORT: String(s.port),
  };
  // --dev without auth is the point of the demo; a tokens file from the user's shell would make curl get 401.
  delete env['HEAPCAP_TOKENS_FILE'];
  const log = createWriteStream(s.logFile);
  // Shutdown is bounded inside the service (API 10 s + worker's own limit); 40 s before SIGKILL covers it.
  const child = startChild('heapcap serve', process.execPath, ['--import', 'tsx', 'packages/cli/src/main.ts', 'serve', '--dev'], { env, stdio: ['ignore', 'pipe', 'pipe'] }, 40_000);
  child.proc.stdout?.pipe(log);
  const m = await waitForLine(child.proc.stderr!, /^heapcap serving on (http:\/\/\S+)/, 'heapcap serve did not start', {
    proc: child.proc,
    ms: 60_000,
    signal: s.signal,
    onLine: (line) => process.stderr.write(`  ${line}\n`),
  });
  return { child, url: m[1]! };
}

/** Poll GET /readyz until 200 (Redis and storage reachable); throws after `ms`. */
export async function waitReady(url: string, signal: AbortSignal, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  let last = 'no answer';
  while (Date.now() < deadline && !signal.aborted) {
    try {
      const res = await fetch(`${url}/readyz`, { signal: AbortSignal.any([signal, AbortSignal.timeout(2_000)]) });
      const body = await res.text();
      if (res.status === 200) return;
      last = `${res.status} ${body}`;
    } catch (err) {
      last = (err as Error).message;
    }
    await sleep(250, signal);
  }
  throw new Error(signal.aborted ? 'stopped' : `${url}/readyz not ready within ${ms / 1000} s (${last})`);
}
