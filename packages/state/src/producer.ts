/** A BullMQ producer on the queue's command connection, opened on first use (most processes never add these jobs). */
import { Queue } from 'bullmq';
import type { QueueContext } from './context.ts';

export class LazyProducer<T> {
  readonly #ctx: QueueContext;
  readonly #name: string;
  #bull: Queue<T, void, string> | undefined;

  constructor(ctx: QueueContext, name: string) {
    this.#ctx = ctx;
    this.#name = name;
  }

  /** The producer (created now if it was not). */
  get bull(): Queue<T, void, string> {
    if (this.#bull === undefined) {
      this.#bull = new Queue<T, void, string>(this.#name, { connection: this.#ctx.redis, prefix: this.#ctx.keys.prefix });
      this.#bull.on('error', () => {});
    }
    return this.#bull;
  }

  /** Close it if it was opened. */
  async close(): Promise<void> {
    await this.#bull?.close();
  }
}
