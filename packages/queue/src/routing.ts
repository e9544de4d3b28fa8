/** Which BullMQ queue a placement's captures go to, and which workers take them (placement.ts explains why). */
import { CAPTURE_QUEUE } from './schemas.ts';

/** The BullMQ queue of a placement (`capture` for none). BullMQ forbids `:` in names; placements cannot hold one. */
export function captureQueueName(placement: string | undefined | null): string {
  return placement === undefined || placement === null || placement === '' ? CAPTURE_QUEUE : `${CAPTURE_QUEUE}.at.${placement}`;
}

/** True when a worker consuming `placements` takes jobs of `placement`. */
export function coversPlacement(placements: readonly string[], placement: string): boolean {
  return placements.includes('*') || placements.includes(placement);
}
