/**
 * The watch rules service: create, read, replace, pause, resume and delete
 * rules (targets:admin: a rule takes captures by itself, of any target it
 * matches), and the samples of a target. Every change is audited before it
 * is made. Routes call only this.
 */
import fp from 'fastify-plugin';
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { z } from 'zod';
import type { WatchSettings } from '@heapcap/config';
import { type HeapcapQueue } from '@heapcap/state';
import { buildWatchRule, checkWatchRule, watchedBy, type WatchRule, type WatchRuleSpec, type WatchSample } from '@heapcap/state/watch';
import { ApiError, refuseFileRule, validationFailed } from '../../errors.ts';
import { principalOf } from '../infra/auth.ts';
import type { LatestSamplesResponseSchema, SamplesResponseSchema, WatchRuleViewSchema } from '../../schemas/watch.ts';
import { fromQueue } from './queue-errors.ts';
import { prometheusSamples } from './prometheus-samples.ts';

export type WatchRuleView = z.output<typeof WatchRuleViewSchema>;
export type SamplesView = z.output<typeof SamplesResponseSchema>;
export type LatestSamplesView = z.output<typeof LatestSamplesResponseSchema>;

export interface WatchRulesService {
  list(): Promise<WatchRuleView[]>;
  get(id: string): Promise<WatchRuleView>;
  create(req: FastifyRequest, spec: WatchRuleSpec): Promise<WatchRuleView>;
  put(req: FastifyRequest, id: string, spec: WatchRuleSpec): Promise<{ view: WatchRuleView; created: boolean }>;
  setEnabled(req: FastifyRequest, id: string, enabled: boolean): Promise<WatchRuleView>;
  remove(req: FastifyRequest, id: string): Promise<void>;
  samples(targetId: string, query: { since?: string | undefined; until?: string | undefined; limit: number }): Promise<SamplesView>;
  /** The newest `points` samples of each target since `since` (default an hour ago), one Redis round trip for all. */
  latestSamples(query: { ids: string; points: number; since?: string | undefined }): Promise<LatestSamplesView>;
}

declare module 'fastify' {
  interface FastifyInstance {
    watchRules: WatchRulesService;
  }
}

const HOUR_MS = 3_600_000;

const watchRulesPlugin: FastifyPluginAsync<{ queue: HeapcapQueue; settings: WatchSettings }> = async (app, { queue, settings }) => {
  const registered = async () => (await fromQueue(() => queue.targets.list())).map((e) => e.target);

  const view = async (rule: WatchRule): Promise<WatchRuleView> => {
    const [targets, states] = await Promise.all([registered(), fromQueue(() => queue.watch.states(rule.id))]);
    const watched = watchedBy(rule, targets);
    const downs = await fromQueue(() => queue.watch.downs(watched.map((t) => t.id)));
    const rows = await Promise.all(
      watched.map(async (t) => {
        const s = states.get(t.id) ?? { targetId: t.id, state: 'ok' as const, since: 0, firedAt: null, suppressedThisEpisode: false, value: null, lastSampleAt: null, lastFiring: null };
        const lease = await fromQueue(() => queue.watch.leaseOf(t.id));
        return { ...s, sampler: lease?.holder ?? null, down: downs.get(t.id) ?? null };
      }),
    );
    const last = [...states.values()].filter((s) => s.lastFiring !== null).sort((a, b) => (b.lastFiring!.at < a.lastFiring!.at ? -1 : 1))[0];
    return {
      rule,
      source: rule.source ?? 'api',
      state: rule.enabled ? 'active' : 'paused',
      matches: watched.length,
      targets: rows,
      lastFiring: last === undefined ? null : { ...last.lastFiring!, targetId: last.targetId },
    };
  };

  const existing = async (id: string): Promise<WatchRule> => {
    const r = await fromQueue(() => queue.watch.get(id));
    if (r === null) throw new ApiError('not_found', `no watch rule ${id}`, { ruleId: id });
    return r;
  };

  const checked = async (req: FastifyRequest, spec: WatchRuleSpec, prior: WatchRule | null): Promise<WatchRule> => {
    const issues = checkWatchRule(spec, { intervalMs: settings.intervalMs, retentionMs: settings.retentionMs, targets: await registered() });
    if (issues.length > 0) throw validationFailed(issues.map((i) => ({ in: 'body', ...i })));
    return buildWatchRule(spec, principalOf(req).name, prior);
  };

  const audit = (req: FastifyRequest, action: string, r: WatchRule): Promise<unknown> =>
    fromQueue(() =>
      app.audit.record(req, {
        action,
        targetId: r.target,
        details: { ruleId: r.id, when: r.when, cooldownSeconds: r.cooldownSeconds, maxPerDay: r.maxPerDay, enabled: r.enabled, selector: r.selector },
      }),
    );

  const service: WatchRulesService = {
    async list() {
      return Promise.all((await fromQueue(() => queue.watch.list())).map(view));
    },
    async get(id) {
      return view(await existing(id));
    },
    async create(req, spec) {
      if (spec.id !== undefined && (await fromQueue(() => queue.watch.get(spec.id!))) !== null) {
        throw new ApiError('conflict', `watch rule "${spec.id}" already exists; use PUT /v1/watch-rules/${spec.id} to replace it`, { ruleId: spec.id });
      }
      const r = await checked(req, spec, null);
      await audit(req, 'watch_rule.create', r);
      await fromQueue(() => queue.watch.put(r));
      return view(r);
    },
    async put(req, id, spec) {
      if (spec.id !== undefined && spec.id !== id) throw validationFailed([{ in: 'body', path: 'id', message: `must equal the id in the URL (${id})` }]);
      const prior = await fromQueue(() => queue.watch.get(id));
      if (prior !== null) refuseFileRule('watch rule', prior);
      const r = await checked(req, { ...spec, id }, prior);
      await audit(req, prior === null ? 'watch_rule.create' : 'watch_rule.update', r);
      const { created } = await fromQueue(() => queue.watch.put(r));
      return { view: await view(r), created };
    },
    async setEnabled(req, id, enabled) {
      const prior = await existing(id);
      refuseFileRule('watch rule', prior);
      const r: WatchRule = { ...prior, enabled, updatedAt: new Date().toISOString() };
      await audit(req, enabled ? 'watch_rule.resume' : 'watch_rule.pause', r);
      await fromQueue(() => queue.watch.put(r));
      return view(r);
    },
    async remove(req, id) {
      const r = await existing(id);
      refuseFileRule('watch rule', r);
      await audit(req, 'watch_rule.delete', r);
      await fromQueue(() => queue.watch.remove(id));
    },
    async latestSamples(query) {
      const ids = [...new Set(query.ids.split(','))];
      const since = query.since === undefined ? Date.now() - HOUR_MS : Date.parse(query.since);
      const [newest, downs] = await Promise.all([fromQueue(() => queue.watch.newestSamples(ids, since, query.points)), fromQueue(() => queue.watch.downs(ids))]);
      return { since: new Date(since).toISOString(), items: ids.map((targetId) => ({ targetId, samples: newest.get(targetId) ?? [], down: downs.get(targetId) ?? null })) };
    },
    async samples(targetId, query) {
      if ((await fromQueue(() => queue.targets.get(targetId))) === null) throw new ApiError('not_found', `no target ${targetId} in the registry`, { targetId });
      // Stream ids are milliseconds since 1970: earlier times select nothing; since after until is an empty window.
      const until = Math.max(0, query.until === undefined ? Date.now() : Date.parse(query.until));
      const since = Math.max(0, query.since === undefined ? until - HOUR_MS : Date.parse(query.since));
      // A range that starts before what Redis keeps comes from Prometheus when there is one: it kept
      // what /metrics exported (heapcap_target_*) for longer. Shorter ranges stay on Redis, which has
      // every sample rather than one per scrape.
      const fromPrometheus = settings.prometheusUrl !== null && since < Date.now() - settings.retentionMs && since <= until;
      const read = async (): Promise<WatchSample[]> => {
        if (since > until) return [];
        if (fromPrometheus) return prometheusSamples(settings.prometheusUrl!, targetId, since, until, query.limit);
        return (await fromQueue(() => queue.watch.samples(targetId, since, until, query.limit))).map((x) => x.sample);
      };
      const [stored, count, lease, downs] = await Promise.all([
        read(),
        fromQueue(() => queue.watch.sampleCount(targetId)),
        fromQueue(() => queue.watch.leaseOf(targetId)),
        fromQueue(() => queue.watch.downs([targetId])),
      ]);
      return {
        targetId,
        since: new Date(since).toISOString(),
        until: new Date(until).toISOString(),
        sampler: lease?.holder ?? null,
        keep: Math.ceil(settings.retentionMs / settings.intervalMs),
        stored: count,
        source: fromPrometheus ? ('prometheus' as const) : ('redis' as const),
        down: downs.get(targetId) ?? null,
        items: stored.map((sample) => ({ ...sample, heapUsedRatio: sample.heapLimitBytes === null || sample.heapLimitBytes === 0 ? null : sample.heapUsedBytes / sample.heapLimitBytes })),
      };
    },
  };
  app.decorate('watchRules', service);
};

export default fp(watchRulesPlugin, { name: 'heapcap-watch-rules', dependencies: ['heapcap-audit'] });
