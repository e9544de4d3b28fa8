/**
 * Growth by allocation site between two sampling heap profiles of the same
 * target: which code's live allocations grew most.
 */
import { attributeSamples, checkSamplingProfile, frameKey } from './profile-tree.ts';
import { byBytesThenFrame, siteTotals } from './profile-summary.ts';
import { PROFILE_SUMMARY_SCHEMA_VERSION, type AllocationSite, type ProfileDiff, type SiteDelta } from './profile-schema.ts';

export interface ProfileDiffOptions {
  /** Sites kept in `grown` and in `shrunk` (default 20). */
  limit?: number;
}

function totalsOf(value: unknown): { sites: Map<string, AllocationSite>; samples: number; totalBytes: number } {
  const attributed = attributeSamples(checkSamplingProfile(value));
  const sites = new Map(siteTotals(attributed, undefined).map((s) => [frameKey(s), s]));
  return { sites, samples: attributed.samples.length, totalBytes: attributed.samples.reduce((sum, s) => sum + s.size, 0) };
}

/** Diff two SamplingHeapProfiles by allocation site (`profile_invalid` when either is not one). */
export function diffProfiles(baseProfile: unknown, headProfile: unknown, options: ProfileDiffOptions = {}): ProfileDiff {
  const base = totalsOf(baseProfile);
  const head = totalsOf(headProfile);
  const limit = options.limit ?? 20;
  const deltas: SiteDelta[] = [];
  for (const key of new Set([...base.sites.keys(), ...head.sites.keys()])) {
    const b = base.sites.get(key);
    const h = head.sites.get(key);
    const frame = (h ?? b)!;
    const baseBytes = b?.bytes ?? 0;
    const headBytes = h?.bytes ?? 0;
    deltas.push({
      functionName: frame.functionName,
      url: frame.url,
      line: frame.line,
      column: frame.column,
      baseBytes,
      headBytes,
      bytesDelta: headBytes - baseBytes,
      baseSamples: b?.samples ?? 0,
      headSamples: h?.samples ?? 0,
    });
  }
  return {
    schemaVersion: PROFILE_SUMMARY_SCHEMA_VERSION,
    base: { samples: base.samples, totalBytes: base.totalBytes },
    head: { samples: head.samples, totalBytes: head.totalBytes },
    totalBytesDelta: head.totalBytes - base.totalBytes,
    grown: deltas.filter((d) => d.bytesDelta > 0).sort(byBytesThenFrame((d) => d.bytesDelta)).slice(0, limit),
    shrunk: deltas.filter((d) => d.bytesDelta < 0).sort(byBytesThenFrame((d) => -d.bytesDelta)).slice(0, limit),
  };
}
