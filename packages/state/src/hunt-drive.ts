/**
 * What a leak hunt may do to its target between the baseline and target
 * snapshots, as memlab's scenario steps do: send it HTTP requests, or
 * evaluate a Runtime expression in it. Both run code paths of the target on a
 * caller's say-so, so creating a driven hunt needs `targets:admin`; and the
 * HTTP drive may only address the target's own registered host (the worker
 * would otherwise be a proxy into whatever network it sits in: an SSRF).
 */
import { z } from 'zod';
import type { Target } from './target-schema.ts';

/** Most HTTP requests one drive sends. */
export const MAX_DRIVE_REQUESTS = 10_000;

/** Most rounds of a drive: each runs the whole drive (its requests, or its expression). */
export const MAX_DRIVE_ROUNDS = 20;

/**
 * How many times the drive runs between the baseline and target snapshots (it
 * runs once more before the final one): a leak grows in every round, a buffer
 * the target replaces does not (docs/analysis.md, "Hunts repeat the action").
 */
const RoundsSchema = z.number().int().min(1).max(MAX_DRIVE_ROUNDS).default(3);

export const HuntDriveSchema = z.union([
  z.strictObject({
    rounds: RoundsSchema,
    http: z.strictObject({
      method: z.enum(['GET', 'POST', 'PUT', 'PATCH', 'DELETE']).default('GET'),
      /** http(s) URL on the target's own host (its inspector's host; 127.0.0.1/localhost for node-pid targets). */
      url: z.url({ protocol: /^https?$/ }),
      headers: z.record(z.string().min(1).max(256), z.string().max(8192)).optional(),
      body: z.string().max(1 << 20).optional(),
      /** Requests sent one after the other. */
      count: z.number().int().min(1).max(MAX_DRIVE_REQUESTS).default(1),
    }),
  }),
  z.strictObject({
    rounds: RoundsSchema,
    /** A Runtime.evaluate expression, run in the target on the hunt's session (promises awaited). */
    evaluate: z.string().min(1).max(1 << 20),
  }),
]);
export type HuntDrive = z.infer<typeof HuntDriveSchema>;

/** The record's view of a drive: what it did, never its headers or body (they may hold the target's credentials). */
export const HuntDriveSummarySchema = z.union([
  z.strictObject({ kind: z.literal('http'), method: z.string(), url: z.string(), count: z.number().int().positive(), rounds: z.number().int().positive().optional() }),
  z.strictObject({ kind: z.literal('evaluate'), chars: z.number().int().positive(), rounds: z.number().int().positive().optional() }),
]);
export type HuntDriveSummary = z.infer<typeof HuntDriveSummarySchema>;

/** The record's summary of `drive`. */
export function driveSummary(drive: HuntDrive): HuntDriveSummary {
  return 'http' in drive ? { kind: 'http', method: drive.http.method, url: drive.http.url, count: drive.http.count, rounds: drive.rounds } : { kind: 'evaluate', chars: drive.evaluate.length, rounds: drive.rounds };
}

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]', '::1']);

/** The host names a target is registered at (lower case; loopback names count as one). */
function hostsOf(target: Target): string[] {
  const of = (hostPort: string): string => new URL(`http://${hostPort}`).hostname.toLowerCase();
  switch (target.kind) {
    case 'node':
      return [target.ws !== undefined ? new URL(target.ws).hostname.toLowerCase() : of(target.inspect ?? '')];
    case 'node-pid':
      return [...LOOPBACK];
    case 'chromium':
      return [of(target.browser)];
  }
}

/** Why an HTTP drive to `url` is refused for `target` (not its host), or undefined when it is allowed. */
export function driveUrlProblem(target: Target, url: string): string | undefined {
  let host: string;
  try {
    const u = new URL(url);
    if (u.protocol !== 'http:' && u.protocol !== 'https:') return `drive.http.url must be http(s), got ${u.protocol}`;
    if (u.username !== '' || u.password !== '') return 'drive.http.url must not carry credentials (send them as headers)';
    host = u.hostname.toLowerCase();
  } catch {
    return `drive.http.url "${url}" is not a URL`;
  }
  const hosts = hostsOf(target);
  const same = hosts.includes(host) || (LOOPBACK.has(host) && hosts.some((h) => LOOPBACK.has(h)));
  return same ? undefined : `drive.http.url must address target ${target.id}'s own host (${hosts.filter((h) => h !== '::1').join(', ')}), not ${host}: a hunt never sends requests elsewhere`;
}
