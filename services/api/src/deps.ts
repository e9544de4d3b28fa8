/** What the API is built from: configuration, backing services and auth mode (the composition root passes them in). */
import type { Logger } from 'pino';
import type { HeapcapConfig } from '@heapcap/config';
import type { HeapcapQueue } from '@heapcap/queue';
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
  /** Trust X-Forwarded-For (behind a proxy), so audit entries name the real client. */
  trustProxy: boolean;
}

/** Defaults: 64 KiB bodies, 600 requests per token per minute. */
export const DEFAULT_HTTP: HttpSettings = {
  bodyLimitBytes: 64 * 1024,
  rateLimitMax: 600,
  rateLimitWindowMs: 60_000,
  trustProxy: false,
};

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
}
