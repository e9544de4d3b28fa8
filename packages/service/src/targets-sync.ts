/**
 * The targets file in the registry, kept there. The registry lives in Redis;
 * a Redis that restarts without persistence (or fails over to an empty
 * replica) comes back empty, and every capture would be `target_not_found`
 * until someone restarted heapcap. So every service re-syncs the file when the
 * registry's sync marker is gone: at once when its Redis connection comes back,
 * and on a timer for data lost without a disconnect (FLUSHALL).
 *
 * A file that is missing, unreadable or invalid at such a re-sync does not
 * empty the registry's file targets: the ones last read are synced instead
 * and an error is logged (before, a file that had gone silently removed every
 * file target). At start, an explicitly set HEAPCAP_TARGETS_FILE must exist.
 */
import { access } from 'node:fs/promises';
import type { Logger } from 'pino';
import { isQueueError, LOST_WITH_REDIS, loadTargetsFile, RECREATED_AFTER_LOSS, type HeapcapQueue, type Target } from '@heapcap/state';

/** Where the file is, and whether the operator named it (HEAPCAP_TARGETS_FILE set) or it is the default path. */
export interface TargetsFileSetting {
  path: string;
  explicit: boolean;
}

/** Syncs the targets file into the registry; remembers the last good read for re-syncs. */
export class TargetsFileSync {
  readonly #queue: HeapcapQueue;
  readonly #file: TargetsFileSetting;
  readonly #log: Logger;
  /** The file's targets as last read; undefined while the (default) file has never existed. */
  #lastRead: Target[] | undefined;

  constructor(queue: HeapcapQueue, file: TargetsFileSetting, log: Logger) {
    this.#queue = queue;
    this.#file = file;
    this.#log = log;
  }

  /**
   * The start-up sync: throws QueueError (`targets_file_unreadable` for an
   * explicitly set file that is missing, `invalid_input` for a bad one). The
   * default path missing is an empty file.
   */
  async start(): Promise<void> {
    const { path, explicit } = this.#file;
    const existed = await exists(path);
    const targets = await loadTargetsFile(path, { missingOk: !explicit });
    if (existed) this.#lastRead = targets;
    await this.#sync(targets);
  }

  /** A re-sync after the registry was lost; never keeps a bad read (logs an error and syncs the last good one instead). */
  async resync(): Promise<void> {
    const { path } = this.#file;
    let targets: Target[];
    try {
      targets = await loadTargetsFile(path);
      this.#lastRead = targets;
    } catch (err) {
      const missing = !(await exists(path));
      // A default file that never existed still does not: nothing was lost.
      if (!(missing && this.#lastRead === undefined && !this.#file.explicit)) {
        this.#log.error(
          { file: path, code: isQueueError(err) ? err.code : undefined, err: (err as Error).message, kept: this.#lastRead?.length ?? 0 },
          `the targets file cannot be used (${missing ? 'missing' : 'unreadable or invalid'}): keeping the ${this.#lastRead?.length ?? 0} file targets last read from it`,
        );
      }
      targets = this.#lastRead ?? [];
    }
    await this.#sync(targets);
  }

  async #sync(targets: Target[]): Promise<void> {
    const synced = await this.#queue.targets.syncFromFile(targets);
    this.#log.info({ file: this.#file.path, ...synced }, targets.length === 0 ? 'no targets file entries; register targets through the API' : 'targets file synced into the registry');
  }
}

function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  );
}

/**
 * Every process that notices a loss: the captures it accepted that had not
 * finished lost their records and jobs with it (answered 202, then nothing).
 * They are queued again with their ids (requeuedAfterDataLoss) and one line
 * names them.
 */
async function requeueLostCaptures(queue: HeapcapQueue, log: Logger): Promise<void> {
  const lost = await queue.epoch.accepted.requeueLost();
  if (lost.length === 0) return;
  queue.epoch.countLostCaptures('accepted', lost.length);
  log.warn(
    { code: 'redis_data_lost', captures: lost },
    `${lost.length} accepted capture(s) lost with Redis's data before they started (${lost.map((c) => c.captureId).join(', ')}): queued again with the same ids (requeuedAfterDataLoss)`,
  );
}

/**
 * How long after noticing a loss the captures this process accepted wait
 * before they are queued again (their GET answers from memory meanwhile): longer than a worker's lease renewal
 * at the default 30 s lease (every 10 s), within which a running capture's
 * worker writes its record again itself.
 */
export const LOST_CAPTURES_GRACE_MS = 12_000;

/** Keeps the registry synced; `stop()` ends it (idempotent). */
export interface TargetsKeeper {
  /** Check the marker now and re-sync when it is gone; resolves when done (never rejects). */
  check(): Promise<void>;
  stop(): void;
}

/**
 * Re-sync the targets file whenever the registry has lost it; checks every
 * `intervalMs` and on every reconnect. The same check watches the Redis epoch
 * sentinel (queue redis-epoch.ts): the process that first sees it gone logs
 * the one line saying what was lost; every process that notices queues again
 * the captures it accepted and logs their ids. (The retention
 * janitor is re-created by the schedule worker's reconcile.) `afterLoss` (the
 * rules file applied again) runs after the targets are back.
 */
export function keepTargetsSynced(queue: HeapcapQueue, sync: TargetsFileSync, log: Logger, intervalMs = 5_000, afterLoss?: () => Promise<unknown>): TargetsKeeper {
  let running: Promise<void> | undefined;
  /** A loss was noticed (or the registry found gone) and `afterLoss` has not run since: it runs at the next check that gets there. */
  let afterLossPending = false;
  /** When this process noticed a loss whose accepted captures are not written again yet. */
  let lossNoticedAt: number | undefined;
  let stopped = false;
  const check = (): Promise<void> =>
    (running ??= (async () => {
      try {
        if (stopped) return;
        const epoch = await queue.epoch.check();
        if (epoch === 'lost') {
          log.error(
            { lost: LOST_WITH_REDIS, recreated: RECREATED_AFTER_LOSS },
            `Redis lost its data (the epoch sentinel is gone: a restart without persistence, a failover or FLUSHALL): lost ${LOST_WITH_REDIS.join(', ')}; heapcap re-creates ${RECREATED_AFTER_LOSS.slice(0, -1).join(', ')} and ${RECREATED_AFTER_LOSS.at(-1)}`,
          );
        }
        // The captures this process accepted are queued again only after a grace: a worker still running one
        // takes its lock again and writes its record as running at its next lease renewal (at once on
        // reconnect; lease.ts), and that capture must not run a second time.
        if (epoch !== 'kept') lossNoticedAt ??= Date.now();
        if (lossNoticedAt !== undefined && Date.now() - lossNoticedAt >= LOST_CAPTURES_GRACE_MS) {
          lossNoticedAt = undefined;
          await requeueLostCaptures(queue, log);
        } else if (lossNoticedAt === undefined) await queue.epoch.accepted.prune();
        if (epoch !== 'kept') afterLossPending = true;
        if (!(await queue.targets.isSynced())) {
          log.warn('the target registry is gone (Redis lost its data?): syncing the targets file again');
          await sync.resync();
          afterLossPending = true;
        }
        // After the targets: what else came from files (the rules file) is checked against the registry.
        if (afterLossPending && afterLoss !== undefined) {
          afterLossPending = false;
          await afterLoss();
        }
      } catch (err) {
        // Redis down: the next tick tries again.
        log.debug({ err }, 'targets registry check failed; will retry');
      } finally {
        running = undefined;
      }
    })());
  const onReady = (): void => void check();
  queue.redis.on('ready', onReady);
  const timer = setInterval(onReady, intervalMs);
  timer.unref();
  return {
    check,
    stop() {
      stopped = true;
      clearInterval(timer);
      queue.redis.off('ready', onReady);
    },
  };
}
