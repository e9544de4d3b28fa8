/**
 * What a capture holds, for the routes: its summary, the diff of two
 * captures' summaries (with retained sizes where both were analysed), and
 * its retained-size analysis (a job on the queue, run by the worker).
 */
import fp from 'fastify-plugin';
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { AnalysisSchema, diffSummaries, LeakHuntSchema, SummarySchema, type Analysis, type LeakHunt, type Summary, type SummaryDiff } from '@heapcap/analysis';
import { driveUrlProblem, type AnalysisRequestOutcome, type AnalysisState, type CaptureRecord, type HeapcapQueue, type HuntDrive, type LeakHuntRecord } from '@heapcap/state';
import type { ArtifactStore } from '@heapcap/storage';
import type { RedactMode } from '@heapcap/config';
import { ApiError } from '../../errors.ts';
import { principalOf } from '../infra/auth.ts';
import { fromQueue } from './queue-errors.ts';

/** One side of a diff. */
export interface DiffSide {
  captureId: string;
  targetId: string;
  createdAt: string;
  analysed: boolean;
  /** This side's analysis: `none` (not asked for), queued, running, succeeded, failed; where to poll it. */
  analysis: { status: 'none' | AnalysisState['status']; poll: string; error?: string };
}

/** Operations for the summary, diff and analysis routes. */
export interface HeapAnalysisService {
  /** The stored summary of a succeeded capture; `summary_missing` when it has none. */
  summary(record: CaptureRecord): Promise<Summary>;
  /**
   * Suspects and per-class deltas from `base` to `head`; `target_mismatch` across targets unless `force`.
   * Never waits for an analysis and never starts one (a GET has no side effects): without both analyses
   * (with suspect groups) the suspects are summary-only, and the note and each side say what to ask for.
   */
  diff(base: CaptureRecord, head: CaptureRecord, force: boolean): Promise<{ base: DiffSide; head: DiffSide; forced: boolean; diff: SummaryDiff }>;
  /** Queue the retained-size analysis of capture `id` (or join the one queued or running); audited. */
  requestAnalysis(req: FastifyRequest, id: string): Promise<{ outcome: AnalysisRequestOutcome; record: CaptureRecord }>;
  /** The stored analysis of a capture whose analysis succeeded, else null. */
  analysis(record: CaptureRecord): Promise<Analysis | null>;
  /** Create a leak hunt of a registered target (a job for a worker); audited. */
  createHunt(req: FastifyRequest, input: { targetId: string; intervalMs: number; reason?: string | undefined; drive?: HuntDrive | undefined; redact?: RedactMode | undefined; allocations?: boolean | undefined }): Promise<LeakHuntRecord>;
  /** The newest hunts (of one target), their records only. */
  hunts(opts: { targetId?: string | undefined; limit: number }): Promise<LeakHuntRecord[]>;
  /** A hunt and, once it succeeded, its report; `not_found`; audited. */
  hunt(req: FastifyRequest, id: string): Promise<{ hunt: LeakHuntRecord; report: LeakHunt | null }>;
}

declare module 'fastify' {
  interface FastifyInstance {
    heapAnalysis: HeapAnalysisService;
  }
}

/** One side of a diff as the API answers it. */
export function side(r: CaptureRecord, analysed: boolean): DiffSide {
  return {
    captureId: r.id,
    targetId: r.targetId,
    createdAt: r.createdAt,
    analysed,
    analysis: {
      status: r.analysis?.status ?? 'none',
      poll: `/v1/captures/${r.id}/analysis`,
      error: r.analysis?.error === undefined ? undefined : `${r.analysis.error.code}: ${r.analysis.error.message}`,
    },
  };
}

/** `target_mismatch` for captures of two targets unless `force`. */
export function assertSameTarget(base: CaptureRecord, head: CaptureRecord, force: boolean): void {
  if (base.targetId === head.targetId || force) return;
  throw new ApiError('target_mismatch', `base ${base.id} is of target ${base.targetId}, head ${head.id} of ${head.targetId}; add force=true to compare them anyway`, {
    base: base.targetId,
    head: head.targetId,
  });
}

/** Summaries, diffs and analyses read heap snapshots: refuse a sampling profile with a code that says so. */
function assertSnapshot(record: CaptureRecord, role: string, what: string): void {
  if (record.artifact?.kind !== 'sampling-profile') return;
  throw new ApiError(
    'not_a_snapshot',
    `${role}capture ${record.id} is an allocation sampling profile, which has no ${what}; download it (GET /v1/captures/${record.id}/artifact) and open it in Chrome DevTools' Memory tab, or take a snapshot (options.kind "snapshot")`,
    { captureId: record.id, kind: record.artifact.kind },
  );
}

function summaryKeyOf(record: CaptureRecord, role: string): string {
  if (record.status !== 'succeeded' || record.artifact === null) {
    throw new ApiError('artifact_not_available', `${role}capture ${record.id} has no artifact (status ${record.status}), so no summary`, { captureId: record.id, status: record.status });
  }
  assertSnapshot(record, role, role === '' ? 'summary' : 'summary to diff');
  const key = record.artifact.summaryKey;
  if (key === undefined) {
    const why = record.artifact.summaryError === undefined ? 'it was taken before heapcap summarized captures' : `its summary failed (${record.artifact.summaryError})`;
    throw new ApiError('summary_missing', `${role}capture ${record.id} has no summary: ${why}; heapcap diff on the downloaded snapshots still works`, { captureId: record.id });
  }
  return key;
}

/** Why a diff's suspects are summary-only, side by side, and what to do about it. */
function summaryNote(sides: { record: CaptureRecord; role: string; ready: boolean }[]): string {
  const says = ({ record: r, role }: { record: CaptureRecord; role: string }): string => {
    const a = r.analysis;
    if (a === undefined) return `${role} ${r.id} has no analysis (POST /v1/captures/${r.id}/analysis)`;
    if (a.status === 'failed') return `${role} ${r.id}'s analysis failed (${a.error?.code ?? 'no code'})`;
    if (a.status === 'succeeded') return `${role} ${r.id}'s analysis predates suspects (POST /v1/captures/${r.id}/analysis again)`;
    return `${role} ${r.id}'s analysis is ${a.status} (poll GET /v1/captures/${r.id}/analysis, then ask for the diff again)`;
  };
  return `summary-only (no holders): ${sides.filter((x) => !x.ready).map(says).join('; ')}`;
}

const heapAnalysisPlugin: FastifyPluginAsync<{ queue: HeapcapQueue; sink: ArtifactStore }> = async (app, { queue, sink }) => {
  async function readSummary(record: CaptureRecord, role = ''): Promise<Summary> {
    const key = summaryKeyOf(record, role);
    const doc = await sink.getDocument(key);
    if (doc === null) throw new ApiError('summary_missing', `${role}capture ${record.id} has no summary: the object ${key} is gone from storage`, { captureId: record.id });
    return SummarySchema.parse(doc);
  }

  async function readAnalysis(record: CaptureRecord): Promise<Analysis | null> {
    const key = record.analysis?.status === 'succeeded' ? record.analysis.key : undefined;
    if (key === undefined || record.status !== 'succeeded') return null;
    const doc = await sink.getDocument(key);
    return doc === null ? null : AnalysisSchema.parse(doc);
  }

  const service: HeapAnalysisService = {
    summary: (record) => readSummary(record),

    async diff(base, head, force) {
      assertSameTarget(base, head, force);
      const [b, h] = [await readSummary(base, 'base '), await readSummary(head, 'head ')];
      const [ba, ha] = [await readAnalysis(base), await readAnalysis(head)];
      const both = ba !== null && ha !== null;
      const summaryOnly = summaryNote([
        { record: base, role: 'base', ready: ba?.groups !== undefined },
        { record: head, role: 'head', ready: ha?.groups !== undefined },
      ]);
      const diff = diffSummaries(b, h, both ? { baseAnalysis: ba, headAnalysis: ha, summaryNote: summaryOnly } : { summaryNote: summaryOnly });
      return { base: side(base, both), head: side(head, both), forced: base.targetId !== head.targetId, diff };
    },

    async requestAnalysis(req, id) {
      const who = principalOf(req).name;
      const existing = await fromQueue(() => queue.getCapture(id));
      if (existing !== null) assertSnapshot(existing, '', 'retained-size analysis');
      const { outcome, record } = await fromQueue(() => queue.analyses.request(id, who));
      if (outcome === 'not_found' || record === null) throw new ApiError('not_found', `no capture ${id}`, { captureId: id });
      if (outcome === 'unavailable') {
        throw new ApiError('artifact_not_available', `capture ${id} has no artifact to analyse (status ${record.status})`, { captureId: id, status: record.status });
      }
      await fromQueue(() => app.audit.record(req, { action: 'capture.analysis', targetId: record.targetId, captureId: id, details: { outcome } }));
      return { outcome, record };
    },

    analysis: readAnalysis,

    async createHunt(req, input) {
      const principal = principalOf(req);
      if (input.drive !== undefined) {
        // A drive runs the target's code on the caller's say-so: the scope that may also point heapcap at any target.
        if (!principal.scopes.has('targets:admin')) throw new ApiError('forbidden', `token "${principal.name}" lacks the targets:admin scope a hunt with \`drive\` needs`, { requiredScope: 'targets:admin' });
        if ('http' in input.drive) {
          const entry = await fromQueue(() => queue.targets.get(input.targetId));
          const problem = entry === null ? undefined : driveUrlProblem(entry.target, input.drive.http.url);
          // A well-formed URL refused for where it points (it depends on the target's registration, not on the request's shape).
          if (problem !== undefined) throw new ApiError('drive_url_not_allowed', problem, { field: 'drive.http.url', targetId: input.targetId });
        }
      }
      const hunt = await fromQueue(() => queue.leakHunts.create({ ...input, requestedBy: principal.name }));
      await fromQueue(() =>
        app.audit.record(req, { action: 'leak-hunt.create', targetId: hunt.targetId, details: { huntId: hunt.id, intervalMs: hunt.intervalMs, drive: hunt.drive, redact: hunt.redact } }),
      );
      return hunt;
    },

    async hunts(opts) {
      return fromQueue(() => queue.leakHunts.list(opts));
    },

    async hunt(req, id) {
      const hunt = await fromQueue(() => queue.leakHunts.get(id));
      if (hunt === null) throw new ApiError('not_found', `no leak hunt ${id}`, { huntId: id });
      const doc = hunt.reportKey === undefined ? null : await sink.getDocument(hunt.reportKey);
      await fromQueue(() => app.audit.record(req, { action: 'leak-hunt.read', targetId: hunt.targetId, details: { huntId: hunt.id } }));
      return { hunt, report: doc === null ? null : LeakHuntSchema.parse(doc) };
    },
  };
  app.decorate('heapAnalysis', service);
};

export default fp(heapAnalysisPlugin, { name: 'heapcap-heap-analysis', dependencies: ['heapcap-audit'] });
