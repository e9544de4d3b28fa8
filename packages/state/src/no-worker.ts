/** The record error of a capture whose placement has no live worker (placement.ts). */
export function noWorkerError(placement: string): { code: string; message: string; hint: string } {
  return {
    code: 'no_worker_for_target',
    message: `no live worker consumes placement "${placement}"`,
    hint: `start a worker on the target's host with HEAPCAP_WORKER_PLACEMENTS=${placement} (or *); GET /v1/workers lists the live workers and their placements`,
  };
}
