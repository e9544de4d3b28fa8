/**
 * Allocation profiles of captures, for the routes: a sampling-profile
 * capture's `.heapprofile` read from storage, summarized by allocation site,
 * diffed, or encoded as gzipped pprof.
 */
import fp from 'fastify-plugin';
import type { FastifyPluginAsync } from 'fastify';
import { diffProfiles, nameSuspectSites, profileToPprof, profileTree, profileTreeDiff, summarizeProfile, type ProfileDiff, type ProfileSummary, type ProfileTree, type ProfileTreeDiff, type Suspects } from '@heapcap/analysis';
import { CaptureError } from '@heapcap/errors';
import type { CaptureRecord } from '@heapcap/state';
import type { ArtifactStore } from '@heapcap/storage';
import { ApiError } from '../../errors.ts';
import { assertSameTarget, side, type DiffSide } from './heap-analysis.ts';

/**
 * Profiles are read whole (JSON.parse). V8's are small: the call tree of the
 * sampled allocations, 1-3 MB for a busy service at the default interval.
 * Above this, the API refuses rather than hold it.
 */
export const PROFILE_MAX_BYTES = 256 * 1024 * 1024;

/** Operations on a capture's allocation profile. */
export interface ProfilesService {
  /** True when the capture is a succeeded sampling profile (has one to read). */
  has(record: CaptureRecord): boolean;
  /** Live bytes by allocation site and top stacks; `profile_not_found`, `artifact_not_available`. */
  summary(record: CaptureRecord, limit: number): Promise<ProfileSummary>;
  /** The folded call tree (flame graphs), folded as the summary is. */
  tree(record: CaptureRecord): Promise<ProfileTree>;
  /** The growth tree from `base` to `head`; `target_mismatch` across targets unless `force`. */
  treeDiff(base: CaptureRecord, head: CaptureRecord, force: boolean): Promise<ProfileTreeDiff>;
  /** The gzipped pprof encoding. */
  pprof(record: CaptureRecord): Promise<Buffer>;
  /** Growth by allocation site from `base` to `head`; `target_mismatch` across targets unless `force`. */
  diff(base: CaptureRecord, head: CaptureRecord, force: boolean, limit: number): Promise<{ base: DiffSide; head: DiffSide; forced: boolean; allocations: ProfileDiff }>;
  /**
   * Growth by allocation site between the continuous profiles stored beside two snapshots (`profileCaptureId`),
   * and the diff's `suspects` naming the grown sites that construct their classes (nameSuspectSites);
   * null when either has none (or it did not succeed, or is gone).
   */
  beside(base: CaptureRecord, head: CaptureRecord, limit: number, suspects: Suspects): Promise<{ allocations: ProfileDiff; suspects: Suspects } | null>;
}

declare module 'fastify' {
  interface FastifyInstance {
    profiles: ProfilesService;
  }
}

function intervalOf(record: CaptureRecord): number {
  return record.options.samplingIntervalBytes;
}

const profilesPlugin: FastifyPluginAsync<{ sink: ArtifactStore }> = async (app, { sink }) => {
  async function load(record: CaptureRecord, role = ''): Promise<unknown> {
    const artifact = record.artifact;
    if (record.status !== 'succeeded' || artifact === null) {
      throw new ApiError('artifact_not_available', `${role}capture ${record.id} has no artifact (status ${record.status}), so no allocation profile`, { captureId: record.id, status: record.status });
    }
    if (artifact.kind !== 'sampling-profile') {
      throw new ApiError(
        'profile_not_found',
        `${role}capture ${record.id} is a heap snapshot, which has no allocation profile; take one with POST /v1/captures {"options": {"kind": "sampling"}} (heapcap trigger TARGET --sampling 30s)`,
        { captureId: record.id, kind: artifact.kind ?? 'snapshot' },
      );
    }
    if (artifact.bytesUncompressed > PROFILE_MAX_BYTES) {
      throw new ApiError('profile_too_large', `${role}capture ${record.id}'s profile is ${artifact.bytesUncompressed} bytes, over the ${PROFILE_MAX_BYTES} the API reads; download it (GET /v1/captures/${record.id}/artifact) and open it in DevTools`, {
        captureId: record.id,
        bytes: artifact.bytesUncompressed,
      });
    }
    const chunks: Buffer[] = [];
    for await (const chunk of await sink.open(artifact.key, { decompress: true })) chunks.push(chunk as Buffer);
    try {
      return JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
    } catch (err) {
      throw new CaptureError('profile_invalid', `${role}capture ${record.id}'s stored profile is not JSON`, { cause: err });
    }
  }

  const service: ProfilesService = {
    has: (record) => record.status === 'succeeded' && record.artifact?.kind === 'sampling-profile',
    summary: async (record, limit) => summarizeProfile(await load(record), { samplingIntervalBytes: intervalOf(record), limit }),
    tree: async (record) => profileTree(await load(record), { samplingIntervalBytes: intervalOf(record) }),
    async treeDiff(base, head, force) {
      assertSameTarget(base, head, force);
      return profileTreeDiff(await load(base, 'base '), await load(head), { samplingIntervalBytes: intervalOf(head) });
    },
    pprof: async (record) => profileToPprof(await load(record), { samplingIntervalBytes: intervalOf(record), takenAt: new Date(record.finishedAt ?? record.createdAt) }),
    async diff(base, head, force, limit) {
      assertSameTarget(base, head, force);
      const allocations = diffProfiles(await load(base, 'base '), await load(head, 'head '), { limit });
      return { base: side(base, false), head: side(head, false), forced: base.targetId !== head.targetId, allocations };
    },
    async beside(base, head, limit, suspects) {
      if (base.profileCaptureId === undefined || head.profileCaptureId === undefined) return null;
      const found = async (id: string): Promise<CaptureRecord | null> => {
        const r = await app.captures.get(id).catch(() => null);
        return r !== null && service.has(r) ? r : null;
      };
      const [b, h] = [await found(base.profileCaptureId), await found(head.profileCaptureId)];
      if (b === null || h === null) return null;
      const [baseProfile, headProfile] = [await load(b, 'base '), await load(h, 'head ')];
      return { allocations: diffProfiles(baseProfile, headProfile, { limit }), suspects: nameSuspectSites(suspects, baseProfile, headProfile) };
    },
  };
  app.decorate('profiles', service);
};

export default fp(profilesPlugin, { name: 'heapcap-profiles' });
