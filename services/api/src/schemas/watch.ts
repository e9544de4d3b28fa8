/** Request and response schemas of /v1/watch-rules and /v1/targets/:id/samples (shared with the OpenAPI document). */
import { z } from 'zod';
import { RULE_SOURCES } from '@heapcap/state';
import { IdSchema } from '@heapcap/config';
import { WatchRuleSchema, WatchRuleSpecSchema, WatchSampleSchema, WatchTargetStateSchema } from '@heapcap/state/watch';

export const WatchRuleParamsSchema = z.strictObject({ id: IdSchema });

/** POST /v1/watch-rules and PUT /v1/watch-rules/:id. */
export const WatchRuleBodySchema = WatchRuleSpecSchema.describe('WatchRuleSpec');

export const WatchRuleViewSchema = z
  .object({
    rule: WatchRuleSchema,
    /** Where it is declared: `file` (HEAPCAP_RULES_FILE; the API refuses to change it, 409 `managed_by_file`) or `api`. */
    source: z.enum(RULE_SOURCES).describe('file: declared in HEAPCAP_RULES_FILE, changed only there (409 managed_by_file); api: made through the API'),
    /** active: the watcher samples its targets; paused: disabled. */
    state: z.enum(['active', 'paused']),
    /** The registered targets it watches now. */
    matches: z.number().int(),
    /** Its state for each target it watches now: ok | pending | firing | cooling, the last value and firing. */
    targets: z.array(WatchTargetStateSchema.extend({ sampler: z.string().nullable().describe('the watcher (worker id) sampling this target now; null: none') })),
    /** Its most recent firing over every target (with the outcome: captured, refused_headroom, sampled, suppressed_cooldown, suppressed_cap, failed). */
    lastFiring: WatchTargetStateSchema.shape.lastFiring.and(z.object({ targetId: z.string() }).partial()).nullable(),
  })
  .describe('WatchRuleView');

export const ListWatchRulesResponseSchema = z.object({ items: z.array(WatchRuleViewSchema) });

export const SamplesParamsSchema = z.strictObject({ id: IdSchema });

export const SamplesQuerySchema = z.strictObject({
  since: z.iso.datetime({ offset: true }).optional().describe('ISO 8601; default: one hour before `until`'),
  until: z.iso.datetime({ offset: true }).optional().describe('ISO 8601; default: now'),
  limit: z.coerce.number().int().min(1).max(10_000).default(1_000).describe('at most this many, oldest first (default 1000)'),
});

export const SamplesResponseSchema = z
  .object({
    targetId: z.string(),
    since: z.string(),
    until: z.string(),
    /** The watcher sampling the target now (null: no rule watches it, or no watcher can reach it). */
    sampler: z.string().nullable(),
    /** Samples kept per target (HEAPCAP_WATCH_RETENTION / HEAPCAP_WATCH_INTERVAL) and how many are stored now. */
    keep: z.number().int(),
    stored: z.number().int(),
    /** Where the items came from: redis (every sample, the last HEAPCAP_WATCH_RETENTION) or prometheus (a range starting earlier, with HEAPCAP_PROMETHEUS_URL set: one point per step). */
    source: z.enum(['redis', 'prometheus']),
    items: z.array(WatchSampleSchema.extend({ heapUsedRatio: z.number().nullable() })),
  })
  .describe('TargetSamples');
