/**
 * Cleanup that must outlive a failed put: aborting a multipart upload (so no
 * orphaned parts stay billed and invisible) and deleting an object that may
 * have become visible while the put was being cancelled.
 *
 * When the store is down, the abort cannot be sent at the moment the put
 * fails, so the task is kept and retried in the background until it succeeds
 * or `giveUpAfterMs` passes. Timers are unref'd: a short-lived CLI process is
 * not held open by them (it may call `drain()` before exiting). If the process
 * dies with tasks pending, the bucket's lifecycle rule
 * (AbortIncompleteMultipartUpload) is the last resort; MinIO also drops stale
 * uploads after 24 h by default.
 */
import { AbortMultipartUploadCommand, DeleteObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { setTimeout as sleep } from 'node:timers/promises';
import { isNoSuchUpload } from './errors.ts';

/** One cleanup step. */
export type CleanupTask =
  | { kind: 'abort-multipart'; bucket: string; key: string; uploadId: string }
  | { kind: 'delete-object'; bucket: string; key: string };

/** Background retry policy for cleanup tasks that failed at once. */
export interface JanitorOptions {
  retryEveryMs: number;
  giveUpAfterMs: number;
}

interface Pending {
  task: CleanupTask;
  since: number;
}

/** Runs cleanup tasks now and retries the ones that failed until they succeed or expire. */
export class S3Janitor {
  readonly #client: S3Client;
  readonly #options: JanitorOptions;
  readonly #pending = new Set<Pending>();
  #timer: NodeJS.Timeout | undefined;
  #sweeping: Promise<void> | undefined;
  #closed = false;
  #expired = 0;

  constructor(client: S3Client, options: JanitorOptions) {
    this.#client = client;
    this.#options = options;
  }

  /** Runs `task` now; on failure keeps it for background retries. Resolves true when it is done. */
  async run(task: CleanupTask): Promise<boolean> {
    try {
      await this.#attempt(task);
      return true;
    } catch {
      if (!this.#closed) {
        this.#pending.add({ task, since: performance.now() });
        this.#schedule();
      }
      return false;
    }
  }

  /** Tasks still waiting for the store. */
  get pending(): number {
    return this.#pending.size;
  }

  /** Tasks abandoned after `giveUpAfterMs` (their uploads may still be open). */
  get expired(): number {
    return this.#expired;
  }

  /** Retries pending tasks until none is left or `timeoutMs` passes; resolves with how many remain. */
  async drain(timeoutMs: number): Promise<number> {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      await this.#sweep();
      const left = deadline - performance.now();
      if (this.#pending.size === 0 || left <= 0) return this.#pending.size;
      await sleep(Math.min(this.#options.retryEveryMs, left));
    }
  }

  /** Stops background retries; pending tasks are dropped (returns how many). Idempotent. */
  close(): number {
    this.#closed = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    const dropped = this.#pending.size;
    this.#pending.clear();
    return dropped;
  }

  async #attempt(task: CleanupTask): Promise<void> {
    if (task.kind === 'abort-multipart') {
      try {
        await this.#client.send(
          new AbortMultipartUploadCommand({ Bucket: task.bucket, Key: task.key, UploadId: task.uploadId }),
        );
      } catch (err) {
        // Already aborted (by an earlier attempt whose answer was lost).
        if (!isNoSuchUpload(err)) throw err;
      }
    } else {
      await this.#client.send(new DeleteObjectCommand({ Bucket: task.bucket, Key: task.key }));
    }
  }

  #schedule(): void {
    if (this.#closed || this.#timer !== undefined || this.#pending.size === 0) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      void this.#sweep().finally(() => this.#schedule());
    }, this.#options.retryEveryMs);
    this.#timer.unref();
  }

  #sweep(): Promise<void> {
    // One sweep at a time; `.finally` runs asynchronously, so the slot is
    // cleared only after the sweep that filled it.
    this.#sweeping ??= this.#sweepOnce().finally(() => {
      this.#sweeping = undefined;
    });
    return this.#sweeping;
  }

  async #sweepOnce(): Promise<void> {
    for (const item of [...this.#pending]) {
      try {
        await this.#attempt(item.task);
        this.#pending.delete(item);
      } catch {
        if (performance.now() - item.since > this.#options.giveUpAfterMs) {
          this.#pending.delete(item);
          this.#expired += 1;
        }
      }
    }
  }
}
