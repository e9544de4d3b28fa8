/**
 * The Slack part of the configuration: the HEAPCAP_SLACK_* variables (merged
 * into the one env schema) and the typed settings they become. The API mounts
 * `/slack/*` only when a signing secret is set; every worker delivers Slack
 * replies (bot token, links and retries come from here).
 */
import { z } from 'zod';

/** Where Slack's Web API lives (GovSlack and tests use another base). */
export const DEFAULT_SLACK_API_URL = 'https://slack.com/api/';

/**
 * Where Slack's response_urls point: `https://hooks.slack.com/commands/…` and
 * `…/actions/…` (commercial Slack), `https://hooks.slack-gov.com/…` (GovSlack
 * runs on slack-gov.com). Any other URL in a signed request is refused: a
 * response_url is an address heapcap POSTs to, and a request signed with a
 * leaked signing secret could otherwise aim it at loopback, Redis or a cloud
 * metadata service.
 */
export const DEFAULT_SLACK_RESPONSE_HOSTS = 'hooks.slack.com,hooks.slack-gov.com';

/** One HEAPCAP_SLACK_RESPONSE_HOSTS entry as an origin: a bare host means https on 443; a URL keeps its scheme and port. */
function responseOrigin(entry: string): string | undefined {
  const e = entry.trim();
  if (/^[A-Za-z0-9.-]+$/.test(e)) return `https://${e.toLowerCase()}`;
  try {
    const u = new URL(e);
    if ((u.protocol !== 'https:' && u.protocol !== 'http:') || u.username !== '' || u.password !== '' || (u.pathname !== '/' && u.pathname !== '') || u.search !== '') return undefined;
    return u.origin;
  } catch {
    return undefined;
  }
}

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
  /**
   * The hosts a response_url may point to, comma-separated: a bare host (https, port 443) or an
   * origin (`http://127.0.0.1:8099`: tests' stand-ins, a Slack-compatible proxy). Default: Slack's own.
   */
  HEAPCAP_SLACK_RESPONSE_HOSTS: z
    .string()
    .default(DEFAULT_SLACK_RESPONSE_HOSTS)
    .transform((v, ctx) => {
      const entries = v.split(',').map((e) => e.trim()).filter((e) => e !== '');
      const origins = entries.map(responseOrigin);
      const bad = entries.filter((_, i) => origins[i] === undefined);
      if (entries.length === 0 || bad.length > 0) {
        ctx.addIssue({ code: 'custom', message: `must be hosts (hooks.slack.com) or origins (https://host:port), comma-separated; not ${bad.length > 0 ? bad.map((b) => JSON.stringify(b)).join(', ') : 'empty'}` });
        return z.NEVER;
      }
      return [...new Set(origins as string[])];
    }),
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
  /** Origins a response_url may have (`https://hooks.slack.com`, …); see HEAPCAP_SLACK_RESPONSE_HOSTS. */
  responseOrigins: readonly string[];
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
    responseOrigins: e.HEAPCAP_SLACK_RESPONSE_HOSTS,
  };
}

/** HEAPCAP_PUBLIC_URL, or the listen address (a wildcard address becomes 127.0.0.1), without a trailing slash. */
export function publicUrlOf(explicit: string | undefined, host: string, port: number): string {
  if (explicit !== undefined) return explicit.replace(/\/+$/, '');
  const h = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
  return `http://${h.includes(':') ? `[${h}]` : h}:${port}`;
}
