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
import { isQueueError, type HeapcapQueue } from '@heapcap/state';
import { createStore, type ArtifactStore } from '@heapcap/storage';
import { createLogger } from './logger.ts';
import { connectQueue, RedisUnreachableError } from './redis.ts';
import { exitAfter, runShutdown, shutdownSignal, type CloseStep } from './shutdown.ts';
import { RulesFileSync } from './rules-sync.ts';
import { keepTargetsSynced, TargetsFileSync } from './targets-sync.ts';

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
  /** HEAPCAP_RULES_FILE kept applied (set before the service starts when the setting is given): its state for /metrics. */
  rulesFile?: RulesFileSync;
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
/**
 * The whole shutdown's limit: every step gets at most what is left of it, and
 * the process exits when it is over. Below the 45 s terminationGracePeriodSeconds
 * of deploy/k8s, so heapcap's own backstop, not the kubelet's SIGKILL, ends it.
 */
export const SHUTDOWN_GRACE_MS = 40_000;
/** After `stopped`, whatever still holds the event loop (a client still reconnecting) gets this long. */
const AFTER_STOP_MS = 1_000;

/** A startup failure that is the operator's to fix: its message, and the exit code. */
function operatorMessage(err: unknown): string | undefined {
  if (err instanceof StartupError || err instanceof ConfigFileError) return `${err.code}: ${err.message}`;
  if (isQueueError(err)) return `${err.code}: ${err.message}`;
  if (err instanceof Error && 'code' in err && err.code === 'EADDRINUSE') return `invalid_config: ${err.message} (another process listens there: stop it or set HEAPCAP_PORT)`;
  return undefined;
}

/** How long the start-up storage check may take before it is reported as not answering. */
const STORE_CHECK_MS = 10_000;

/** Logs whether the artifact store accepts a probe write; never throws. */
async function checkStoreAtStart(store: ArtifactStore, log: Logger): Promise<void> {
  const ac = new AbortController();
  const timer = setTimeout(() => ac.abort(), STORE_CHECK_MS);
  try {
    await store.check(ac.signal);
    log.info({ storage: store.root }, 'artifact storage is writable');
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    log.error(
      { storage: store.root, code: typeof code === 'string' ? code : undefined, err: err instanceof Error ? err.message : String(err) },
      'artifact storage is not writable: captures will fail until it is (GET /readyz says why)',
    );
  } finally {
    clearTimeout(timer);
  }
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
  if (config.serviceLinks.length > 0) {
    log.info({ variables: config.serviceLinks }, 'ignored Kubernetes service-link variables (not settings; enableServiceLinks: false in the pod spec leaves them out)');
  }
  let queue: HeapcapQueue;
  try {
    queue = await connectQueue({ redisUrl: config.redisUrl, prefix: config.redisPrefix });
  } catch (err) {
    if (!(err instanceof RedisUnreachableError)) throw err;
    stderr.write(`${err.message}\n`);
    return 1;
  }
  const store = createStore(config.storage);
  // Not a reason to refuse (a mount may come later, /readyz says so meanwhile), but said at once:
  // before, serve started on an unwritable store without a word and every capture then failed.
  void checkStoreAtStart(store, log);
  const steps: CloseStep[] = [];
  const ctx: ServiceContext = { config, log, queue, store, stderr, onClose: (step) => steps.push(step) };
  let code = 0;
  let failure: unknown;
  // Listening for the stop signal before anything starts: a SIGTERM that arrives while the service starts (or
  // right after it said it serves, before a later listener would exist) stops it in order, never kills it outright.
  const stopping = (options.stopSignal ?? shutdownSignal)(log);
  try {
    const startup = (async () => {
      await queue.epoch.start();
      const targets = new TargetsFileSync(queue, { path: config.targetsFile, explicit: config.targetsFileSet }, log);
      await targets.start().catch((err: unknown) => {
        // An explicitly named file that is not there is a mistake to fix, not an empty registry.
        if (isQueueError(err, 'targets_file_unreadable')) throw new StartupError('invalid_config', `HEAPCAP_TARGETS_FILE: ${err.message}`, { cause: err });
        throw err;
      });
      if (config.rulesFile !== undefined) {
        // After the targets: the file's rules are checked against the registry. A bad file does not stop the start
        // (the rules already applied keep running); the log says why it was refused.
        const rules = new RulesFileSync(queue, config, config.rulesFile, log);
        await rules.sync();
        rules.watch();
        ctx.rulesFile = rules;
        ctx.onClose({ name: 'rules file sync', close: () => rules.stop(), timeoutMs: 5_000 });
      }
      // Redis lost its data: the targets file's entries come back, then the rules file's rules (they name targets).
      const rules = ctx.rulesFile;
      const keeper = keepTargetsSynced(queue, targets, log, undefined, rules === undefined ? undefined : () => rules.resync());
      ctx.onClose({ name: 'targets sync', close: async () => keeper.stop(), timeoutMs: 1_000 });
      await def.start(ctx, prepared);
    })();
    // Stopped mid-start (a Redis that does not answer): the start's own later failure changes nothing.
    startup.catch(() => undefined);
    await Promise.race([startup, stopping]);
    await stopping;
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
    const backstop = options.exitBackstop !== false;
    // The last two steps (Redis, store) keep their own limits past the grace of the service's parts.
    if (backstop) exitAfter(SHUTDOWN_GRACE_MS + 2 * INFRA_CLOSE_MS);
    await runShutdown(ordered, log, Date.now() + SHUTDOWN_GRACE_MS);
    log.info('stopped');
    log.flush();
    // Every part is closed: anything still open (measured: BullMQ clients reconnecting to a Redis that
    // is down kept `serve` running for minutes after `stopped`) must not keep the process alive.
    if (backstop) exitAfter(AFTER_STOP_MS, failure === undefined ? code : 1);
  }
  if (failure !== undefined) throw failure;
  return code;
}
