/** Request and response schemas of /v1/targets. */
import { z } from 'zod';
import { IdSchema } from '@heapcap/config';
import { TargetSchema } from '@heapcap/queue';

export const TargetParamsSchema = z.strictObject({ id: IdSchema });

export const RegisteredTargetSchema = z
  .object({
    target: TargetSchema,
    /** file: from the targets file (re-synced at start-up); api: added through this API. */
    source: z.enum(['file', 'api']),
    updatedAt: z.string(),
  })
  .describe('RegisteredTarget');

export const ListTargetsResponseSchema = z.object({ items: z.array(RegisteredTargetSchema) });
