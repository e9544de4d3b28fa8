/**
 * The summary of a sampling heap profile: live bytes by allocation site and
 * the top folded stacks (`.heapprofile` → ProfileSummary).
 */
import { attributeSamples, checkSamplingProfile, frameKey, objectsOfSample, type AttributedProfile } from './profile-tree.ts';
import { PROFILE_SUMMARY_SCHEMA_VERSION, type AllocationSite, type ProfileFrame, type ProfileSummary } from './profile-schema.ts';

export interface ProfileSummaryOptions {
  /** The sampling interval the profile was taken with (bytes); without it, objects are counted as samples. */
  samplingIntervalBytes?: number | undefined;
  /** Sites kept (default 50). */
  limit?: number;
  /** Stacks kept (default 10). */
  stackLimit?: number;
  /** Frames kept per stack, site first (default 16). */
  stackDepth?: number;
}

/** Live bytes, samples and estimated objects per site (every site, unsorted). */
export function siteTotals(attributed: AttributedProfile, intervalBytes: number | undefined): AllocationSite[] {
  const totals = new Map<number, { bytes: number; samples: number; objects: number }>();
  for (const s of attributed.samples) {
    const t = totals.get(s.site) ?? { bytes: 0, samples: 0, objects: 0 };
    t.bytes += s.size;
    t.samples += 1;
    t.objects += intervalBytes === undefined ? 1 : objectsOfSample(s.size, intervalBytes);
    totals.set(s.site, t);
  }
  return [...totals].map(([site, t]) => ({ ...attributed.frames[site]!, bytes: t.bytes, samples: t.samples, objects: Math.round(t.objects) }));
}

/** Most bytes first; ties by function, url, line, column so equal inputs give equal outputs. */
export function byBytesThenFrame<T extends ProfileFrame>(bytes: (x: T) => number): (a: T, b: T) => number {
  return (a, b) => bytes(b) - bytes(a) || frameKey(a).localeCompare(frameKey(b));
}

/** Summarize a SamplingHeapProfile (checked first: `profile_invalid` when it is not one). */
export function summarizeProfile(value: unknown, options: ProfileSummaryOptions = {}): ProfileSummary {
  const profile = checkSamplingProfile(value);
  const attributed = attributeSamples(profile);
  const limit = options.limit ?? 50;
  const depth = options.stackDepth ?? 16;
  const sites = siteTotals(attributed, options.samplingIntervalBytes).sort(byBytesThenFrame((s) => s.bytes));

  const stacks = new Map<string, { frames: number[]; bytes: number; samples: number }>();
  for (const s of attributed.samples) {
    const key = s.stack.join(',');
    const t = stacks.get(key) ?? { frames: s.stack, bytes: 0, samples: 0 };
    t.bytes += s.size;
    t.samples += 1;
    stacks.set(key, t);
  }
  const topStacks = [...stacks.values()]
    .sort((a, b) => b.bytes - a.bytes || a.frames.join(',').localeCompare(b.frames.join(',')))
    .slice(0, options.stackLimit ?? 10)
    .map((t) => ({ frames: t.frames.slice(0, depth).map((i) => attributed.frames[i]!), bytes: t.bytes, samples: t.samples }));

  return {
    schemaVersion: PROFILE_SUMMARY_SCHEMA_VERSION,
    samples: attributed.samples.length,
    totalBytes: attributed.samples.reduce((sum, s) => sum + s.size, 0),
    nodes: attributed.nodes,
    samplingIntervalBytes: options.samplingIntervalBytes ?? null,
    sites: sites.slice(0, limit),
    sitesOmitted: Math.max(0, sites.length - limit),
    stacks: topStacks,
  };
}

/** `src/session.js:44:3 createSession`: a frame as one line (the url's path after the last `/` of a file URL kept whole). */
export function formatFrame(f: ProfileFrame): string {
  const name = f.functionName === '' ? '(anonymous)' : f.functionName;
  if (f.url === '') return name;
  return `${name} ${f.url}${f.line > 0 ? `:${f.line}:${f.column}` : ''}`;
}
