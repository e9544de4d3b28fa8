/**
 * A store whose `check` is remembered for a while: a worker checks its store
 * before every capture (write + fsync + delete of a probe file, or a PUT and a
 * DELETE), which at tens of captures a second was a tenth of its file-system
 * work for the same answer. A check that passed is taken as the answer for
 * `forMs`; any failed write or check forgets it, so the next capture checks
 * again (a store that went bad meanwhile fails one capture's write, then every
 * check, as before). Everything else goes straight to the store.
 */
import type { Readable } from 'node:stream';
import type { DocumentKind } from './keys.ts';
import type { ArtifactManifest } from './manifest.ts';
import type { ArtifactRef, ArtifactStore, ListedManifest, OpenOptions, PresignOptions, PutOptions, RemoveTarget, StoredArtifact, StoredObject } from './types.ts';

/** How long a passed check stands when the caller does not say. */
export const REMEMBER_CHECK_MS = 10_000;

class RememberedCheck implements ArtifactStore {
  readonly #store: ArtifactStore;
  readonly #forMs: number;
  readonly #now: () => number;
  /** When the last check passed, with no failed write or check since; undefined: check again. */
  #passedAt: number | undefined;

  constructor(store: ArtifactStore, forMs: number, now: () => number) {
    this.#store = store;
    this.#forMs = forMs;
    this.#now = now;
  }

  get kind(): ArtifactStore['kind'] {
    return this.#store.kind;
  }
  get root(): string {
    return this.#store.root;
  }
  get canPresign(): boolean {
    return this.#store.canPresign;
  }

  async check(signal?: AbortSignal): Promise<void> {
    const passedAt = this.#passedAt;
    if (passedAt !== undefined && this.#now() - passedAt < this.#forMs && signal?.aborted !== true) return;
    this.#passedAt = undefined;
    await this.#store.check(signal);
    this.#passedAt = this.#now();
  }

  /** `work`, forgetting the passed check when it fails. */
  #write<T>(work: Promise<T>): Promise<T> {
    return work.catch((err: unknown) => {
      this.#passedAt = undefined;
      throw err;
    });
  }

  put(ref: ArtifactRef, source: Readable, options?: PutOptions): Promise<StoredArtifact> {
    return this.#write(this.#store.put(ref, source, options));
  }
  putManifest(ref: ArtifactRef, manifest: ArtifactManifest): Promise<StoredObject> {
    return this.#write(this.#store.putManifest(ref, manifest));
  }
  putDocument(target: RemoveTarget, kind: DocumentKind, document: unknown): Promise<StoredObject> {
    return this.#write(this.#store.putDocument(target, kind, document));
  }
  remove(target: RemoveTarget): Promise<void> {
    return this.#write(this.#store.remove(target));
  }
  getDocument(key: string): Promise<unknown> {
    return this.#store.getDocument(key);
  }
  open(key: string, options?: OpenOptions): Promise<Readable> {
    return this.#store.open(key, options);
  }
  presign(key: string, options?: PresignOptions): Promise<string> {
    return this.#store.presign(key, options);
  }
  listManifests(signal?: AbortSignal): AsyncIterable<ListedManifest> {
    return this.#store.listManifests(signal);
  }
  close(): Promise<void> {
    return this.#store.close();
  }
}

/** `store` with its passed checks remembered for `forMs` (see the module comment); `now` for tests. */
export function rememberCheck(store: ArtifactStore, forMs: number = REMEMBER_CHECK_MS, now: () => number = Date.now): ArtifactStore {
  return new RememberedCheck(store, forMs, now);
}
