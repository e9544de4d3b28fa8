/** Links returned with a capture, relative to the API root. */
import type { CaptureRecord } from '@heapcap/state';

/** self / artifact / cancel URLs of a capture. */
export function captureLinks(record: Pick<CaptureRecord, 'id'>): { self: string; artifact: string; cancel: string } {
  const self = `/v1/captures/${encodeURIComponent(record.id)}`;
  return { self, artifact: `${self}/artifact`, cancel: self };
}
