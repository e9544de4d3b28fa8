/**
 * One start-up and shutdown sequence for every heapcap service (the API, the
 * worker, `heapcap serve`, and whatever comes next): configuration parsed
 * once, one logger, Redis connected with the one message, the store, the
 * targets file synced and kept synced, then the service's own parts; on
 * SIGTERM/SIGINT everything closes in reverse order, each step within its
 * limit, with a backstop that exits whatever still hangs.
 */
import type { Logger } from 'pino';
import { ConfigFileError, parseConfigAtEntry, type HeapcapConfig } from '@heapcap/config';
import { isQueueError, type HeapcapQueue } from '@heapcap/queue';
import { createStore, type ArtifactStore } from '@heapcap/storage';
import { createLogger } from './logger.ts';
import { connectQueue, RedisUnreachableError } from './redis.ts';
import { exitAfter, runShutdown, shutdownSignal, type CloseStep } from './shutdown.ts';
import { keepTargetsSynced, syncTargetsFile } from './targets-sync.ts';

/** What a service is built from. */
export interface ServiceContext {
  config: HeapcapConfig;
  log: Logger;
  queue: HeapcapQueue;
  store: ArtifactStore;
  /** Operator messages (where it listens, refusals): the terminal, not the JSON log. */
  stderr: NodeJS.WritableStream;
  /** Register a part to close on shutdown; parts close in reverse order of registration. */
  onClose(step: CloseStep): void;
}

/**
 * Refuses to start with an operator message (`code: message`) and exit code 2:
 * bad settings a service discovers itself (no tokens file, a non-loopback
 * `--dev`, a port in use).
 */
export class StartupError extends Error {
  override readonly name = 'StartupError';
  readonly code: string;
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
  }
}

/** A service: what it checks before connecting, and how it starts. */
export interface ServiceDefinition<P> {
  /** `service` in every log line. */
  name: string;
  /** Before any connection (argument and auth checks); throw StartupError to refuse. */
  prepare?: (config: HeapcapConfig) => Promise<P> | P;
  /** Start the service's parts; register each with `ctx.onClose`. Throw StartupError to refuse. */
  start: (ctx: ServiceContext, prepared: P) => Promise<void>;
}

/** How to run it. */
export interface RunServiceOptions {
  env: Record<string, string | undefined>;
  /** Operator messages (refusals, the Redis help text). */
  stderr: NodeJS.WritableStream;
  /** Resolves when the service should stop; default: the first SIGTERM or SIGINT. */
  stopSignal?: (log: Logger) => Promise<unknown>;
  /** Exit the process if shutdown overruns its limits (default true; false where the caller owns the process, e.g. a test). */
  exitBackstop?: boolean;
}

/** Infrastructure close limits: Redis QUIT and the S3 client's sockets. */
const INFRA_CLOSE_MS = 5_000;
/** The backstop's slack beyond the sum of every step's limit. */
const BACKSTOP_SLACK_MS = 10_000;

/** A startup failure that is the operator's to fix: its message, and the exit code. */
function operatorMessage(err: unknown): string | undefined {
  if (err instanceof StartupError || err instanceof ConfigFileError) return `${err.code}: ${err.message}`;
  if (isQueueError(err)) return `${err.code}: ${err.message}`;
  if (err instanceof Error && 'code' in err && err.code === 'EADDRINUSE') return `invalid_config: ${err.message} (another process listens there: stop it or set HEAPCAP_PORT)`;
  return undefined;
}

/** Run `def` until a stop signal; resolves with the process exit code. */
export async function runService<P>(def: ServiceDefinition<P>, options: RunServiceOptions): Promise<number> {
  const { stderr } = options;
  const config = parseConfigAtEntry(options.env, (text) => stderr.write(text));
  if (config === undefined) return 2;
  let prepared: P;
  try {
    prepared = (await def.prepare?.(config)) as P;
  } catch (err) {
    const message = operatorMessage(err);
    if (message === undefined) throw err;
    stderr.write(`${message}\n`);
    return 2;
  }
  const log = createLogger(config.logLevel, { service: def.name });
  let queue: HeapcapQueue;
  try {
    queue = await connectQueue({ redisUrl: config.redisUrl });
  } catch (err) {
    if (!(err instanceof RedisUnreachableError)) throw err;
    stderr.write(`${err.message}\n`);
    return 1;
  }
  const store = createStore(config.storage);
  const steps: CloseStep[] = [];
  const ctx: ServiceContext = { config, log, queue, store, stderr, onClose: (step) => steps.push(step) };
  let code = 0;
  let failure: unknown;
  try {
    await syncTargetsFile(queue, config.targetsFile, log);
    const keeper = keepTargetsSynced(queue, config.targetsFile, log);
    ctx.onClose({ name: 'targets sync', close: async () => keeper.stop(), timeoutMs: 1_000 });
    await def.start(ctx, prepared);
    await (options.stopSignal ?? shutdownSignal)(log);
  } catch (err) {
    const message = operatorMessage(err);
    if (message === undefined) failure = err;
    else {
      stderr.write(`${message}\n`);
      code = 2;
    }
  } finally {
    const ordered: CloseStep[] = [
      ...steps.reverse(),
      { name: 'redis', close: () => queue.close(), timeoutMs: INFRA_CLOSE_MS },
      { name: 'store', close: () => store.close(), timeoutMs: INFRA_CLOSE_MS },
    ];
    if (options.exitBackstop !== false) exitAfter(ordered.reduce((sum, s) => sum + s.timeoutMs, BACKSTOP_SLACK_MS));
    await runShutdown(ordered, log);
    log.info('stopped');
    log.flush();
  }
  if (failure !== undefined) throw failure;
  return code;
}
