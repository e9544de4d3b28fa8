/**
 * Which grown allocation site constructs a suspect's class, from the sampling
 * profiles stored beside a diff's two snapshots: a stack that grew between
 * the two profiles, at a site whose live bytes grew, holding a frame whose
 * function name is the class's (its constructor's frame), names where the
 * class's objects are made. V8 names physical frames: a constructor it
 * inlined into its caller, or a class without a constructor of its own, has
 * no frame of that name, and the suspect then names no site (docs/analysis.md,
 * "Where it was allocated").
 */
import { MAX_FRAMES, MAX_STACKS, allocatedAtLine, suspectAllocatedAt, type AllocatedAt, type AllocationStack } from '../allocation-site.ts';
import type { Suspect, Suspects } from '../suspects.ts';
import type { ProfileFrame } from './profile-schema.ts';
import { attributeSamples, checkSamplingProfile, frameKey } from './profile-tree.ts';

/**
 * Grown samples a class's matching stacks need: a sample or two is a few objects V8 happened to allocate in the
 * frame. On Node 22, `class Ticket {}`'s default constructor frame held 1 to 3 samples in 5 of 22 runs, against
 * ~750 in its caller's (suspect-sites.test). A suspect's growth is megabytes: hundreds of samples at 16 KiB, still
 * a few at the continuous profiles' 512 KiB.
 */
export const MIN_SAMPLES = 3;

interface StackTotal {
  frames: ProfileFrame[];
  bytes: number;
  samples: number;
}

/** Live bytes and samples per folded stack (site first) and bytes per site, keyed by frames so two profiles compare. */
function stackTotals(value: unknown): { stacks: Map<string, StackTotal>; sites: Map<string, number> } {
  const attributed = attributeSamples(checkSamplingProfile(value));
  const stacks = new Map<string, StackTotal>();
  const sites = new Map<string, number>();
  // attributeSamples shares one stack array per call-tree node: its key is built once per node.
  const keys = new Map<readonly number[], string>();
  for (const s of attributed.samples) {
    let key = keys.get(s.stack);
    if (key === undefined) {
      key = s.stack.map((i) => frameKey(attributed.frames[i]!)).join('\u0001');
      keys.set(s.stack, key);
    }
    const t = stacks.get(key) ?? { frames: s.stack.map((i) => attributed.frames[i]!), bytes: 0, samples: 0 };
    t.bytes += s.size;
    t.samples += 1;
    stacks.set(key, t);
    const site = frameKey(attributed.frames[s.site]!);
    sites.set(site, (sites.get(site) ?? 0) + s.size);
  }
  return { stacks, sites };
}

/** Class names a frame can carry: not V8's parenthesised ones (`(closure)`, `(string)`), not empty. */
function constructible(name: string): boolean {
  return name !== '' && !name.startsWith('(');
}

/**
 * Per class of `classes`: the stacks that grew between `baseProfile` and `headProfile` (SamplingHeapProfiles,
 * `profile_invalid` otherwise) at a grown site and hold a script frame of the class's name, most grown bytes
 * first, as an {@link AllocatedAt} with `source: 'sampled'` (counts are grown samples, bytes grown live bytes).
 * Classes no such stack constructs, or with fewer than {@link MIN_SAMPLES} grown samples, are absent.
 */
export function constructorSites(baseProfile: unknown, headProfile: unknown, classes: Iterable<string>): Map<string, AllocatedAt> {
  const wanted = new Set([...classes].filter(constructible));
  const out = new Map<string, AllocatedAt>();
  if (wanted.size === 0) return out;
  const base = stackTotals(baseProfile);
  const head = stackTotals(headProfile);
  const byClass = new Map<string, Map<string, AllocationStack>>();
  for (const [key, h] of head.stacks) {
    const b = base.stacks.get(key);
    const bytes = h.bytes - (b?.bytes ?? 0);
    if (bytes <= 0) continue;
    const site = frameKey(h.frames[0]!);
    if ((head.sites.get(site) ?? 0) - (base.sites.get(site) ?? 0) <= 0) continue;
    const count = Math.max(0, h.samples - (b?.samples ?? 0));
    const seen = new Set<string>();
    h.frames.forEach((f, i) => {
      if (f.url === '' || !wanted.has(f.functionName) || seen.has(f.functionName)) return;
      seen.add(f.functionName);
      // The site first, as the tracked stacks are; kept down to the constructor's frame even past MAX_FRAMES.
      const frames = h.frames.slice(0, Math.max(MAX_FRAMES, i + 1));
      const stacks = byClass.get(f.functionName) ?? new Map<string, AllocationStack>();
      const fkey = frames.map(frameKey).join('\u0001');
      const row = stacks.get(fkey);
      if (row === undefined) stacks.set(fkey, { frames, count, bytes });
      else {
        row.count += count;
        row.bytes += bytes;
      }
      byClass.set(f.functionName, stacks);
    });
  }
  for (const [name, stacks] of byClass) {
    const all = [...stacks.values()];
    const samples = all.reduce((n, s) => n + s.count, 0);
    if (samples < MIN_SAMPLES) continue;
    const top = all.sort((a, b) => b.bytes - a.bytes || b.count - a.count).slice(0, MAX_STACKS);
    out.set(name, { source: 'sampled', stacks: top, instances: samples, withStack: samples });
  }
  return out;
}

/** `s` with the sites of `sites` on the parts that have none (a hunt's tracked stacks stay) and its `allocated` line. */
function nameSite(s: Suspect, sites: ReadonlyMap<string, AllocatedAt>): Suspect {
  const parts = s.parts?.map((p) => {
    const at = sites.get(p.class);
    return p.allocatedAt !== undefined || at === undefined ? p : { ...p, allocatedAt: at };
  });
  const named = parts === undefined ? s : { ...s, parts };
  if (s.allocated !== undefined) return named;
  // Summary-only suspects have no parts: their class alone.
  const allocated = allocatedAtLine(parts === undefined ? sites.get(s.class) : suspectAllocatedAt(parts));
  return allocated === undefined ? named : { ...named, allocated };
}

/**
 * The diff's suspects with the grown allocation sites that construct their classes named
 * ({@link constructorSites}): a part without `allocatedAt` gets the sampled one, a suspect without an
 * `allocated` line gets it; nothing a hunt's tracking wrote is replaced.
 */
export function nameSuspectSites(suspects: Suspects, baseProfile: unknown, headProfile: unknown): Suspects {
  const classes = new Set(suspects.suspects.flatMap((s) => [s.class, ...(s.parts ?? []).map((p) => p.class)]));
  const sites = constructorSites(baseProfile, headProfile, classes);
  if (sites.size === 0) return suspects;
  return { ...suspects, suspects: suspects.suspects.map((s) => nameSite(s, sites)) };
}
