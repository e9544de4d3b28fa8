/**
 * `growth` of a scheduled capture: the leak suspects, then the classes that
 * grew most, since the previous succeeded capture of the same target that has
 * a summary. Computed from the two summaries right after the capture's record
 * is written, so the suspects are summary-only (the new capture has no
 * analysis yet; holders need both): marked so, with the requests that give
 * holders. A failure here is logged and never touches the capture's outcome.
 */
import type { Logger } from 'pino';
import { diffSummaries, SummarySchema, topGrowth, type Summary } from '@heapcap/analysis';
import type { CaptureRecord, Growth, HeapcapQueue } from '@heapcap/state';
import type { ArtifactStore } from '@heapcap/storage';

/** How many classes `growth` lists. */
export const GROWTH_CLASSES = 5;
/** Records of the target examined for the previous summary (newest first). */
const LOOK_BACK = 20;

/** The newest succeeded capture of `targetId` created at or before `createdAt` that has a summary, other than `captureId`. */
export function previousWithSummary(queue: HeapcapQueue, targetId: string, captureId: string, createdAt: string): Promise<{ id: string; summaryKey: string } | null> {
  return queue.previousSummary(targetId, Date.parse(createdAt) + 1, captureId, LOOK_BACK);
}

/** Reads and checks a stored summary; null when the object is gone. */
export async function readSummary(sink: ArtifactStore, key: string): Promise<Summary | null> {
  const doc = await sink.getDocument(key);
  return doc === null ? null : SummarySchema.parse(doc);
}

/** Computes and records `growth` for capture `record` whose summary is `summary`. */
export async function recordGrowth(deps: { queue: HeapcapQueue; sink: ArtifactStore; log: Logger }, record: CaptureRecord, summary: Summary): Promise<Growth | null> {
  try {
    const previous = await previousWithSummary(deps.queue, record.targetId, record.id, record.createdAt);
    const base = previous === null ? null : await readSummary(deps.sink, previous.summaryKey);
    const growth = previous === null || base === null ? { since: null, classes: [] } : growthSince(previous.id, record.id, base, summary);
    await deps.queue.analyses.setGrowth(record.id, growth);
    deps.log.info(
      { since: growth.since, suspects: growth.suspects?.items.map((s) => s.reason), growth: growth.classes.map((c) => `${c.name} +${c.countDelta} (+${c.selfSizeDelta} B)`) },
      'growth since the previous capture recorded',
    );
    return growth;
  } catch (err) {
    deps.log.warn({ err }, 'could not compute the growth since the previous capture; the capture itself is recorded');
    return null;
  }
}

/** Suspects first, then the top classes, from capture `sinceId`'s summary `base` to capture `id`'s `head`. */
export function growthSince(sinceId: string, id: string, base: Summary, head: Summary): Growth {
  const note =
    `summary-only (no holders): capture ${id} was just taken and has no analysis; for holders, analyse both ` +
    `(POST /v1/captures/${sinceId}/analysis and POST /v1/captures/${id}/analysis), then GET /v1/diff?base=${sinceId}&head=${id}`;
  const diff = diffSummaries(base, head, { summaryNote: note });
  const { mode, suspects } = diff.suspects;
  return {
    suspects: {
      mode,
      note: diff.suspects.note,
      items: suspects.slice(0, GROWTH_CLASSES).map((s) => ({
        rank: s.rank,
        class: s.class,
        countDelta: s.countDelta,
        selfSizeDelta: s.selfSizeDelta,
        retainedSizeDelta: s.retainedSizeDelta,
        reason: s.reason,
      })),
    },
    since: sinceId,
    classes: topGrowth(diff, GROWTH_CLASSES),
  };
}
