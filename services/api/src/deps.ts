/** What the API is built from: configuration, backing services and auth mode (the composition root passes them in). */
import type { Logger } from 'pino';
import type { HeapcapConfig } from '@heapcap/config';
import type { HeapcapQueue } from '@heapcap/state';
import type { ArtifactStore } from '@heapcap/storage';
import type { AuthMode } from './plugins/infra/auth.ts';
import type { SlackDeps } from './slack-setup.ts';

/** HTTP limits; every field has a default (see DEFAULT_HTTP). */
export interface HttpSettings {
  /** Largest request body. Capture and target bodies are a few hundred bytes. */
  bodyLimitBytes: number;
  /** Requests per token per window (public routes are not limited). */
  rateLimitMax: number;
  rateLimitWindowMs: number;
  /** Requests with a missing or invalid token per client address per window; past it the address gets 429 until the window ends. */
  authFailureMax: number;
  authFailureWindowMs: number;
  /**
   * Whose X-Forwarded-For to believe (Fastify's trustProxy): false, true, a hop
   * count, or proxy addresses/CIDRs. It decides the client address that audit
   * entries name and that failed authentications are counted against.
   */
  trustProxy: boolean | string[] | ((address: string, hop: number) => boolean);
  /** How long a console session lives after sign-in (absolute): a working day. */
  sessionTtlMs: number;
  /** /metrics: public (`none`) or for tokens with captures:read (`token`; HEAPCAP_METRICS_AUTH). */
  metricsAuth: 'none' | 'token';
}

/** Defaults: 64 KiB bodies, 600 requests per token and 30 failed authentications per address per minute. */
export const DEFAULT_HTTP: HttpSettings = {
  bodyLimitBytes: 64 * 1024,
  rateLimitMax: 600,
  rateLimitWindowMs: 60_000,
  authFailureMax: 30,
  authFailureWindowMs: 60_000,
  trustProxy: false,
  sessionTtlMs: 8 * 3600_000,
  metricsAuth: 'none',
};

/** The HTTP settings that configuration sets (HEAPCAP_RATE_LIMIT, HEAPCAP_AUTH_FAILURE_LIMIT, HEAPCAP_TRUST_PROXY, HEAPCAP_METRICS_AUTH). */
export function httpFromConfig(config: Pick<HeapcapConfig, 'rateLimitPerMinute' | 'authFailureLimitPerMinute' | 'trustProxy' | 'metricsAuth'>): Partial<HttpSettings> {
  const tp = config.trustProxy;
  // A hop count: trust the nearest `tp` proxies (Fastify's types take it as a function).
  const trustProxy = typeof tp === 'number' ? (_address: string, hop: number) => hop < tp : tp;
  return { rateLimitMax: config.rateLimitPerMinute, authFailureMax: config.authFailureLimitPerMinute, trustProxy, metricsAuth: config.metricsAuth };
}

/** Dependencies of buildApp. The caller owns (and closes) queue and sink. */
export interface ApiDeps {
  config: HeapcapConfig;
  queue: HeapcapQueue;
  sink: ArtifactStore;
  auth: AuthMode;
  /** Root logger; the API logs through a child with its redaction paths. Default: a new pino logger at config.logLevel. */
  logger?: Logger | undefined;
  http?: Partial<HttpSettings> | undefined;
  /** Slack's endpoints, mounted only when set (HEAPCAP_SLACK_SIGNING_SECRET; see prepareSlack). The caller closes its replies producer. */
  slack?: SlackDeps | undefined;
  /** The built console served at /ui. Default: dist/console beside the bundle (defaultConsoleDir). */
  consoleDir?: string | undefined;
  /** HEAPCAP_RULES_FILE's sync in this process (packages/service RulesFileSync), for /metrics; absent without the setting. */
  rulesFile?: RulesFileHealth | undefined;
}

/** What /metrics reads of the rules file's sync. */
export interface RulesFileHealth {
  status(): { refused: string | undefined; refusals: number };
}
