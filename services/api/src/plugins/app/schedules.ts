/**
 * The schedules service: create, read, replace, pause, resume and delete
 * schedules. A token with captures:write creates schedules and changes its
 * own; changing another's needs targets:admin. Every change is audited before
 * it is made. Routes call only this.
 */
import fp from 'fastify-plugin';
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { z } from 'zod';
import type { ScheduleSettings } from '@heapcap/config';
import { type HeapcapQueue } from '@heapcap/state';
import { buildSchedule, checkSchedule, nextRuns, resolveTargets, type Schedule, type ScheduleRunState, type ScheduleSpec } from '@heapcap/state/schedules';
import { ApiError, refuseFileRule, validationFailed } from '../../errors.ts';
import { principalOf } from '../infra/auth.ts';
import type { ScheduleViewSchema } from '../../schemas/schedules.ts';
import { fromQueue } from './queue-errors.ts';

/** A schedule as the API shows it. */
export type ScheduleView = z.output<typeof ScheduleViewSchema>;

/** Schedule operations for the routes. */
export interface SchedulesService {
  list(): Promise<ScheduleView[]>;
  /** The schedule, or `not_found`. */
  get(id: string): Promise<ScheduleView>;
  /** Create; `conflict` when the id exists; `validation_failed` naming the field. */
  create(req: FastifyRequest, spec: ScheduleSpec): Promise<ScheduleView>;
  /** Create or replace (owner and creation time stay); `created` says which. */
  put(req: FastifyRequest, id: string, spec: ScheduleSpec): Promise<{ view: ScheduleView; created: boolean }>;
  /** Pause (`enabled: false`) or resume. */
  setEnabled(req: FastifyRequest, id: string, enabled: boolean): Promise<ScheduleView>;
  remove(req: FastifyRequest, id: string): Promise<void>;
}

declare module 'fastify' {
  interface FastifyInstance {
    schedules: SchedulesService;
  }
}

function notFound(id: string): ApiError {
  return new ApiError('not_found', `no schedule ${id}`, { scheduleId: id });
}

const schedulesPlugin: FastifyPluginAsync<{ queue: HeapcapQueue; settings: ScheduleSettings }> = async (app, { queue, settings }) => {
  const view = async (s: Schedule, runs: Map<string, ScheduleRunState>): Promise<ScheduleView> => {
    const now = Date.now();
    const [next, targets] = await Promise.all([s.enabled ? fromQueue(() => queue.schedules.schedulerNext(s.id)) : undefined, fromQueue(() => resolveTargets(queue, s))]);
    const state = runs.get(s.id);
    const lastCaptureId = state?.lastCaptureId ?? null;
    const last = lastCaptureId === null ? null : await fromQueue(() => queue.getCapture(lastCaptureId));
    return {
      schedule: s,
      source: s.source ?? 'api',
      state: s.enabled ? 'active' : 'paused',
      retention: { keepLast: s.retention.keepLast ?? settings.keepLast, maxAgeDays: s.retention.maxAgeDays ?? settings.maxAgeDays },
      matches: targets.length,
      nextRunAt: s.enabled ? nextRuns(s, now, next).map((t) => new Date(t).toISOString()) : [],
      lastRun: state?.lastRun ?? null,
      lastCapture: lastCaptureId === null ? null : { id: lastCaptureId, status: last?.status ?? null },
    };
  };
  const viewOne = async (s: Schedule): Promise<ScheduleView> => view(s, await fromQueue(() => queue.schedules.lastRuns()));

  const existing = async (id: string): Promise<Schedule> => {
    const s = await fromQueue(() => queue.schedules.get(id));
    if (s === null) throw notFound(id);
    return s;
  };

  /** The caller may change `s`: its owner, or a token with targets:admin. */
  const mayChange = (req: FastifyRequest, s: Schedule): void => {
    const p = principalOf(req);
    if (p.name !== s.owner && !p.scopes.has('targets:admin')) {
      throw new ApiError('forbidden', `schedule ${s.id} belongs to "${s.owner}"; changing another's schedule needs the targets:admin scope`, { requiredScope: 'targets:admin', owner: s.owner });
    }
  };

  /** Validate against the settings and the registry; the schedule to store, or validation_failed naming each field. */
  const checked = async (req: FastifyRequest, spec: ScheduleSpec, prior: Schedule | null): Promise<Schedule> => {
    const targets = (await fromQueue(() => queue.targets.list())).map((e) => e.target);
    const check = checkSchedule(spec, { minIntervalMs: settings.minIntervalMs, targets });
    if (check.issues.length > 0) throw validationFailed(check.issues.map((i) => ({ in: 'body', ...i })));
    return buildSchedule(spec, check, principalOf(req).name, prior);
  };

  const audit = (req: FastifyRequest, action: string, s: Schedule, details: Record<string, unknown> = {}): Promise<unknown> =>
    fromQueue(() => app.audit.record(req, { action, targetId: s.target, details: { scheduleId: s.id, ...details } }));

  const describe = (s: Schedule): Record<string, unknown> => ({
    selector: s.selector,
    every: s.every,
    cron: s.cron,
    timezone: s.cron === undefined ? undefined : (s.timezone ?? 'UTC'),
    enabled: s.enabled,
  });

  const service: SchedulesService = {
    async list() {
      const [all, runs] = await Promise.all([fromQueue(() => queue.schedules.list()), fromQueue(() => queue.schedules.lastRuns())]);
      return Promise.all(all.map((s) => view(s, runs)));
    },

    async get(id) {
      return viewOne(await existing(id));
    },

    async create(req, spec) {
      if (spec.id !== undefined && (await fromQueue(() => queue.schedules.get(spec.id!))) !== null) {
        throw new ApiError('conflict', `schedule "${spec.id}" already exists; use PUT /v1/schedules/${spec.id} to replace it`, { scheduleId: spec.id });
      }
      const s = await checked(req, spec, null);
      await audit(req, 'schedule.create', s, describe(s));
      await fromQueue(() => queue.schedules.put(s));
      return viewOne(s);
    },

    async put(req, id, spec) {
      if (spec.id !== undefined && spec.id !== id) throw validationFailed([{ in: 'body', path: 'id', message: `must equal the id in the URL (${id})` }]);
      const prior = await fromQueue(() => queue.schedules.get(id));
      if (prior !== null) refuseFileRule('schedule', prior);
      if (prior !== null) mayChange(req, prior);
      const s = await checked(req, { ...spec, id }, prior);
      await audit(req, prior === null ? 'schedule.create' : 'schedule.update', s, describe(s));
      const { created } = await fromQueue(() => queue.schedules.put(s));
      return { view: await viewOne(s), created };
    },

    async setEnabled(req, id, enabled) {
      const prior = await existing(id);
      refuseFileRule('schedule', prior);
      mayChange(req, prior);
      const s: Schedule = { ...prior, enabled, updatedAt: new Date().toISOString() };
      await audit(req, enabled ? 'schedule.resume' : 'schedule.pause', s);
      await fromQueue(() => queue.schedules.put(s));
      return viewOne(s);
    },

    async remove(req, id) {
      const prior = await existing(id);
      refuseFileRule('schedule', prior);
      mayChange(req, prior);
      await audit(req, 'schedule.delete', prior);
      await fromQueue(() => queue.schedules.remove(id));
    },
  };
  app.decorate('schedules', service);
};

export default fp(schedulesPlugin, { name: 'heapcap-schedules', dependencies: ['heapcap-audit'] });
