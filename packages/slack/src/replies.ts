/**
 * "Tell this channel when capture X ends": a BullMQ job per capture and
 * channel, added by the API when a Slack user starts or joins a capture, and
 * processed by the Slack delivery in every worker process. The job lives in
 * Redis, so the promise survives restarts of either side; it never touches
 * the capture itself, so a reply that cannot be delivered never fails it.
 */
import { Queue } from 'bullmq';
import { z } from 'zod';
import { IdSchema } from '@heapcap/config';
import type { HeapcapQueue } from '@heapcap/state';

/** The BullMQ queue of Slack replies (beside the capture queue, same prefix). */
export const SLACK_QUEUE = 'heapcap-slack';
/** The job name. */
export const SLACK_REPLY_JOB = 'slack-reply';

const SlackId = z.string().regex(/^[A-Z0-9]{2,32}$/, 'a Slack id such as T0123ABCD');

/** Where and for whom to post the result of one capture. */
export const SlackReplyJobSchema = z.strictObject({
  captureId: IdSchema,
  /** The command's response_url: a bearer capability (never logged), good for 5 posts in 30 minutes. */
  responseUrl: z.url({ protocol: /^https?$/ }),
  /** When Slack issued responseUrl (ms since the epoch). */
  issuedAtMs: z.number().int().nonnegative(),
  /** Fallback target of chat.postMessage past the response_url window. */
  channelId: SlackId,
  teamId: SlackId,
  /** Who asked in this channel (for logs and the audit of presigned links). */
  userId: SlackId,
});
export type SlackReplyJob = z.infer<typeof SlackReplyJobSchema>;

/** How delivery is retried: attempts and the first delay (doubled each time). */
export interface ReplyRetry {
  attempts: number;
  baseDelayMs: number;
}

/**
 * Posts made to one response_url at most (Slack accepts 5 in 30 minutes);
 * attempts past them go to chat.postMessage when a bot token is set, so a
 * job gets a few more attempts than that.
 */
export const DEFAULT_REPLY_ATTEMPTS = 8;

/** The API's producer of reply jobs. */
export class SlackReplies {
  readonly #bull: Queue<SlackReplyJob, void, string>;
  readonly #retry: ReplyRetry;

  constructor(queue: HeapcapQueue, retry: ReplyRetry) {
    // The producer shares the queue's command connection (BullMQ duplicates only for blocking workers).
    this.#bull = new Queue<SlackReplyJob, void, string>(SLACK_QUEUE, { connection: queue.redis, prefix: queue.keys.prefix });
    this.#bull.on('error', () => {});
    this.#retry = retry;
  }

  /**
   * Arrange the reply. One job per capture and channel: a second person in the
   * same channel who joins the capture does not get the message twice.
   * Returns false when a reply for that channel was already arranged.
   */
  async arrange(job: SlackReplyJob): Promise<boolean> {
    const data = SlackReplyJobSchema.parse(job);
    const jobId = `reply-${data.captureId}-${data.channelId}`;
    const existing = await this.#bull.getJob(jobId);
    if (existing !== undefined) return false;
    await this.#bull.add(SLACK_REPLY_JOB, data, {
      jobId,
      attempts: this.#retry.attempts,
      backoff: { type: 'exponential', delay: this.#retry.baseDelayMs },
      // The response_url is a capability: do not keep it around longer than useful.
      removeOnComplete: { age: 3_600, count: 1_000 },
      removeOnFail: { age: 24 * 3_600, count: 1_000 },
    });
    return true;
  }

  /** Job counts by state (tests and metrics). */
  counts(): Promise<Record<string, number>> {
    return this.#bull.getJobCounts('waiting', 'active', 'delayed', 'completed', 'failed');
  }

  /** Close the producer (not the shared connection). Idempotent. */
  async close(): Promise<void> {
    await this.#bull.close();
  }
}
