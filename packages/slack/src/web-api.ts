/**
 * The outgoing calls to Slack's Web API heapcap makes with the bot token, on
 * Slack's official client (@slack/web-api): chat.postMessage (results past
 * the response_url window) and usergroups.users.list (user-group grants).
 * The client's own retries are off: replies are retried by their BullMQ job,
 * and an authorization check must answer within Slack's 3 seconds.
 */
import { LogLevel, WebAPIHTTPError, WebAPIPlatformError, WebAPIRateLimitedError, WebClient, type Logger as SlackLogger } from '@slack/web-api';
import type { Logger } from 'pino';
import type { SlackMessage } from './blocks.ts';
import type { PostOutcome } from './response-url.ts';

/** Deadline of one Web API call. */
const CALL_TIMEOUT_MS = 5_000;

/** Slack's client logs through ours: warnings and errors only (its debug lines describe every request). */
function slackLogger(log: Logger): SlackLogger {
  let level = LogLevel.WARN;
  let name = 'slack-web-api';
  return {
    debug: () => undefined,
    info: () => undefined,
    warn: (...msg: unknown[]) => log.warn({ component: name }, msg.map(String).join(' ')),
    error: (...msg: unknown[]) => log.warn({ component: name }, msg.map(String).join(' ')),
    setLevel: (l: LogLevel) => {
      level = l;
    },
    getLevel: () => level,
    setName: (n: string) => {
      name = n;
    },
  };
}

/** Platform errors that a retry cannot fix (the channel, the token or the payload is wrong). */
function isPermanent(err: unknown): err is WebAPIPlatformError {
  return err instanceof WebAPIPlatformError && err.data.error !== 'ratelimited' && err.data.error !== 'internal_error' && err.data.error !== 'fatal_error' && err.data.error !== 'service_unavailable';
}

/** What went wrong in a Web API call, in a few words (never the token). */
export function describeWebApiError(err: unknown): string {
  if (err instanceof WebAPIPlatformError) return `Slack answered ${err.data.error}`;
  if (err instanceof WebAPIRateLimitedError) return `rate limited; retry after ${err.retryAfter} s`;
  if (err instanceof WebAPIHTTPError) return `HTTP ${err.statusCode}`;
  return err instanceof Error ? err.message : String(err);
}

/** The bot's Web API calls. */
export class SlackWebApi {
  readonly #client: WebClient;

  constructor(options: { token: string; apiUrl: string; log: Logger }) {
    this.#client = new WebClient(options.token, {
      slackApiUrl: options.apiUrl,
      retryConfig: { retries: 0 },
      rejectRateLimitedCalls: true,
      timeout: CALL_TIMEOUT_MS,
      logger: slackLogger(options.log),
    });
  }

  /** chat.postMessage to `channel`; never throws. */
  async postMessage(channel: string, message: SlackMessage): Promise<PostOutcome> {
    try {
      await this.#client.chat.postMessage({ channel, text: message.text, ...(message.blocks === undefined ? {} : { blocks: message.blocks }), unfurl_links: false, unfurl_media: false });
      return { kind: 'delivered' };
    } catch (err) {
      return { kind: isPermanent(err) ? 'rejected' : 'retry', detail: describeWebApiError(err) };
    }
  }

  /** The user ids of a user group (usergroups.users.list; needs the usergroups:read scope). */
  async userGroupMembers(groupId: string, teamId: string): Promise<string[]> {
    const res = await this.#client.usergroups.users.list({ usergroup: groupId, team_id: teamId });
    return res.users ?? [];
  }
}
