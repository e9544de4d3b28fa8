/**
 * The Slack service behind `/slack/commands` and `/slack/interactions`.
 * Slack gives an endpoint 3 seconds: a command is answered with its reply if
 * that is ready within ACK_BUDGET_MS, else with an ephemeral "working on it"
 * and the reply follows through the response_url. A button click is
 * acknowledged at once and answered through its response_url. Follow-ups are
 * tracked, so a shutdown waits (briefly) for them.
 */
import fp from 'fastify-plugin';
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { ID_PATTERN } from '@heapcap/config';
import { isQueueError, type HeapcapQueue } from '@heapcap/state';
import type { ArtifactStore } from '@heapcap/storage';
import {
  CAPTURE_AGAIN_ACTION,
  ephemeral,
  postToResponseUrl,
  responseUrlBudget,
  unavailableMessage,
  type SignatureFailure,
  type SlackMessage,
} from '@heapcap/slack';
import type { SlackDeps } from '../../slack-setup.ts';
import { addressKey } from '../../auth/failure-limit.ts';
import { RejectionAudit } from '../../auth/rejection-audit.ts';
import type { BlockActions, SlashCommandBody } from '../../schemas/slack.ts';
import { commandOrigin, refuse, runCommand } from './slack-commands.ts';
import { startSlackCapture, type SlackOrigin } from './slack-capture.ts';

/** A command's own reply must be ready by then, or Slack gets "working on it" (Slack allows 3 s in all). */
export const ACK_BUDGET_MS = 2_000;
/** Refused Slack requests are summarized per address over this window. */
const REJECTION_WINDOW_MS = 60_000;
/** Addresses with audit entries of their own per window (the rest share one): at most 2 × 10 + 1 entries a minute. */
const REJECTION_SOURCES = 10;
/** At shutdown, follow-ups still running get this long. */
const FOLLOW_UP_CLOSE_MS = 5_000;

/** Handles verified Slack requests. */
export interface SlackService {
  /** The HTTP answer to a slash command (signed at `timestampS`). */
  command(req: FastifyRequest, body: SlashCommandBody, timestampS: number): Promise<SlackMessage>;
  /** Start handling a button click; its answer goes to the payload's response_url. */
  interaction(req: FastifyRequest, payload: BlockActions, timestampS: number): void;
  /**
   * Audit a request refused for its signature, or for its address being over
   * the failed-authentication limit (aggregated per address and minute, see
   * RejectionAudit; never throws: the 401 or 429 goes out regardless).
   */
  rejected(req: FastifyRequest, endpoint: string, reason: SignatureFailure | 'rate_limited'): Promise<void>;
}

declare module 'fastify' {
  interface FastifyInstance {
    slack: SlackService;
  }
}

interface SlackPluginOptions {
  queue: HeapcapQueue;
  store: ArtifactStore;
  slack: SlackDeps;
}

const slackPlugin: FastifyPluginAsync<SlackPluginOptions> = async (app, { queue, store, slack }) => {
  const deps = { queue, store, slack };
  const budget = responseUrlBudget(queue);
  const tasks = new Set<Promise<void>>();
  // Further refusals of an address within the window become one summary entry (a flood cannot empty the audit stream).
  const rejections = new RejectionAudit({
    windowMs: REJECTION_WINDOW_MS,
    maxSources: REJECTION_SOURCES,
    write: async ({ from, details }) => {
      try {
        const entry = await queue.audit.append({ who: 'slack:unverified', action: 'slack.rejected', from, details });
        app.log.info({ audit: entry }, `audit: ${entry.action} by ${entry.who} (summary)`);
      } catch (err) {
        app.log.error({ err: err instanceof Error ? err.message : String(err) }, 'could not audit refused Slack requests');
      }
    },
  });

  /** Keep a follow-up until it ends; its failure is logged, never thrown (the request has been answered). */
  const track = (req: FastifyRequest, task: Promise<void>): void => {
    const settled = task.catch((err: unknown) => req.log.warn({ err: err instanceof Error ? err.message : String(err) }, 'slack follow-up failed'));
    tasks.add(settled);
    void settled.finally(() => tasks.delete(settled));
  };

  /** Post `message` to a response_url within its budget; failures are logged (never the URL). */
  const followUp = async (req: FastifyRequest, url: string, message: SlackMessage): Promise<void> => {
    if (!(await budget.take(url))) {
      req.log.warn('slack follow-up not sent: the response_url took its 5 posts');
      return;
    }
    const out = await postToResponseUrl(url, message, { origins: slack.responseOrigins });
    if (out.kind !== 'delivered') req.log.warn({ outcome: out.kind, detail: out.detail }, 'slack follow-up not delivered');
  };

  /** `fn`'s message, or an ephemeral explanation: Slack never sees a 500 for a verified request. */
  const safely = async (req: FastifyRequest, fn: () => Promise<SlackMessage>): Promise<SlackMessage> => {
    try {
      return await fn();
    } catch (err) {
      if (isQueueError(err, 'redis_unavailable')) {
        req.log.warn({ err: err.message }, 'slack request: Redis unavailable');
        return unavailableMessage('answer');
      }
      req.log.error({ err }, 'slack request failed');
      return ephemeral(`:boom: heapcap failed on this request (an internal error, logged with request id \`${req.id}\`).`);
    }
  };

  const service: SlackService = {
    async command(req, body, timestampS) {
      const origin = commandOrigin(body, timestampS);
      const work = safely(req, () => runCommand(app, deps, req, body, origin));
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<undefined>((resolve) => {
        timer = setTimeout(() => resolve(undefined), ACK_BUDGET_MS);
      });
      const early = await Promise.race([work, late]);
      clearTimeout(timer);
      if (early !== undefined) return early;
      track(req, work.then((message) => followUp(req, origin.responseUrl, message)));
      return ephemeral(':hourglass_flowing_sand: Working on it; the answer follows here in a moment.');
    },

    interaction(req, payload, timestampS) {
      const action = payload.actions.find((a) => a.action_id === CAPTURE_AGAIN_ACTION);
      const teamId = payload.team?.id ?? payload.user.team_id;
      const channelId = payload.channel?.id ?? payload.container?.channel_id;
      const responseUrl = payload.response_url;
      if (action === undefined || teamId === undefined || channelId === undefined || responseUrl === undefined) {
        req.log.info({ actions: payload.actions.map((a) => a.action_id) }, 'slack interaction ignored (not a heapcap button)');
        return;
      }
      const origin: SlackOrigin = {
        caller: { teamId, enterpriseId: payload.enterprise?.id, userId: payload.user.id, userName: payload.user.username },
        channelId,
        responseUrl,
        issuedAtMs: Math.min(Date.now(), timestampS * 1000),
        triggerId: payload.trigger_id,
        via: 'slack-button',
      };
      const targetId = action.value ?? '';
      const previous = /^heapcap_result_(.+)$/.exec(action.block_id ?? '')?.[1];
      const work = safely(req, async () => {
        const auth = await slack.authorizer.authorize(origin.caller);
        req.principal = auth.principal;
        if (!auth.principal.scopes.has('captures:write')) return refuse(app, req, origin, 'capture', 'captures:write', auth.groupsError, targetId);
        if (!ID_PATTERN.test(targetId)) return ephemeral(':warning: This button does not name a target; use `/heapcap capture <target>`.');
        const reason = previous === undefined ? 'Capture again' : `Capture again (after ${previous})`;
        return startSlackCapture(app, { ...deps, targetIds: async () => (await queue.targets.list()).map((t) => t.target.id).sort() }, req, origin, { targetId, reason, truncated: undefined });
      });
      track(req, work.then((message) => followUp(req, responseUrl, message)));
    },

    async rejected(req, endpoint, reason) {
      if (rejections.note(addressKey(req.ip), reason) === 'counted') return;
      try {
        await app.audit.record(req, { who: 'slack:unverified', action: 'slack.rejected', details: { endpoint, reason } });
      } catch (err) {
        req.log.error({ err: err instanceof Error ? err.message : String(err), reason }, 'could not audit a refused Slack request');
      }
    },
  };
  app.decorate('slack', service);
  app.addHook('onClose', async () => {
    await rejections.flush();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.allSettled([...tasks]), new Promise((resolve) => (timer = setTimeout(resolve, FOLLOW_UP_CLOSE_MS)))]);
    clearTimeout(timer);
  });
};

export default fp(slackPlugin, { name: 'heapcap-slack', dependencies: ['heapcap-audit', 'heapcap-metrics'] });
