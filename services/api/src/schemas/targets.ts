/** Request and response schemas of /v1/targets. */
import { z } from 'zod';
import { IdSchema } from '@heapcap/config';
import { buildTargetSchema } from '@heapcap/state';

export const TargetParamsSchema = z.strictObject({ id: IdSchema });

/**
 * A target as the API shows it: the registry's schema, except that `ws` is
 * any string, because a caller without targets:admin sees it redacted.
 */
export const TargetViewSchema = buildTargetSchema(
  z.string().describe('the inspector WebSocket URL; without targets:admin only its scheme, host and port are shown: ws://HOST:PORT/… (no user info, path or query)'),
);

export const RegisteredTargetSchema = z
  .object({
    target: TargetViewSchema,
    /** file: from the targets file (re-synced at start-up); api: added through this API. */
    source: z.enum(['file', 'api']),
    updatedAt: z.string(),
  })
  .describe('RegisteredTarget');

export const ListTargetsResponseSchema = z.object({ items: z.array(RegisteredTargetSchema) });
