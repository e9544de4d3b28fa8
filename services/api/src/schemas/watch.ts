/** Request and response schemas of /v1/watch-rules, /v1/targets/:id/samples and /v1/targets/samples/latest (shared with the OpenAPI document). */
import { z } from 'zod';
import { RULE_SOURCES } from '@heapcap/state';
import { ID_PATTERN, IdSchema } from '@heapcap/config';
import { FiringSchema, TargetDownSchema, WatchRuleSchema, WatchRuleSpecSchema, WatchSampleSchema, WatchTargetStateSchema } from '@heapcap/state/watch';

/** A target whose last sample failed (null: it answered, or nobody tried): since when, the latest attempt, the reason. */
const DownSchema = TargetDownSchema.nullable().describe('the last sample failed: since (first failure, ms), at (latest attempt, ms), reason (connection refused | timed out | not Node | closed | not found | other), code, message; null: it answered, or nobody samples it');

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
    targets: z.array(WatchTargetStateSchema.extend({ sampler: z.string().nullable().describe('the watcher (worker id) sampling this target now; null: none'), down: DownSchema })),
    /** Its most recent firing over every target (with the outcome: captured, refused_headroom, sampled, suppressed_cooldown, suppressed_cap, failed). */
    // One strict object: `FiringSchema.and({targetId})` became an allOf of a closed object and
    // another property, which no response can satisfy (schemathesis found it when a rule had fired).
    lastFiring: FiringSchema.extend({ targetId: z.string() }).nullable(),
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
    down: DownSchema,
    items: z.array(WatchSampleSchema.extend({ heapUsedRatio: z.number().nullable() })),
  })
  .describe('TargetSamples');

/** Most targets one GET /v1/targets/samples/latest names (the console asks for a page of 50). */
export const MAX_LATEST_TARGETS = 200;
const ID = ID_PATTERN.source.replace(/^\^|\$$/g, '');

export const LatestSamplesQuerySchema = z.strictObject({
  ids: z
    .string()
    .regex(new RegExp(`^${ID}(?:,${ID}){0,${MAX_LATEST_TARGETS - 1}}$`), `1 to ${MAX_LATEST_TARGETS} target ids, comma-separated`)
    .describe(`target ids, comma-separated (1–${MAX_LATEST_TARGETS}); an id with no samples (or not registered) answers []`),
  points: z.coerce.number().int().min(1).max(360).default(1).describe('the newest this many samples of each target (default 1: its latest)'),
  since: z.iso.datetime({ offset: true }).optional().describe('ISO 8601: no sample older than this; default one hour ago'),
});

export const LatestSamplesResponseSchema = z
  .object({
    since: z.string(),
    /** One per distinct id, in the order asked; each target's samples oldest first. */
    items: z.array(z.object({ targetId: z.string(), samples: z.array(WatchSampleSchema), down: DownSchema })),
  })
  .describe('LatestTargetSamples');
