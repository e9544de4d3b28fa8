/**
 * Identifiers shared by every package: capture ids (ULIDs) and the alphabet of
 * ids that become Redis keys, object keys and path segments (target ids,
 * capture ids, schedule ids, …). One definition, so the registry, the queue and
 * the stores can never disagree on what a valid id is.
 */
import { randomBytes } from 'node:crypto';
import { z } from 'zod';

/** Ids become key and path segments: letters, digits, `.`, `_`, `-`; starting with a letter or digit; at most 128. */
export const ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/** The zod schema of an id (target, capture, schedule, rule). */
export const IdSchema = z.string().regex(ID_PATTERN, 'letters, digits, ".", "_" or "-" (max 128), starting with a letter or digit');

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

let lastTime = -1;
let lastRandom: number[] = [];

/**
 * A new capture id: a ULID (48-bit millisecond time + 80 random bits, Crockford
 * base32), so ids sort by creation time in listings and object stores.
 * Monotonic within a process: ids made in the same millisecond increment the
 * random part, so listings (which order equal timestamps by id) keep creation order.
 */
export function newCaptureId(now: number = Date.now()): string {
  let random: number[];
  if (now <= lastTime) {
    now = lastTime;
    random = [...lastRandom];
    // Add one to the base-32 digits, right to left (80 random bits: overflow is not a practical concern).
    for (let i = random.length - 1; i >= 0; i--) {
      random[i] = (random[i]! + 1) % 32;
      if (random[i] !== 0) break;
    }
  } else {
    random = [...randomBytes(16)].map((b) => b % 32);
  }
  lastTime = now;
  lastRandom = random;
  let time = '';
  let t = now;
  for (let i = 0; i < 10; i++) {
    time = CROCKFORD[t % 32]! + time;
    t = Math.floor(t / 32);
  }
  return time + random.map((d) => CROCKFORD[d]!).join('');
}
