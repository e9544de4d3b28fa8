/** Which BullMQ queue a placement's captures and leak hunts go to, and which workers take them (placement.ts explains why). */
import { CAPTURE_QUEUE } from './schemas.ts';

/** The BullMQ queue `base` of a placement (`base` itself for none). BullMQ forbids `:` in names; placements cannot hold one. */
export function placedQueueName(base: string, placement: string | undefined | null): string {
  return placement === undefined || placement === null || placement === '' ? base : `${base}.at.${placement}`;
}

/** The BullMQ queue of a placement's captures (`heapcap-captures` for none). */
export function captureQueueName(placement: string | undefined | null): string {
  return placedQueueName(CAPTURE_QUEUE, placement);
}

/** True when a worker consuming `placements` takes jobs of `placement`. */
export function coversPlacement(placements: readonly string[], placement: string): boolean {
  return placements.includes('*') || placements.includes(placement);
}
