/**
 * SlackDelivery: the consumer of reply jobs, run by every worker process.
 * A job waits for its capture to end (a slice at a time, so a shutdown or a
 * long capture never pins a slot), then posts the result: to the response_url
 * while Slack's window and budget last, else with chat.postMessage when a bot
 * token is set. Failed posts are retried by BullMQ with exponential backoff;
 * a reply that cannot be delivered is logged with its capture id and dropped.
 * Nothing here writes to the capture record.
 */
import { DelayedError, UnrecoverableError, Worker, type Job } from 'bullmq';
import type { Logger } from 'pino';
import { closeWorker, duplicateRedis, isTerminal, type CaptureRecord, type HeapcapQueue } from '@heapcap/state';
import type { ArtifactStore } from '@heapcap/storage';
import { deliverable } from './blocks.ts';
import { artifactLink, captureConsoleLinks, type LinkSettings } from './links.ts';
import { captureMessage, type ResultLink } from './messages/result.ts';
import { SLACK_QUEUE, SlackReplyJobSchema, type SlackReplyJob } from './replies.ts';
import { postToResponseUrl, RESPONSE_URL_MAX_POSTS, RESPONSE_URL_WINDOW_MS, responseUrlBudget, type ResponseUrlBudget } from './response-url.ts';
import type { SlackWebApi } from './web-api.ts';
import { slackWho } from './who.ts';

/** Delivery tuning; see DEFAULT_DELIVERY_TUNING for the reasoning. */
export interface DeliveryTuning {
  /** Reply jobs in flight in this process (most of them only wait for their capture). */
  concurrency: number;
  /** How long one turn of a job waits for its capture before going back to the queue. */
  waitSliceMs: number;
  /** Delay before the next turn of a job whose capture has not ended. */
  recheckDelayMs: number;
  /** Slack's response_url lifetime (30 min), less a margin for clock skew and the post itself. */
  responseUrlWindowMs: number;
  /** A capture that has not ended after this long is not reported any more. */
  giveUpAfterMs: number;
  /** At close, replies being posted get this long; then the connections are cut (Redis may be down). */
  closeGraceMs: number;
}

export const DEFAULT_DELIVERY_TUNING: DeliveryTuning = {
  concurrency: 16,
  waitSliceMs: 60_000,
  recheckDelayMs: 500,
  responseUrlWindowMs: RESPONSE_URL_WINDOW_MS - 60_000,
  giveUpAfterMs: 24 * 3_600_000,
  closeGraceMs: 5_000,
};

/** What the delivery needs. */
export interface SlackDeliveryDeps {
  queue: HeapcapQueue;
  store: Pick<ArtifactStore, 'canPresign' | 'presign'>;
  links: LinkSettings;
  /** Origins a response_url may have (HEAPCAP_SLACK_RESPONSE_HOSTS); a reply to any other goes through chat.postMessage or nowhere. */
  responseOrigins: readonly string[];
  /** The bot's Web API client; without it nothing is posted past the response_url. */
  web: SlackWebApi | undefined;
  log: Logger;
  tuning?: Partial<DeliveryTuning> | undefined;
}

type State = 'created' | 'running' | 'closing' | 'closed';

/** Consumes reply jobs; `close()` is idempotent. */
export class SlackDelivery {
  readonly tuning: DeliveryTuning;
  readonly #deps: SlackDeliveryDeps;
  readonly #log: Logger;
  readonly #budget: ResponseUrlBudget;
  readonly #stop = new AbortController();
  #state: State = 'created';
  #worker: Worker<SlackReplyJob, void, string> | undefined;
  #connection: HeapcapQueue['redis'] | undefined;
  #closing: Promise<void> | undefined;

  constructor(deps: SlackDeliveryDeps) {
    this.#deps = deps;
    this.tuning = { ...DEFAULT_DELIVERY_TUNING, ...deps.tuning };
    this.#log = deps.log;
    this.#budget = responseUrlBudget(deps.queue);
  }

  get state(): State {
    return this.#state;
  }

  /** Start taking reply jobs. */
  async start(): Promise<void> {
    if (this.#state !== 'created') throw new Error(`cannot start a Slack delivery that is ${this.#state}`);
    this.#state = 'running';
    const { queue } = this.#deps;
    await queue.events.ready();
    this.#connection = duplicateRedis(queue.redis, { maxRetriesPerRequest: null, connectionName: `${queue.keys.prefix}:slack` });
    this.#connection.on('error', () => {});
    const worker = new Worker<SlackReplyJob, void, string>(SLACK_QUEUE, (job, token) => this.#process(job, token), {
      connection: this.#connection,
      prefix: queue.keys.prefix,
      concurrency: this.tuning.concurrency,
      autorun: false,
    });
    worker.on('error', (err) => this.#log.warn({ err }, 'slack delivery connection error'));
    worker.on('failed', (job, err) => {
      if (job === undefined) return;
      const final = job.attemptsMade >= (job.opts.attempts ?? 1) || err instanceof UnrecoverableError;
      const ids = { captureId: job.data.captureId, slackChannel: job.data.channelId, attempt: job.attemptsMade };
      if (final) this.#log.error(ids, `slack reply undeliverable after ${job.attemptsMade} attempts: ${err.message}`);
      else this.#log.warn(ids, `slack reply not delivered yet (will retry): ${err.message}`);
    });
    this.#worker = worker;
    void worker.run().catch((err: unknown) => this.#log.error({ err }, 'slack delivery stopped unexpectedly'));
    await worker.waitUntilReady();
    this.#log.info({ queue: SLACK_QUEUE, bot: this.#deps.web !== undefined, links: this.#deps.links.mode }, 'slack delivery started');
  }

  async #process(job: Job<SlackReplyJob, void, string>, token: string | undefined): Promise<void> {
    const parsed = SlackReplyJobSchema.safeParse(job.data);
    if (!parsed.success) throw new UnrecoverableError('reply job payload does not parse');
    const data = parsed.data;
    const log = this.#log.child({ captureId: data.captureId, slackChannel: data.channelId });
    const { queue } = this.#deps;
    let record = await queue.getCapture(data.captureId);
    if (record !== null && !isTerminal(record)) record = await queue.waitForCapture(data.captureId, this.tuning.waitSliceMs, this.#stop.signal);
    if (record === null) {
      log.warn('slack reply dropped: the capture no longer exists');
      return;
    }
    if (!isTerminal(record)) {
      if (Date.now() - data.issuedAtMs > this.tuning.giveUpAfterMs) {
        log.error(`slack reply undeliverable: the capture is still ${record.status} after ${Math.round(this.tuning.giveUpAfterMs / 3_600_000)} h`);
        return;
      }
      // Back to the queue: the slot goes to another reply, and a shutdown does not wait for this capture.
      await job.moveToDelayed(Date.now() + this.tuning.recheckDelayMs, token);
      throw new DelayedError();
    }
    await this.#deliver(data, record, job.attemptsMade + 1, log);
  }

  async #link(data: SlackReplyJob, record: CaptureRecord, log: Logger): Promise<ResultLink | null> {
    const { links, store, queue } = this.#deps;
    try {
      const link = await artifactLink(record, links, store);
      if (link?.kind === 'presigned') {
        // A presigned URL is a download anyone in the channel can make: audited like one.
        await queue.audit.append({
          action: 'artifact.presign',
          who: slackWho(data.teamId, data.userId),
          targetId: record.targetId,
          captureId: record.id,
          details: { via: 'slack', channel: data.channelId, expiresInSeconds: link.expiresInSeconds },
        });
      }
      return link;
    } catch (err) {
      log.warn({ err: err instanceof Error ? err.message : String(err) }, 'could not make a presigned link; the message links to the API');
      return artifactLink(record, { ...links, mode: 'api' }, store);
    }
  }

  async #deliver(data: SlackReplyJob, record: CaptureRecord, attempt: number, log: Logger): Promise<void> {
    const link = await this.#link(data, record, log);
    const pages = await captureConsoleLinks(this.#deps.queue, this.#deps.links.publicUrl, record);
    const { message, problems } = deliverable(captureMessage(record, link, { inChannel: true, console: pages }));
    if (problems.length > 0) log.warn({ problems }, 'the result message broke Slack limits; sending its text only');
    const facts = { status: record.status, attempt };
    let why: string;
    const inWindow = Date.now() < data.issuedAtMs + this.tuning.responseUrlWindowMs;
    if (!inWindow) why = 'the response_url window (30 min) has passed';
    else if (!(await this.#budget.take(data.responseUrl))) why = `the response_url took its ${RESPONSE_URL_MAX_POSTS} posts`;
    else {
      const out = await postToResponseUrl(data.responseUrl, message, { origins: this.#deps.responseOrigins, signal: this.#stop.signal });
      if (out.kind === 'delivered') {
        log.info({ ...facts, via: 'response_url' }, 'slack reply delivered');
        return;
      }
      if (out.kind === 'retry') throw new Error(`response_url: ${out.detail}`);
      await this.#budget.exhaust(data.responseUrl);
      why = `Slack refused the response_url (${out.detail})`;
    }
    const web = this.#deps.web;
    if (web === undefined) {
      log.error(facts, `slack reply undeliverable: ${why}, and no bot token (HEAPCAP_SLACK_BOT_TOKEN) is set to post with chat.postMessage`);
      return;
    }
    const out = await web.postMessage(data.channelId, message);
    if (out.kind === 'delivered') {
      log.info({ ...facts, via: 'chat.postMessage', because: why }, 'slack reply delivered');
      return;
    }
    if (out.kind === 'retry') throw new Error(`chat.postMessage: ${out.detail}`);
    log.error(facts, `slack reply undeliverable: ${why}; chat.postMessage: ${out.detail} (is the app in the channel?)`);
  }

  /** Stop: waiting jobs go back to the queue, posts in flight are aborted (and retried later). Idempotent. */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      this.#state = 'closing';
      this.#stop.abort();
      // A reply still being delivered is retried by another process once its job lock expires.
      if (this.#worker !== undefined) await closeWorker(this.#worker, { graceMs: this.tuning.closeGraceMs });
      this.#connection?.disconnect();
      this.#state = 'closed';
    })();
    return this.#closing;
  }
}
