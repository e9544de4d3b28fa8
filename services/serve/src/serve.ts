/**
 * `heapcap serve [--dev]`: the API and a worker in one process, on the
 * embedded defaults (file storage under ./data, Redis at 127.0.0.1:6379).
 * Without a tokens file it refuses to start unless `--dev`, which binds to
 * loopback and runs without auth (and says so loudly).
 *
 * Shutdown (SIGTERM/SIGINT) is ordered and bounded: the API stops accepting,
 * the worker finishes or hands back its captures, connections close, logs flush.
 */
import { pino } from 'pino';
import { ConfigError, parseConfig, type HeapcapConfig } from '@heapcap/config';
import { REDACT_PATHS, resolveAuthMode, startApi, isLoopback, type AuthMode, type RunningApi } from '@heapcap/api';
import { isQueueError } from '@heapcap/queue';
import { createSink } from '@heapcap/storage';
import { workerFromConfig, closeSink, connectQueue, exitAfter, RedisUnreachableError, shutdownSignal, syncTargetsFile, WORKER_REDACT_PATHS } from '@heapcap/worker';

export const SERVE_USAGE = `heapcap serve [--dev]: run the API and a capture worker in one process

  --dev    no authentication, loopback only (127.0.0.1); for a laptop, never for a shared host

Configuration: HEAPCAP_* variables (docs/configuration.md). Without HEAPCAP_TOKENS_FILE only --dev runs.
Needs Redis (HEAPCAP_REDIS_URL, default redis://127.0.0.1:6379).
`;

const API_CLOSE_MS = 10_000;

const DEV_BANNER = `
!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!
!!  heapcap serve --dev: AUTHENTICATION IS OFF                             !!
!!  Anyone who can reach this port can take heap snapshots (which contain  !!
!!  the target's secrets) and read them. Bound to loopback only.           !!
!!  For anything shared, set HEAPCAP_TOKENS_FILE and drop --dev.           !!
!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!
`;

/** Parsed flags of `heapcap serve`. */
export interface ServeFlags {
  dev: boolean;
  help: boolean;
}

/** Parse `heapcap serve` arguments; throws on unknown ones. */
export function parseServeArgs(argv: string[]): ServeFlags {
  const flags: ServeFlags = { dev: false, help: false };
  for (const a of argv) {
    if (a === '--dev') flags.dev = true;
    else if (a === '--help' || a === '-h') flags.help = true;
    else throw new Error(`unknown argument "${a}" for heapcap serve`);
  }
  return flags;
}

/** Run the service until a signal; resolves with the exit code. Writes operator messages to `stderr`. */
export async function runServe(argv: string[], env: Record<string, string | undefined>, stderr: NodeJS.WritableStream = process.stderr): Promise<number> {
  let flags: ServeFlags;
  let config: HeapcapConfig;
  try {
    flags = parseServeArgs(argv);
    if (flags.help) {
      process.stdout.write(SERVE_USAGE);
      return 0;
    }
    config = parseConfig(env);
  } catch (err) {
    stderr.write(`invalid_input: ${err instanceof ConfigError ? err.message : (err as Error).message}\n\n${SERVE_USAGE}`);
    return 2;
  }
  let auth: AuthMode;
  try {
    auth = await resolveAuthMode(config, { dev: flags.dev });
  } catch (err) {
    stderr.write(`refused: ${(err as Error).message}\n`);
    return 2;
  }
  if (auth.kind === 'dev') {
    if (!isLoopback(config.host)) {
      stderr.write(`refused: --dev only binds to loopback, but HEAPCAP_HOST is ${config.host}\n`);
      return 2;
    }
    stderr.write(DEV_BANNER);
  }
  const log = pino({ level: config.logLevel, redact: { paths: [...new Set([...REDACT_PATHS, ...WORKER_REDACT_PATHS])], censor: '[redacted]' } });
  let queue;
  try {
    queue = await connectQueue({ redisUrl: config.redisUrl });
  } catch (err) {
    if (err instanceof RedisUnreachableError) {
      stderr.write(`${err.message}\n`);
      return 1;
    }
    throw err;
  }
  const sink = createSink(config.storage);
  const worker = workerFromConfig(config, queue, sink, log);
  let api: RunningApi | undefined;
  let code = 0;
  try {
    await syncTargetsFile(queue, config.targetsFile, log);
    await worker.start();
    api = await startApi(config, { queue, sink, auth, logger: log });
    stderr.write(`heapcap serving on ${api.url} (storage ${sink.root}, ${auth.kind === 'dev' ? 'NO AUTH' : 'bearer tokens'}); Ctrl-C to stop\n`);
    await shutdownSignal(log);
  } catch (err) {
    // A bad targets file or a port in use: say what, not a stack trace.
    if (!isQueueError(err) && !(err instanceof Error && 'code' in err && err.code === 'EADDRINUSE')) throw err;
    stderr.write(`${isQueueError(err) ? err.code : 'invalid_config'}: ${err.message}\n`);
    code = 2;
  } finally {
    // Backstop for the whole sequence; each step below has its own limit too.
    exitAfter(API_CLOSE_MS + worker.tuning.shutdownTimeoutMs + 10_000);
    const steps: [string, () => Promise<unknown>][] = [
      ['api', async () => api?.close(API_CLOSE_MS)],
      ['worker', () => worker.close()],
      ['queue', () => queue.close()],
      ['sink', async () => closeSink(sink)],
    ];
    for (const [name, step] of steps) {
      try {
        await step();
      } catch (err) {
        log.warn({ err, step: name }, 'shutdown step failed; continuing');
      }
    }
    log.info('stopped');
    log.flush();
  }
  return code;
}
