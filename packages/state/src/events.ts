/**
 * Pub/sub for "capture finished" and "cancel this running capture", on one
 * lazily created subscriber connection shared by every waiter of the process.
 * Pub/sub loses messages while disconnected, so every consumer also polls the
 * record (waitForCapture) or the cancel flag (the worker's lease tick).
 */
import { closeRedis, createRedis, type RedisClient } from './connection.ts';
import type { Keys } from './keys.ts';

type DoneListener = (status: string) => void;
type CancelListener = (captureId: string) => void;

/** The process's subscriber: done events by capture id, cancel requests. */
export class CaptureEvents {
  readonly #url: string;
  readonly #keys: Keys;
  #sub: RedisClient | undefined;
  #ready: Promise<void> | undefined;
  readonly #done = new Map<string, Set<DoneListener>>();
  readonly #cancel = new Set<CancelListener>();

  constructor(url: string, keys: Keys) {
    this.#url = url;
    this.#keys = keys;
  }

  /** Connect and subscribe once; later calls share the same promise. */
  ready(): Promise<void> {
    this.#ready ??= (async () => {
      const sub = createRedis(this.#url, 'blocking', `${this.#keys.prefix}:sub`);
      this.#sub = sub;
      sub.on('message', (channel: string, message: string) => this.#dispatch(channel, message));
      // ioredis re-subscribes by itself after a reconnect.
      await sub.subscribe(this.#keys.doneChannel(), this.#keys.cancelChannel());
    })();
    return this.#ready;
  }

  /** Call `listener` when capture `id` reaches a terminal status; returns the unsubscribe function. */
  onDone(id: string, listener: DoneListener): () => void {
    let set = this.#done.get(id);
    if (!set) this.#done.set(id, (set = new Set()));
    set.add(listener);
    return () => {
      set.delete(listener);
      if (set.size === 0) this.#done.delete(id);
    };
  }

  /** Call `listener` with the capture id of every cancel request; returns the unsubscribe function. */
  onCancel(listener: CancelListener): () => void {
    this.#cancel.add(listener);
    return () => this.#cancel.delete(listener);
  }

  #dispatch(channel: string, message: string): void {
    if (channel === this.#keys.cancelChannel()) {
      for (const l of [...this.#cancel]) l(message);
      return;
    }
    const [id, status] = message.split(' ');
    if (id === undefined || status === undefined) return;
    for (const l of [...(this.#done.get(id) ?? [])]) l(status);
  }

  /** Close the subscriber connection (idempotent). */
  async close(): Promise<void> {
    const sub = this.#sub;
    this.#sub = undefined;
    this.#done.clear();
    this.#cancel.clear();
    if (sub) {
      await closeRedis(sub);
    }
  }
}
