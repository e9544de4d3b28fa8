/** The STATUS column of `heapcap targets list`: up with the age of its newest sample, or unreachable and why. */
import { callApi, type ApiTarget } from './status-client.ts';

/** Why a target's last sample failed (GET /v1/targets/samples/latest `down`). */
export interface TargetDown {
  since: number;
  at: number;
  reason: string;
  code: string;
  message: string;
}

/** A target's newest sample time and down record, as the latest-samples route answers them. */
export interface TargetHealth {
  lastSampleAt: number | null;
  down: TargetDown | null;
}

/** The route takes at most this many ids (services/api MAX_LATEST_TARGETS). */
const IDS_PER_REQUEST = 200;

/** Each target's health, 200 ids a request; null when the route cannot be read (the table then says `-`). */
export async function targetHealth(api: ApiTarget, ids: readonly string[]): Promise<Map<string, TargetHealth> | null> {
  const out = new Map<string, TargetHealth>();
  try {
    for (let i = 0; i < ids.length; i += IDS_PER_REQUEST) {
      const chunk = ids.slice(i, i + IDS_PER_REQUEST).join(',');
      const res = (await callApi(api, 'GET', `/v1/targets/samples/latest?ids=${encodeURIComponent(chunk)}&points=1`, undefined, 30_000)).body as {
        items: { targetId: string; samples: { t: number }[]; down?: TargetDown | null }[];
      };
      for (const item of res.items) out.set(item.targetId, { lastSampleAt: item.samples.at(-1)?.t ?? null, down: item.down ?? null });
    }
  } catch {
    // Health is a convenience of the list: a token without captures:read or an older server still lists the targets.
    return null;
  }
  return out;
}

/** Milliseconds as a short age: "12 s", "7 min", "3 h", "2 d". */
export function age(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 120) return `${s} s`;
  if (s < 7_200) return `${Math.round(s / 60)} min`;
  if (s < 172_800) return `${Math.round(s / 3_600)} h`;
  return `${Math.round(s / 86_400)} d`;
}

/** "up (sampled 12 s ago)", "unreachable: connection refused (last sample 7 min ago)", "not sampled". */
export function statusText(h: TargetHealth | undefined, now: number): string {
  if (h === undefined) return '-';
  const last = h.lastSampleAt === null ? 'no sample in the last hour' : `last sample ${age(now - h.lastSampleAt)} ago`;
  if (h.down !== null) return `unreachable: ${h.down.reason} (${last})`;
  return h.lastSampleAt === null ? 'not sampled' : `up (sampled ${age(now - h.lastSampleAt)} ago)`;
}
