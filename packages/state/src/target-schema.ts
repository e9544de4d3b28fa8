/**
 * A registered target: the allowlist of what may be captured. One schema for
 * the targets file, the admin API and what the registry holds (re-checked on
 * every read), so a target is refused the same way wherever it comes from.
 */
import { z } from 'zod';
import { HostPortSchema, WsUrlSchema } from './address.ts';
import { IdSchema, RedactModeSchema } from '@heapcap/config';
import { textSchema } from './text.ts';
import { PlacementSchema } from './placement.ts';
import { PROFILE_UNSUPPORTED_CODE, TargetProfileSchema } from './profile-setting.ts';

/** A label name: lower-case letters, digits, `_`, `.`, `-`, starting with a letter (max 63). */
export const LabelNameSchema = z.string().regex(/^[a-z][a-z0-9_.-]{0,62}$/, 'a label name: lower-case letters, digits, "_", "." or "-", starting with a letter');
/** A label value (max 256 characters, no lone surrogates). */
export const LabelValueSchema = textSchema(256);
const Labels = z.record(LabelNameSchema, LabelValueSchema).default({});

/** A page selector pattern: a JavaScript regular expression that compiles (checked here, not at capture time). */
const Pattern = textSchema(512).refine((p) => {
  try {
    new RegExp(p);
    return true;
  } catch {
    return false;
  }
}, 'not a valid JavaScript regular expression (escape special characters, e.g. shop\\.example)');

// JSON Schema cannot say "exactly one of two optional fields" with properties
// alone: the OpenAPI document gets it from this, the server from the refine.
const EXACTLY_ONE_ADDRESS = { oneOf: [{ required: ['inspect'] }, { required: ['ws'] }] };

/** The fields every kind has after its address fields (this order is the order of the JSON the API returns). */
const Common = {
  labels: Labels,
  /** Per-target memory limit in bytes, used by the headroom gate when the target reports none. */
  memoryLimitBytes: z.number().int().positive().optional(),
  group: IdSchema.optional(),
  /** Only workers started with this placement (or `*`) capture it; none = any worker (placement.ts). */
  placement: PlacementSchema.optional(),
  /** Redaction of this target's snapshots (none | strings); absent: HEAPCAP_REDACT. A request cannot lower it. */
  redact: RedactModeSchema.optional(),
  /** A continuous allocation profile of this target (profile-setting.ts); false: none, whatever rules or HEAPCAP_PROFILE_EVERY say. */
  profile: TargetProfileSchema.optional(),
};

const NodePidTarget = z.strictObject({
  id: IdSchema,
  kind: z.literal('node-pid'),
  pid: z.number().int().positive(),
  port: z.number().int().min(1).max(65535).optional(),
  ...Common,
}).superRefine((t, ctx) => {
  // heapcap opens a node-pid target's inspector for one capture and closes it again, and V8's sampler lives only as
  // long as the inspector session that started it: a continuous profile would keep an inspector open for good.
  if (t.profile !== undefined && t.profile !== false) {
    ctx.addIssue({
      code: 'custom',
      path: ['profile'],
      params: { code: PROFILE_UNSUPPORTED_CODE },
      message: `${PROFILE_UNSUPPORTED_CODE}: a node-pid target cannot hold a continuous allocation profile (heapcap opens its inspector with SIGUSR1 for one capture and closes it again; the sampler would need it open for good): start the process with --inspect and register it as kind node, or remove profile`,
    });
  }
});

const ChromiumTarget = z.strictObject({
  id: IdSchema,
  kind: z.literal('chromium'),
  browser: HostPortSchema,
  select: z
    .strictObject({
      urlPattern: Pattern.optional(),
      titlePattern: Pattern.optional(),
      type: z.enum(['page', 'worker', 'service_worker', 'shared_worker']).optional(),
      /** Several matches: refuse with target_ambiguous (`only`, the default) or take the first listed. */
      pick: z.enum(['only', 'first']).optional(),
    })
    .default({}),
  ...Common,
});

/**
 * The target schema with `ws` (of `node` targets) checked by `ws`. TargetSchema
 * uses WsUrlSchema; the API's responses use a plain string, because readers
 * without targets:admin see the URL redacted.
 */
export function buildTargetSchema<W extends z.ZodType<string, string>>(ws: W) {
  const node = z
    .strictObject({ id: IdSchema, kind: z.literal('node'), inspect: HostPortSchema.optional(), ws: ws.optional(), ...Common })
    .meta(EXACTLY_ONE_ADDRESS)
    .refine((t) => (t.inspect === undefined) !== (t.ws === undefined), { message: 'a node target needs exactly one of inspect (HOST:PORT) or ws (URL)' });
  return z.discriminatedUnion('kind', [node, NodePidTarget, ChromiumTarget]);
}

/** A registered target, as the targets file, the admin API and the registry accept it. */
export const TargetSchema = buildTargetSchema(WsUrlSchema);
export type Target = z.infer<typeof TargetSchema>;
