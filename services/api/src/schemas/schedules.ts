/** Request and response schemas of /v1/schedules and the capture pin routes (shared with the OpenAPI document). */
import { z } from 'zod';
import { IdSchema } from '@heapcap/config';
import { CAPTURE_STATUSES, CaptureRecordSchema, RULE_SOURCES } from '@heapcap/state';
import { LastRunSchema, ScheduleSchema, ScheduleSpecSchema } from '@heapcap/state/schedules';

export const ScheduleParamsSchema = z.strictObject({ id: IdSchema });

/** POST /v1/schedules and PUT /v1/schedules/:id. */
export const ScheduleBodySchema = ScheduleSpecSchema.describe('ScheduleSpec');

export const ScheduleViewSchema = z
  .object({
    schedule: ScheduleSchema,
    /** Where it is declared: `file` (HEAPCAP_RULES_FILE; the API refuses to change it, 409 `managed_by_file`) or `api`. */
    source: z.enum(RULE_SOURCES).describe('file: declared in HEAPCAP_RULES_FILE, changed only there (409 managed_by_file); api: made through the API'),
    /** active: its job scheduler runs it; paused: it has none. */
    state: z.enum(['active', 'paused']),
    /** The retention in force: the schedule's own, else the defaults (HEAPCAP_RETENTION_*); maxAgeDays 0 = no age limit. */
    retention: z.object({ keepLast: z.number().int(), maxAgeDays: z.number() }),
    /** How many registered targets it would capture now. */
    matches: z.number().int(),
    /** The next three run times (ISO 8601); empty while paused. */
    nextRunAt: z.array(z.string()),
    /** The last turn of its runs (one per target per run): created, coalesced or skipped (with the reason). */
    lastRun: LastRunSchema.nullable(),
    /** Its last capture (made or joined) and that capture's status now. */
    lastCapture: z.object({ id: z.string(), status: z.enum(CAPTURE_STATUSES).nullable() }).nullable(),
  })
  .describe('ScheduleView');

export const ListSchedulesResponseSchema = z.object({ items: z.array(ScheduleViewSchema) });

export const PinBodySchema = z
  .strictObject({ reason: z.string().max(1000).optional().describe('why it is kept (shown on the record)') })
  // No body at all arrives as null.
  .nullish()
  .describe('PinCapture');

export const PinResponseSchema = z.object({ capture: CaptureRecordSchema });
