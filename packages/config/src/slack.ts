/**
 * The Slack part of the configuration: the HEAPCAP_SLACK_* variables (merged
 * into the one env schema) and the typed settings they become. The API mounts
 * `/slack/*` only when a signing secret is set; every worker delivers Slack
 * replies (bot token, links and retries come from here).
 */
import { z } from 'zod';

/** Where Slack's Web API lives (GovSlack and tests use another base). */
export const DEFAULT_SLACK_API_URL = 'https://slack.com/api/';

/** The HEAPCAP_SLACK_* variables and HEAPCAP_PUBLIC_URL (spread into the env schema). */
export const SLACK_ENV = {
  /** Slack app's signing secret (a secret: never logged). Set → the API mounts /slack/commands and /slack/interactions. */
  HEAPCAP_SLACK_SIGNING_SECRET: z.string().min(16, 'must be the Slack app signing secret (Basic Information → App Credentials), at least 16 characters').optional(),
  /** Which Slack users and user groups hold which scopes (YAML or JSON); required with the signing secret. */
  HEAPCAP_SLACK_USERS_FILE: z.string().min(1).optional(),
  /** Bot token (xoxb-…, a secret): posts results after the response_url window and resolves user groups. */
  HEAPCAP_SLACK_BOT_TOKEN: z.string().regex(/^xoxb-[A-Za-z0-9-]+$/, 'must be a bot token (xoxb-…) from OAuth & Permissions').optional(),
  /** Base URL of Slack's Web API. */
  HEAPCAP_SLACK_API_URL: z.url({ protocol: /^https?$/, error: `must be an http:// or https:// URL, e.g. ${DEFAULT_SLACK_API_URL}` }).default(DEFAULT_SLACK_API_URL),
  /** Download links in Slack messages: `api` (the API's artifact URL, needs a token) or `presigned` (a short-lived storage URL where the store can sign one). */
  HEAPCAP_SLACK_LINKS: z.enum(['api', 'presigned']).default('api'),
  /** Lifetime of a presigned link, seconds (SigV4 allows at most 7 days). */
  HEAPCAP_SLACK_LINK_TTL_SECONDS: z.coerce.number().int().min(60).max(604_800).default(3_600),
  /** First retry delay of a Slack post, ms; doubled each retry. */
  HEAPCAP_SLACK_RETRY_MS: z.coerce.number().int().min(10).max(600_000).default(2_000),
  /** The API's base URL as engineers reach it (links in Slack messages); default http://HEAPCAP_HOST:HEAPCAP_PORT. */
  HEAPCAP_PUBLIC_URL: z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL, e.g. https://heapcap.internal.example' }).optional(),
};

type SlackEnv = z.output<z.ZodObject<typeof SLACK_ENV>>;

/** Slack settings (secrets stay in this object: never log it). */
export interface SlackConfig {
  signingSecret: string | undefined;
  usersFile: string | undefined;
  botToken: string | undefined;
  apiUrl: string;
  links: 'api' | 'presigned';
  linkTtlSeconds: number;
  retryBaseMs: number;
}

/** The Slack settings of parsed env values. */
export function slackConfigOf(e: SlackEnv): SlackConfig {
  return {
    signingSecret: e.HEAPCAP_SLACK_SIGNING_SECRET,
    usersFile: e.HEAPCAP_SLACK_USERS_FILE,
    botToken: e.HEAPCAP_SLACK_BOT_TOKEN,
    apiUrl: e.HEAPCAP_SLACK_API_URL,
    links: e.HEAPCAP_SLACK_LINKS,
    linkTtlSeconds: e.HEAPCAP_SLACK_LINK_TTL_SECONDS,
    retryBaseMs: e.HEAPCAP_SLACK_RETRY_MS,
  };
}

/** HEAPCAP_PUBLIC_URL, or the listen address (a wildcard address becomes 127.0.0.1), without a trailing slash. */
export function publicUrlOf(explicit: string | undefined, host: string, port: number): string {
  if (explicit !== undefined) return explicit.replace(/\/+$/, '');
  const h = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
  return `http://${h.includes(':') ? `[${h}]` : h}:${port}`;
}
