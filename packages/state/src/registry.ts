/**
 * The target registry: the allowlist of what may be captured. Loaded from the
 * targets file at start-up and edited through the admin API; kept in one Redis
 * hash (id → entry JSON) so every api and worker process sees the same list.
 */
import { assertUniqueNames, ConfigFileError, loadConfigFile } from '@heapcap/config';
import type { QueueContext } from './context.ts';
import { withRedisDeadline } from './connection.ts';
import { QueueError } from './errors.ts';
import { TargetSchema, TargetsFileSchema, type Target } from './schemas.ts';

/** A registry entry: the target, where it came from and when it last changed. */
export interface RegisteredTarget {
  target: Target;
  /** `file`: the targets file (re-synced at every start); `api`: the admin API. */
  source: 'file' | 'api';
  updatedAt: string;
}

/** Read and validate a targets file (YAML or JSON). With `missingOk`, a missing file is an empty list. */
export async function loadTargetsFile(path: string, options: { missingOk?: boolean } = {}): Promise<Target[]> {
  try {
    const file = await loadConfigFile(path, TargetsFileSchema, { what: 'targets file', ...(options.missingOk === true ? { ifMissing: { targets: [] } } : {}) });
    assertUniqueNames(path, 'target id', file.targets.map((t) => t.id));
    return file.targets;
  } catch (err) {
    if (!(err instanceof ConfigFileError)) throw err;
    // The queue's codes, which the service maps to its start-up messages.
    const code = err.problem === 'unreadable' ? 'targets_file_unreadable' : 'invalid_input';
    throw new QueueError(code, err.message, { path, issues: err.issues, ...(err.line === undefined ? {} : { line: err.line, column: err.column }) }, err);
  }
}

/** CRUD over the registry hash. */
export class TargetRegistry {
  readonly #ctx: QueueContext;

  constructor(ctx: QueueContext) {
    this.#ctx = ctx;
  }

  /**
   * Make the file's targets the registry's file-sourced entries: add/replace
   * each, remove file entries no longer in the file, keep API-added entries
   * (an API entry with the same id as a file entry is replaced by the file's).
   */
  async syncFromFile(targets: Target[]): Promise<{ added: number; removed: number }> {
    const key = this.#ctx.keys.targets();
    // Raw entries, not list(): a file entry that no longer validates must still be removed.
    const current = await withRedisDeadline(this.#ctx.redis.hgetall(key), this.#ctx.settings.redisTimeoutMs, 'targets sync');
    const ids = new Set(targets.map((t) => t.id));
    const stale = Object.entries(current)
      .filter(([id, json]) => (JSON.parse(json) as { source?: unknown }).source === 'file' && !ids.has(id))
      .map(([id]) => id);
    const now = new Date().toISOString();
    const multi = this.#ctx.redis.multi();
    for (const t of targets) multi.hset(key, t.id, JSON.stringify({ target: t, source: 'file', updatedAt: now } satisfies RegisteredTarget));
    if (stale.length > 0) multi.hdel(key, ...stale);
    // In the same transaction: the marker exists exactly when the file's entries do.
    multi.set(this.#ctx.keys.targetsSynced(), now);
    await withRedisDeadline(multi.exec(), this.#ctx.settings.redisTimeoutMs, 'targets sync');
    return { added: targets.length, removed: stale.length };
  }

  /**
   * True while the registry still holds the last file sync. False after Redis
   * lost its data (a restart without persistence, a failover to an empty
   * replica, FLUSHALL): the targets file must be synced again.
   */
  async isSynced(): Promise<boolean> {
    const n = await withRedisDeadline(this.#ctx.redis.exists(this.#ctx.keys.targetsSynced()), this.#ctx.settings.redisTimeoutMs, 'targets sync marker');
    return n === 1;
  }

  /** Every registered target, sorted by id. */
  async list(): Promise<RegisteredTarget[]> {
    const all = await withRedisDeadline(this.#ctx.redis.hgetall(this.#ctx.keys.targets()), this.#ctx.settings.redisTimeoutMs, 'targets list');
    // An entry stored before a validation rule was added (say, port 0) and that
    // fails it now is left out of the list rather than failing the whole list;
    // get() names it, and PUT or DELETE replaces or removes it.
    return Object.entries(all)
      .flatMap(([id, json]) => {
        const entry = decodeEntry(id, json);
        return entry instanceof QueueError ? [] : [entry];
      })
      .sort((a, b) => a.target.id.localeCompare(b.target.id));
  }

  /** One entry, or null; QueueError `invalid_input` for a stored entry that no longer validates. */
  async get(id: string): Promise<RegisteredTarget | null> {
    const v = await withRedisDeadline(this.#ctx.redis.hget(this.#ctx.keys.targets(), id), this.#ctx.settings.redisTimeoutMs, 'targets get');
    if (v === null) return null;
    const entry = decodeEntry(id, v);
    if (entry instanceof QueueError) throw entry;
    return entry;
  }

  /** True when an entry with this id is stored (valid or not). */
  async has(id: string): Promise<boolean> {
    return (await withRedisDeadline(this.#ctx.redis.hexists(this.#ctx.keys.targets(), id), this.#ctx.settings.redisTimeoutMs, 'targets has')) === 1;
  }

  /** Create or replace a target (validated); `created` is false for a replacement. */
  async put(input: unknown, source: 'file' | 'api' = 'api'): Promise<{ entry: RegisteredTarget; created: boolean }> {
    const parsed = TargetSchema.safeParse(input);
    if (!parsed.success) {
      const issues = parsed.error.issues.map((i) => ({ path: i.path.join('.'), message: i.message }));
      throw new QueueError('invalid_input', 'invalid target', { issues });
    }
    const entry: RegisteredTarget = { target: parsed.data, source, updatedAt: new Date().toISOString() };
    const added = await withRedisDeadline(
      this.#ctx.redis.hset(this.#ctx.keys.targets(), parsed.data.id, JSON.stringify(entry)),
      this.#ctx.settings.redisTimeoutMs,
      'targets put',
    );
    return { entry, created: added === 1 };
  }

  /** Remove a target; false when there was none. Captures still queued for it then fail with target_not_found. */
  async remove(id: string): Promise<boolean> {
    const n = await withRedisDeadline(this.#ctx.redis.hdel(this.#ctx.keys.targets(), id), this.#ctx.settings.redisTimeoutMs, 'targets delete');
    return n === 1;
  }
}

/** A registry entry as stored (its JSON), or the QueueError `invalid_input` of one that no longer validates. */
export function decodeEntry(id: string, json: string): RegisteredTarget | QueueError {
  const v = JSON.parse(json) as { target: unknown; source: 'file' | 'api'; updatedAt: string };
  const parsed = TargetSchema.safeParse(v.target);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => ({ path: i.path.join('.'), message: i.message }));
    const text = issues.map((i) => `${i.path}: ${i.message}`).join('; ');
    return new QueueError('invalid_input', `the registry entry "${id}" no longer passes validation (${text}); replace it (PUT) or remove it`, { targetId: id, issues });
  }
  return { target: parsed.data, source: v.source, updatedAt: v.updatedAt };
}
