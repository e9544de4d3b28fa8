/**
 * `profile`: a continuous allocation profile, as a target (registry: targets file, admin API) or a watch rule
 * (a selector: rules file, API) asks for it; HEAPCAP_PROFILE_* is the service default. The watcher that holds the
 * target keeps V8's sampling heap profiler on and stores the live-allocation profile `every` (docs/watch.md).
 */
import { z } from 'zod';
import { formatDuration, parseDuration, PROFILE_DEFAULT_INTERVAL_BYTES, PROFILE_MAX_EVERY_MS, PROFILE_MAX_INTERVAL_BYTES, PROFILE_MIN_EVERY_MS, PROFILE_MIN_INTERVAL_BYTES, profileIntervalProblem } from '@heapcap/config';

/** The stable code of a sampling interval out of range (in `details.fields[].code` of `validation_failed`). */
export const PROFILE_INTERVAL_CODE = 'profile_interval_out_of_range';
/** The stable code of a profile asked of a target kind that cannot hold a sampler (node-pid). */
export const PROFILE_UNSUPPORTED_CODE = 'profile_unsupported';

/** How often, and how finely, a continuous profile samples. */
export const ProfileSettingSchema = z.strictObject({
  every: z
    .string()
    .max(40)
    .regex(/^(\d+(ms|s|m|h|d))+$/, 'a duration such as "10m" or "1h" (units ms, s, m, h, d)')
    .superRefine((text, ctx) => {
      const ms = parseDuration(text);
      if (ms === undefined || ms < PROFILE_MIN_EVERY_MS || ms > PROFILE_MAX_EVERY_MS) {
        ctx.addIssue({ code: 'custom', message: `store a profile between every ${formatDuration(PROFILE_MIN_EVERY_MS)} and every ${formatDuration(PROFILE_MAX_EVERY_MS)}: a duration such as "10m" or "1h" (each read is a full GC of the target)` });
      }
    })
    .describe('how often the live-allocation profile is stored: 5s to 1d, e.g. "10m"'),
  samplingIntervalBytes: z
    .number()
    .superRefine((n, ctx) => {
      const problem = profileIntervalProblem(n, `samplingIntervalBytes ${n}`);
      if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem, params: { code: PROFILE_INTERVAL_CODE } });
    })
    .meta({ minimum: PROFILE_MIN_INTERVAL_BYTES, maximum: PROFILE_MAX_INTERVAL_BYTES })
    .optional()
    .describe(`average bytes between two samples (default ${PROFILE_DEFAULT_INTERVAL_BYTES}, 512 KiB; 16 KiB to 16 MiB)`),
});
export type ProfileSetting = z.infer<typeof ProfileSettingSchema>;

/** A target's `profile`: a setting, or `false` to keep it off whatever a rule or HEAPCAP_PROFILE_EVERY says. */
export const TargetProfileSchema = z.union([z.literal(false), ProfileSettingSchema]).describe('continuous allocation profile (every, samplingIntervalBytes), or false: none for this target');

/** What the watcher holds for one target. */
export interface EffectiveProfile {
  everyMs: number;
  samplingIntervalBytes: number;
  /** Who asked for it: `target`, `rule:<id>` or `default`. */
  from: string;
}

/**
 * The profile a target gets: its own `profile` (false: none), else the fastest of the rules watching it that ask
 * for one (the finest interval of those), else the service default (everyMs 0: none). A node-pid target gets none:
 * heapcap opens its inspector for one capture and closes it again, and a sampler lives only as long as the
 * inspector session that started it.
 */
export function effectiveProfile(
  target: { kind: string; profile?: ProfileSetting | false | undefined },
  rules: readonly { id: string; profile?: ProfileSetting | undefined }[],
  fallback: { everyMs: number; samplingIntervalBytes: number },
): EffectiveProfile | null {
  if (target.kind === 'node-pid' || target.profile === false) return null;
  const of = (p: ProfileSetting, from: string): EffectiveProfile => ({ everyMs: parseDuration(p.every) ?? PROFILE_MAX_EVERY_MS, samplingIntervalBytes: p.samplingIntervalBytes ?? PROFILE_DEFAULT_INTERVAL_BYTES, from });
  if (target.profile !== undefined) return of(target.profile, 'target');
  let best: EffectiveProfile | null = null;
  for (const rule of rules) {
    if (rule.profile === undefined) continue;
    const p = of(rule.profile, `rule:${rule.id}`);
    if (best === null) best = p;
    else best = { everyMs: Math.min(best.everyMs, p.everyMs), samplingIntervalBytes: Math.min(best.samplingIntervalBytes, p.samplingIntervalBytes), from: best.from };
  }
  if (best !== null) return best;
  return fallback.everyMs > 0 ? { ...fallback, from: 'default' } : null;
}
