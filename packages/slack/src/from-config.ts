/** Slack parts wired from the parsed configuration (shared by the API's and the worker's composition roots). */
import type { Logger } from 'pino';
import type { HeapcapConfig } from '@heapcap/config';
import type { HeapcapQueue } from '@heapcap/state';
import type { ArtifactStore } from '@heapcap/storage';
import { SlackDelivery, type DeliveryTuning } from './delivery.ts';
import type { LinkSettings } from './links.ts';
import { DEFAULT_REPLY_ATTEMPTS, SlackReplies } from './replies.ts';
import { SlackWebApi } from './web-api.ts';

/** How links are made, from configuration. */
export function linkSettingsOf(config: HeapcapConfig): LinkSettings {
  return { publicUrl: config.publicUrl, mode: config.slack.links, ttlSeconds: config.slack.linkTtlSeconds };
}

/** The bot's Web API client, or undefined without HEAPCAP_SLACK_BOT_TOKEN. */
export function webApiOf(config: HeapcapConfig, log: Logger): SlackWebApi | undefined {
  const token = config.slack.botToken;
  return token === undefined ? undefined : new SlackWebApi({ token, apiUrl: config.slack.apiUrl, log });
}

/** The producer of reply jobs (API side). */
export function repliesFromConfig(config: HeapcapConfig, queue: HeapcapQueue): SlackReplies {
  return new SlackReplies(queue, { attempts: DEFAULT_REPLY_ATTEMPTS, baseDelayMs: config.slack.retryBaseMs });
}

/** The consumer of reply jobs (worker side). */
export function deliveryFromConfig(config: HeapcapConfig, queue: HeapcapQueue, store: ArtifactStore, log: Logger, tuning?: Partial<DeliveryTuning>): SlackDelivery {
  return new SlackDelivery({ queue, store, links: linkSettingsOf(config), responseOrigins: config.slack.responseOrigins, web: webApiOf(config, log), log, tuning });
}
