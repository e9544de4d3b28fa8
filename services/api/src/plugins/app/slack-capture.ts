/**
 * Starting a capture from Slack (the `capture` command and the "Capture
 * again" button): the same request, coalescing and audit as
 * `POST /v1/captures`, with the trigger naming the Slack user, and a reply job
 * that posts the result in the channel when the capture ends.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { isQueueError, type HeapcapQueue } from '@heapcap/state';
import { captureAckMessage, unknownTargetMessage, type SlackMessage } from '@heapcap/slack';
import type { SlackDeps } from '../../slack-setup.ts';
import type { SlackCaller } from '../../auth/slack-auth.ts';
import { principalOf } from '../infra/auth.ts';

/** Where the request came from in Slack, and where to answer. */
export interface SlackOrigin {
  caller: SlackCaller;
  channelId: string;
  responseUrl: string;
  /** When Slack sent the request (ms): the response_url is good for 30 minutes from then. */
  issuedAtMs: number;
  /** Slack's trigger id: the Idempotency-Key (the same signed request twice is one capture). */
  triggerId: string | undefined;
  /** `slack` (the command) or `slack-button`. */
  via: 'slack' | 'slack-button';
}

/** The capture to start. */
export interface SlackCaptureAsk {
  targetId: string;
  reason: string | undefined;
  /** Characters typed and kept, when the reason was cut to fit the record. */
  truncated: { from: number; kept: number } | undefined;
}

/** Start (or join) a capture for a Slack user whose principal is on `req`; returns the acknowledgement. */
export async function startSlackCapture(
  app: FastifyInstance,
  deps: { queue: HeapcapQueue; slack: SlackDeps; targetIds: () => Promise<string[]> },
  req: FastifyRequest,
  origin: SlackOrigin,
  ask: SlackCaptureAsk,
): Promise<SlackMessage> {
  const who = principalOf(req).name;
  let result;
  try {
    result = await deps.queue.requestCapture({
      targetId: ask.targetId,
      trigger: { kind: 'slack', who, reason: ask.reason },
      idempotencyKey: origin.triggerId,
    });
  } catch (err) {
    if (isQueueError(err, 'target_not_found')) return unknownTargetMessage(ask.targetId, await deps.targetIds(), true);
    throw err;
  }
  const { record } = result;
  const outcome = result.created ? 'created' : result.coalesced ? 'coalesced' : 'replayed';
  app.metrics.requests.inc({ outcome });
  const { caller } = origin;
  await app.audit.record(req, {
    action: 'capture.trigger',
    targetId: record.targetId,
    captureId: record.id,
    details: {
      outcome,
      via: origin.via,
      slackTeam: caller.teamId,
      slackUser: caller.userId,
      slackUserName: caller.userName,
      slackChannel: origin.channelId,
      reason: ask.reason,
      reasonTruncatedFrom: ask.truncated?.from,
    },
  });
  let replyArranged = true;
  try {
    await deps.slack.replies.arrange({
      captureId: record.id,
      responseUrl: origin.responseUrl,
      issuedAtMs: origin.issuedAtMs,
      channelId: origin.channelId,
      teamId: caller.teamId,
      userId: caller.userId,
    });
  } catch (err) {
    // The capture runs regardless; the user is told to follow it with `status`.
    replyArranged = false;
    req.log.warn({ captureId: record.id, err: err instanceof Error ? err.message : String(err) }, 'could not arrange the Slack reply');
  }
  return captureAckMessage({ record, outcome, truncated: ask.truncated, replyArranged });
}
