/**
 * POST /slack/commands and POST /slack/interactions: Slack's requests,
 * verified before anything else looks at them. In this plugin's own scope
 * every body is kept as raw bytes (the signature covers the bytes as sent;
 * the app's JSON parser elsewhere is untouched); the signature is checked in
 * preValidation, and only then is the form parsed and validated. The routes
 * are public at the HTTP level: Slack users are authorized by the Slack
 * service from the Slack users file.
 */
import { z } from 'zod';
import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { responseUrlRefusal, verifySlackSignature, type SignatureFailure } from '@heapcap/slack';
import { ApiError, validationFailed } from '../../errors.ts';
import { addressKey } from '../../auth/failure-limit.ts';
import { tooManyFailures } from '../../plugins/infra/auth.ts';
import { errorResponses } from '../../schemas/common.ts';
import { BlockActionsSchema, InteractionBodySchema, SlackHeadersSchema, SlackMessageResponseSchema, SlashCommandBodySchema } from '../../schemas/slack.ts';

/** Command bodies: a few hundred bytes plus the text (a 4,000-emoji reason is ~50 KB form-encoded). */
const COMMAND_BODY_LIMIT = 128 * 1024;
/** Interaction payloads carry the whole message the button sat in. */
const INTERACTION_BODY_LIMIT = 1024 * 1024;

const FAILURE_TEXT: Record<SignatureFailure, string> = {
  missing_headers: 'X-Slack-Signature and X-Slack-Request-Timestamp are required',
  malformed_signature: 'X-Slack-Signature must be v0=<64 hex digits> and X-Slack-Request-Timestamp a number of seconds',
  stale_timestamp: 'X-Slack-Request-Timestamp is more than 5 minutes from now (a replay, or a clock out of sync)',
  bad_signature: 'the signature does not match this request (wrong signing secret, or the body was altered)',
};

function header(req: FastifyRequest, name: string): string | undefined {
  const v = req.headers[name];
  return typeof v === 'string' ? v : undefined;
}

/** The verified timestamp of a request (seconds). */
function signedAt(req: FastifyRequest): number {
  return Number(header(req, 'x-slack-request-timestamp'));
}

/** Refuses a signed request whose response_url heapcap must not POST to (a loopback, internal or metadata address). */
function checkResponseUrl(url: string | undefined, origins: readonly string[]): void {
  if (url === undefined) return;
  const refusal = responseUrlRefusal(url, origins);
  if (refusal !== undefined) throw new ApiError('response_url_not_allowed', `${refusal}; heapcap only answers through Slack's own hosts`, { allowed: origins });
}

const slackRoutes: FastifyPluginAsyncZod<{ signingSecret: string; responseOrigins: readonly string[] }> = async (app, { signingSecret, responseOrigins }) => {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));

  // An address that sent too many unverifiable requests is refused before its body is read
  // (the same limit as bad bearer tokens: HEAPCAP_AUTH_FAILURE_LIMIT per minute).
  app.addHook('onRequest', async (req) => {
    const waitMs = app.authFailures.blockedFor(addressKey(req.ip));
    if (waitMs > 0) {
      await app.slack.rejected(req, req.routeOptions.url ?? req.url, 'rate_limited');
      throw tooManyFailures(app.authFailures, waitMs, 'without a valid Slack signature', 'signed with the app\'s signing secret');
    }
  });

  app.addHook('preValidation', async (req, reply) => {
    const raw = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
    const check = verifySlackSignature(signingSecret, { timestamp: header(req, 'x-slack-request-timestamp'), signature: header(req, 'x-slack-signature'), rawBody: raw });
    if (!check.ok) {
      app.authFailures.fail(addressKey(req.ip));
      await app.slack.rejected(req, req.routeOptions.url ?? req.url, check.reason);
      throw new ApiError('unauthorized', `not a verified Slack request: ${FAILURE_TEXT[check.reason]}`, { reason: check.reason });
    }
    if (!(req.headers['content-type'] ?? '').toLowerCase().startsWith('application/x-www-form-urlencoded')) {
      throw new ApiError('unsupported_media_type', 'Slack requests are application/x-www-form-urlencoded', { accepted: ['application/x-www-form-urlencoded'] });
    }
    const fields = Object.fromEntries(new URLSearchParams(raw.toString('utf8')));
    // Slack's periodic check of the endpoint's certificate: nothing to do but answer.
    if (fields['ssl_check'] === '1') return reply.code(200).send({ text: 'ok' });
    req.body = fields;
    return undefined;
  });

  const documented = {
    tags: ['slack'],
    consumes: ['application/x-www-form-urlencoded'],
    headers: SlackHeadersSchema,
    // Slack signs its requests; no bearer token.
    security: [],
  };

  app.post(
    '/commands',
    {
      config: { public: true },
      bodyLimit: COMMAND_BODY_LIMIT,
      schema: {
        ...documented,
        operationId: 'slackCommand',
        summary: 'The /heapcap slash command (Slack calls this)',
        description:
          'Verified with the app signing secret before the form is parsed (401 `unauthorized` with `details.reason` otherwise; audited). ' +
          'A `response_url` outside HEAPCAP_SLACK_RESPONSE_HOSTS (Slack\'s own hosts by default) is refused with 400 `response_url_not_allowed`. ' +
          'Answers within Slack\'s 3 s with an ephemeral message; a capture\'s result is posted to the `response_url` (in channel) when it ends. ' +
          'Commands: capture <target> [reason], status <captureId>, list [target], targets, schedules [target], diff <a> <b>, help.',
        body: SlashCommandBodySchema,
        response: { 200: SlackMessageResponseSchema, ...errorResponses(400, 401, 413, 415, 429) },
      },
    },
    async (req) => {
      checkResponseUrl(req.body.response_url, responseOrigins);
      return app.slack.command(req, req.body, signedAt(req));
    },
  );

  app.post(
    '/interactions',
    {
      config: { public: true },
      bodyLimit: INTERACTION_BODY_LIMIT,
      schema: {
        ...documented,
        operationId: 'slackInteraction',
        summary: 'Slack interactivity: the "Capture again" button (Slack calls this)',
        description:
          'Verified like /slack/commands. A block_actions payload with the `heapcap_capture_again` button starts a capture of the button\'s target for the clicking user ' +
          '(who needs `captures:write`); the acknowledgement and, later, the result go to the payload\'s `response_url`. Other payloads are acknowledged and ignored.',
        body: InteractionBodySchema,
        response: { 200: z.null().describe('empty: Slack only needs the 200'), ...errorResponses(400, 401, 413, 415, 429) },
      },
    },
    async (req, reply) => {
      let json: unknown;
      try {
        json = JSON.parse(req.body.payload);
      } catch {
        throw validationFailed([{ in: 'body', path: 'payload', message: 'not JSON' }]);
      }
      const type = (json as { type?: unknown } | null)?.type;
      if (type === 'block_actions') {
        const parsed = BlockActionsSchema.safeParse(json);
        if (!parsed.success) throw validationFailed(parsed.error.issues.map((i) => ({ in: 'body', path: `payload.${i.path.join('.')}`, message: i.message })));
        checkResponseUrl(parsed.data.response_url, responseOrigins);
        app.slack.interaction(req, parsed.data, signedAt(req));
      } else {
        req.log.info({ type: typeof type === 'string' ? type.slice(0, 50) : typeof type }, 'slack interaction type ignored');
      }
      return reply.code(200).send(null);
    },
  );
};

export default slackRoutes;
