/**
 * The rules file (HEAPCAP_RULES_FILE): schedules and watch rules declared in
 * YAML, like dotnet-monitor's collection rules, beside the ones made through
 * the API. Every replica applies the same file at start and on change; the
 * definitions are the same Redis hashes the API writes, marked `source: file`.
 *
 * Convergence: an apply runs under one Redis lock (one replica at a time),
 * writes only what differs from Redis (a second replica applying the same file
 * writes nothing, so a schedule's job scheduler is not re-upserted and keeps
 * its timing), and removes only rules whose source is `file`: a rule made
 * through the API is never touched by a file, and an id the API already uses
 * refuses the whole file (the operator picks another id).
 */
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { acquireKeyLock, releaseKeyLock } from './locks.ts';
import type { QueueContext } from './context.ts';
import { RULES_FILE_OWNER } from './rule-source.ts';
import { buildSchedule, checkSchedule } from './schedules/check.ts';
import { ScheduleSpecSchema, type Schedule } from './schedules/schema.ts';
import type { ScheduleStore } from './schedules/store.ts';
import type { Target } from './schemas.ts';
import { buildWatchRule, checkWatchRule } from './watch/check.ts';
import { WatchRuleSpecSchema, type WatchRule } from './watch/schema.ts';
import type { WatchStore } from './watch/store.ts';

/** The file: `schedules` and `watchRules`, each entry the API's body with a required `id`. */
export const RulesFileSchema = z
  .strictObject({
    schedules: z.array(ScheduleSpecSchema).default([]),
    watchRules: z.array(WatchRuleSpecSchema).default([]),
  })
  .superRefine((f, ctx) => {
    for (const [list, entries] of [
      ['schedules', f.schedules],
      ['watchRules', f.watchRules],
    ] as const) {
      const seen = new Set<string>();
      entries.forEach((e, i) => {
        // The id is what the file and Redis agree on: without it a change to the file could not be told from a new rule.
        if (e.id === undefined) ctx.addIssue({ code: 'custom', path: [list, i], message: 'id is required in the rules file (the id is how a changed rule is told from a new one)' });
        else if (seen.has(e.id)) ctx.addIssue({ code: 'custom', path: [list, i, 'id'], message: `"${e.id}" is declared twice` });
        else seen.add(e.id);
      });
    }
  });
export type RulesFile = z.output<typeof RulesFileSchema>;

/** One problem of the file: dotted path (`schedules.0.every`) and why. */
export interface RulesFileIssue {
  path: string;
  message: string;
}

/** What a check needs: the settings the API checks bodies against, and the registry as it is now. */
export interface RulesCheckContext {
  minIntervalMs: number;
  watchIntervalMs: number;
  watchRetentionMs: number;
  targets: readonly Target[];
}

/** The file's entries checked as the API checks bodies; issues name the file path of each. */
export function checkRulesFile(file: RulesFile, ctx: RulesCheckContext): RulesFileIssue[] {
  const issues: RulesFileIssue[] = [];
  file.schedules.forEach((spec, i) => {
    for (const issue of checkSchedule(spec, { minIntervalMs: ctx.minIntervalMs, targets: ctx.targets }).issues) issues.push({ path: `schedules.${i}.${issue.path}`, message: issue.message });
  });
  file.watchRules.forEach((spec, i) => {
    for (const issue of checkWatchRule(spec, { intervalMs: ctx.watchIntervalMs, retentionMs: ctx.watchRetentionMs, targets: ctx.targets })) issues.push({ path: `watchRules.${i}.${issue.path}`, message: issue.message });
  });
  return issues;
}

/** What an apply changed (ids), or why it refused the file. */
export interface RulesApplyReport {
  schedules: { added: string[]; updated: string[]; removed: string[] };
  watchRules: { added: string[]; updated: string[]; removed: string[] };
  /** Ids the file declares that API-made rules already hold: the file was refused and nothing written. */
  conflicts: RulesFileIssue[];
}

/** How long one apply may hold the lock; an apply is a few Redis writes per changed rule. */
const LOCK_MS = 30_000;
/** How long to wait for another replica's apply to finish before giving up (the next change or start tries again). */
const WAIT_MS = 35_000;

/** JSON with object keys sorted at every level: two rules built in different key orders compare equal. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v !== null && typeof v === 'object') {
    const entries = Object.entries(v).filter(([, x]) => x !== undefined);
    entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, x]) => `${JSON.stringify(k)}:${canonical(x)}`).join(',')}}`;
  }
  return JSON.stringify(v);
}

/** The parts of a stored rule that the file decides (owner and times are Redis's). */
function declared(r: { owner: string; createdAt: string; updatedAt: string }): string {
  const { owner: _o, createdAt: _c, updatedAt: _u, ...rest } = r;
  return canonical(rest);
}

/** Applies the rules file to the schedule and watch rule hashes (`queue.rulesFile`). */
export class RulesFileApplier {
  readonly #ctx: QueueContext;
  readonly #schedules: ScheduleStore;
  readonly #watch: WatchStore;

  constructor(ctx: QueueContext, schedules: ScheduleStore, watch: WatchStore) {
    this.#ctx = ctx;
    this.#schedules = schedules;
    this.#watch = watch;
  }

  /**
   * Apply a checked file: add and replace its rules (source `file`), remove the
   * file rules it no longer declares. One replica at a time; idempotent.
   */
  async apply(file: RulesFile, checkCtx: RulesCheckContext, now = new Date()): Promise<RulesApplyReport> {
    const token = randomUUID();
    const key = this.#ctx.keys.rulesSyncLock();
    const deadline = Date.now() + WAIT_MS;
    // Another replica applying the same file at once: wait for it (it holds the lock for a few writes), then find nothing to do.
    while (!(await acquireKeyLock(this.#ctx, key, token, LOCK_MS))) {
      if (Date.now() > deadline) throw new Error(`another replica held the rules file lock for more than ${WAIT_MS / 1000} s`);
      await new Promise((r) => setTimeout(r, 50));
    }
    try {
      return await this.#applyLocked(file, checkCtx, now);
    } finally {
      await releaseKeyLock(this.#ctx, key, token).catch(() => false);
    }
  }

  async #applyLocked(file: RulesFile, ctx: RulesCheckContext, now: Date): Promise<RulesApplyReport> {
    const [schedules, rules] = await Promise.all([this.#schedules.list(), this.#watch.list()]);
    const buildOne = (spec: RulesFile['schedules'][number], prior: Schedule | null): Schedule => ({
      ...buildSchedule(spec, checkSchedule(spec, { minIntervalMs: ctx.minIntervalMs, targets: ctx.targets }), RULES_FILE_OWNER, prior, now),
      source: 'file',
    });
    const kinds = [
      new Kind('schedules', 'schedule', file.schedules, schedules, buildOne, this.#schedules),
      new Kind('watchRules', 'watch rule', file.watchRules, rules, (spec, prior: WatchRule | null): WatchRule => ({ ...buildWatchRule(spec, RULES_FILE_OWNER, prior, now), source: 'file' }), this.#watch),
    ] as const;
    const conflicts = kinds.flatMap((k) => k.conflicts());
    const report: RulesApplyReport = { schedules: emptyChanges(), watchRules: emptyChanges(), conflicts };
    if (conflicts.length > 0) return report;
    report.schedules = await kinds[0].apply();
    report.watchRules = await kinds[1].apply();
    return report;
  }
}

type Changes = RulesApplyReport['schedules'];
const emptyChanges = (): Changes => ({ added: [], updated: [], removed: [] });

/** A stored rule as the applier sees it (a schedule or a watch rule). */
interface StoredRule {
  id: string;
  owner: string;
  source?: 'file' | 'api' | undefined;
  createdAt: string;
  updatedAt: string;
}

/** One kind of rule (schedules, watch rules): the file's entries against what Redis holds. */
class Kind<S extends { id?: string | undefined }, R extends StoredRule> {
  readonly #byId: Map<string, R>;
  readonly list: 'schedules' | 'watchRules';
  readonly noun: string;
  readonly entries: readonly S[];
  readonly stored: readonly R[];
  readonly build: (spec: S, prior: R | null) => R;
  readonly store: { put(r: R): Promise<unknown>; remove(id: string): Promise<unknown> };

  constructor(
    list: 'schedules' | 'watchRules',
    noun: string,
    entries: readonly S[],
    stored: readonly R[],
    build: (spec: S, prior: R | null) => R,
    store: { put(r: R): Promise<unknown>; remove(id: string): Promise<unknown> },
  ) {
    this.list = list;
    this.noun = noun;
    this.entries = entries;
    this.stored = stored;
    this.build = build;
    this.store = store;
    this.#byId = new Map(stored.map((r) => [r.id, r]));
  }

  /** Ids of the file that API-made rules hold. */
  conflicts(): RulesFileIssue[] {
    return this.entries.flatMap((e, i) => {
      const prior = this.#byId.get(e.id!);
      if (prior === undefined || prior.source === 'file') return [];
      return [{ path: `${this.list}.${i}.id`, message: `${this.noun} "${e.id}" was made through the API (owner "${prior.owner}"): delete it there or pick another id` }];
    });
  }

  /** Write what differs, remove the file rules the file no longer declares. */
  async apply(): Promise<Changes> {
    const out = emptyChanges();
    for (const spec of this.entries) {
      const prior = this.#byId.get(spec.id!) ?? null;
      const next = this.build(spec, prior);
      if (prior !== null && declared(prior) === declared(next)) continue;
      await this.store.put(next);
      (prior === null ? out.added : out.updated).push(next.id);
    }
    const inFile = new Set(this.entries.map((e) => e.id));
    for (const r of this.stored) {
      if (r.source !== 'file' || inFile.has(r.id)) continue;
      await this.store.remove(r.id);
      out.removed.push(r.id);
    }
    return out;
  }
}
