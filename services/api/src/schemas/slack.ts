/**
 * What Slack sends to `/slack/commands` and `/slack/interactions` (form
 * fields, after the signature check) and what heapcap answers. Lenient on
 * purpose: Slack adds fields over time, and unknown ones are dropped, not refused.
 */
import { z } from 'zod';

const SlackId = z.string().regex(/^[A-Z0-9]{2,32}$/, 'a Slack id');

/** The signature headers, for the OpenAPI document (their check runs before validation). */
export const SlackHeadersSchema = z.object({
  'x-slack-signature': z.string().describe('v0=<hex HMAC-SHA256 of "v0:{timestamp}:{raw body}" keyed with the signing secret>'),
  'x-slack-request-timestamp': z.string().describe('seconds since the epoch; more than 5 minutes away from now is refused as a replay'),
});

/** A slash command invocation. */
export const SlashCommandBodySchema = z.object({
  team_id: SlackId,
  enterprise_id: SlackId.optional(),
  channel_id: SlackId,
  user_id: SlackId,
  user_name: z.string().max(200).optional(),
  command: z.string().max(100).default('/heapcap'),
  text: z.string().max(40_000).default(''),
  response_url: z.url({ protocol: /^https?$/ }),
  trigger_id: z.string().max(200).optional(),
});
export type SlashCommandBody = z.output<typeof SlashCommandBodySchema>;

/** An interaction: one form field holding the JSON payload. */
export const InteractionBodySchema = z.object({ payload: z.string().min(2).describe('JSON: a block_actions payload (other types are acknowledged and ignored)') });

/** The block_actions payload of a button click (what heapcap reads of it). */
export const BlockActionsSchema = z.object({
  type: z.literal('block_actions'),
  team: z.object({ id: SlackId }).nullable(),
  enterprise: z.object({ id: SlackId }).nullable().optional(),
  user: z.object({ id: SlackId, username: z.string().max(200).optional(), team_id: SlackId.optional() }),
  channel: z.object({ id: SlackId }).optional(),
  container: z.object({ channel_id: SlackId.optional() }).optional(),
  response_url: z.url({ protocol: /^https?$/ }).optional(),
  trigger_id: z.string().max(200).optional(),
  actions: z.array(z.object({ action_id: z.string().max(255), block_id: z.string().max(255).optional(), value: z.string().max(2_000).optional() })).min(1),
});
export type BlockActions = z.output<typeof BlockActionsSchema>;

/** An ephemeral (or in-channel) message in Block Kit. */
export const SlackMessageResponseSchema = z
  .object({
    response_type: z.enum(['ephemeral', 'in_channel']).optional(),
    replace_original: z.boolean().optional(),
    text: z.string(),
    blocks: z.array(z.unknown()).optional(),
  })
  .describe('SlackMessage');
