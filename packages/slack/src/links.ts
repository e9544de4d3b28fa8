/**
 * The download link in a Slack message: the API's artifact route (the reader
 * needs a token with `artifacts:read`), or, when configured and the store can
 * sign one, a presigned storage URL that works for anyone holding it until it
 * expires (convenient, and a copy of the process's memory for whoever sees
 * the channel: the message says so).
 */
import { consoleLinks } from '@heapcap/config';
import type { CaptureRecord, HeapcapQueue } from '@heapcap/state';
import type { ArtifactStore } from '@heapcap/storage';
import type { CaptureConsoleLinks, ResultLink } from './messages/result.ts';

/** How links are made. */
export interface LinkSettings {
  /** The API's base URL as engineers reach it, without a trailing slash. */
  publicUrl: string;
  mode: 'api' | 'presigned';
  ttlSeconds: number;
}

/** The API's artifact URL of a capture. */
export function apiArtifactUrl(publicUrl: string, captureId: string): string {
  return `${publicUrl}/v1/captures/${encodeURIComponent(captureId)}/artifact`;
}

/** The link for a succeeded capture, or null when it has no artifact. Presigning falls back to the API link if the store cannot sign. */
export async function artifactLink(record: CaptureRecord, settings: LinkSettings, store: Pick<ArtifactStore, 'canPresign' | 'presign'>): Promise<ResultLink | null> {
  if (record.status !== 'succeeded' || record.artifact === null) return null;
  if (settings.mode === 'presigned' && store.canPresign) {
    return { kind: 'presigned', url: await store.presign(record.artifact.key, { expiresInSeconds: settings.ttlSeconds }), expiresInSeconds: settings.ttlSeconds };
  }
  return { kind: 'api', url: apiArtifactUrl(settings.publicUrl, record.id) };
}

/** Succeeded captures of the target looked through for the previous one (growth looks as far). */
const PREVIOUS_LOOK_BACK = 20;

/** The console links of `record`; the compare is with the newest earlier succeeded capture of its target that has a summary (what a diff needs). */
export async function captureConsoleLinks(queue: Pick<HeapcapQueue, 'previousSummary'>, publicUrl: string, record: CaptureRecord): Promise<CaptureConsoleLinks> {
  const previous = record.status === 'succeeded' ? await queue.previousSummary(record.targetId, Date.parse(record.createdAt), record.id, PREVIOUS_LOOK_BACK) : null;
  return {
    capture: consoleLinks.capture(publicUrl, record.id),
    target: consoleLinks.target(publicUrl, record.targetId),
    compare: previous === null ? null : consoleLinks.compare(publicUrl, previous.id, record.id),
  };
}
