/**
 * `heapcap serve --dev` for the demo: started as a user would, through
 * bin/heapcap (the bundled command), its JSON logs to a file (they would
 * drown the demo's output), its operator messages (the auth-off banner,
 * errors) straight to the terminal.
 */
import { createWriteStream } from 'node:fs';
import { GiveUp, OutputLog, waitFor } from '@heapcap/testkit';
import { alive, startChild, type DemoChild } from './demo-procs.ts';

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

/** Start `bin/heapcap serve --dev`; resolves once it says where it listens (60 s: the first run builds the bundle). */
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
  const child = startChild('heapcap serve', 'bin/heapcap', ['serve', '--dev'], { env, stdio: ['ignore', 'pipe', 'pipe'] }, 40_000);
  child.proc.stdout?.pipe(log);
  const stderr = new OutputLog(child.proc.stderr!);
  let shown = 0;
  const line = await waitFor(
    () => {
      for (const l of stderr.lines().slice(shown)) process.stderr.write(`  ${l}\n`);
      shown = stderr.lineCount();
      if (s.signal.aborted) throw new GiveUp('stopped');
      const found = stderr.lines().find((l) => l.startsWith('heapcap serving on '));
      if (found === undefined && !alive(child.proc)) throw new GiveUp(`heapcap serve exited (${child.proc.signalCode ?? child.proc.exitCode})`);
      return found;
    },
    { timeoutMs: 60_000, intervalMs: 100, what: 'heapcap serve to listen' },
  );
  return { child, url: /^heapcap serving on (http:\/\/\S+)/.exec(line)![1]! };
}

/** Poll GET /readyz until 200 (Redis, the registry and storage ready); throws after `ms`. */
export async function waitReady(url: string, signal: AbortSignal, ms = 30_000): Promise<void> {
  let last = 'no answer';
  await waitFor(
    async () => {
      if (signal.aborted) throw new GiveUp('stopped');
      try {
        const res = await fetch(`${url}/readyz`, { signal: AbortSignal.any([signal, AbortSignal.timeout(2_000)]) });
        last = `${res.status} ${await res.text()}`;
        return res.status === 200;
      } catch (err) {
        last = (err as Error).message;
        return false;
      }
    },
    { timeoutMs: ms, intervalMs: 250, what: `${url}/readyz to answer 200 (last: ${last})` },
  );
}
