/**
 * The bounds of continuous allocation profiles (`profile: {every, samplingIntervalBytes}` of a target, a watch
 * rule, and HEAPCAP_PROFILE_*), shared by the settings and the registry so a value means the same everywhere.
 *
 * Why these: V8's sampler costs the target in proportion to samples taken, so a small interval held for hours is
 * what makes it expensive (bench/profiles.ts: main-thread CPU per request 1.20x at 32 KiB, 1.03x at 512 KiB).
 * Each read (`getSamplingProfile`) makes V8 run a full GC first (the inspector starts the sampler with
 * kSamplingForceGC): ~0.2 s of the target's main thread on a 650 MB heap, so reads are at least a few seconds apart.
 */

/** Default bytes between two samples of a continuous profile (512 KiB). */
export const PROFILE_DEFAULT_INTERVAL_BYTES = 512 * 1024;
/** Smallest sampling interval a continuous profile may hold (16 KiB: below it the sampler's cost grows past 1.2x). */
export const PROFILE_MIN_INTERVAL_BYTES = 16 * 1024;
/** Largest sampling interval (16 MiB, the one-off profile's bound too). */
export const PROFILE_MAX_INTERVAL_BYTES = 16 * 1024 * 1024;
/** Shortest time between two stored profiles (each read is a full GC of the target). */
export const PROFILE_MIN_EVERY_MS = 5_000;
/** Longest time between two stored profiles. */
export const PROFILE_MAX_EVERY_MS = 86_400_000;

/** The fix-it text of a sampling interval out of range (stable code `profile_interval_out_of_range`). */
export function profileIntervalProblem(bytes: number, shown: string = String(bytes)): string | undefined {
  if (Number.isInteger(bytes) && bytes >= PROFILE_MIN_INTERVAL_BYTES && bytes <= PROFILE_MAX_INTERVAL_BYTES) return undefined;
  return (
    `profile_interval_out_of_range: ${shown} is not a whole number between ${PROFILE_MIN_INTERVAL_BYTES} (16 KiB) and ` +
    `${PROFILE_MAX_INTERVAL_BYTES} (16 MiB); ${PROFILE_DEFAULT_INTERVAL_BYTES} (512 KiB, the default) costs the target about 3 % while it runs`
  );
}
