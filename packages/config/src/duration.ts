/**
 * Durations as people write them in schedules and settings: `90s`, `15m`,
 * `6h`, `1d`, `1h30m`, `500ms`. One parser, shared by the configuration
 * (HEAPCAP_SCHEDULE_MIN_INTERVAL, HEAPCAP_RETENTION_INTERVAL) and the
 * schedules API (`every`), so a value means the same thing everywhere.
 */
import { z } from 'zod';

const UNIT_MS = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
const PART = /(\d+)(ms|s|m|h|d)/g;
const WHOLE = /^(\d+(ms|s|m|h|d))+$/;
/** A week: longer intervals are a cron's job (and overflow nothing, but no one means them). */
const MAX_MS = 7 * UNIT_MS.d;

/** Milliseconds of `text` (`90s`, `15m`, `1h30m`), or undefined when it is not a duration. */
export function parseDuration(text: string): number | undefined {
  const t = text.trim();
  if (!WHOLE.test(t)) return undefined;
  let ms = 0;
  for (const m of t.matchAll(PART)) ms += Number(m[1]) * UNIT_MS[m[2] as keyof typeof UNIT_MS];
  return ms;
}

/** The shortest text for `ms` (`90000` → `1m30s`), for messages and listings. */
export function formatDuration(ms: number): string {
  if (ms <= 0) return '0s';
  let left = ms;
  let out = '';
  for (const unit of ['d', 'h', 'm', 's', 'ms'] as const) {
    const n = Math.floor(left / UNIT_MS[unit]);
    if (n > 0) out += `${n}${unit}`;
    left -= n * UNIT_MS[unit];
  }
  return out;
}

/** A duration string (`90s`, `15m`, `6h`, `1d`, `1h30m`) of at least 1 ms and at most 7 days, parsed to milliseconds. */
export const DurationSchema = z
  .string()
  .max(40)
  .transform((text, ctx) => {
    const ms = parseDuration(text);
    if (ms === undefined || ms < 1 || ms > MAX_MS) {
      ctx.addIssue({ code: 'custom', message: 'a duration such as "90s", "15m", "6h", "1d" or "1h30m" (units ms, s, m, h, d; at most 7d)' });
      return z.NEVER;
    }
    return ms;
  });
