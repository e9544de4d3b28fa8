/**
 * Label selectors over the target registry: `{service: "checkout", env: "prod"}`
 * matches every target whose labels include all of those pairs. A group of
 * targets is a selector resolved against the registry at the moment it is
 * used, so replicas that register and leave are followed without editing
 * whatever holds the selector (schedules, watch rules, fleet views).
 */
import { z } from 'zod';
import { LabelNameSchema, LabelValueSchema, type Target } from './schemas.ts';

/** At most this many pairs: a selector is a short description of a group, not a list of targets. */
const MAX_PAIRS = 16;

/** A label selector: one to 16 `name: value` pairs, all of which must match (AND). */
export const SelectorSchema = z
  .record(LabelNameSchema, LabelValueSchema)
  .meta({ minProperties: 1, maxProperties: MAX_PAIRS })
  .refine((s) => Object.keys(s).length >= 1, { message: 'a selector needs at least one label, e.g. {"service": "checkout"}' })
  .refine((s) => Object.keys(s).length <= MAX_PAIRS, { message: `a selector takes at most ${MAX_PAIRS} labels` });
export type Selector = z.infer<typeof SelectorSchema>;

/** True when `labels` has every pair of `selector`. */
export function matchesSelector(labels: Readonly<Record<string, string>>, selector: Selector): boolean {
  return Object.entries(selector).every(([k, v]) => Object.hasOwn(labels, k) && labels[k] === v);
}

/** The targets `selector` matches, sorted by id (a stable order: group plans depend on it). */
export function selectTargets(targets: readonly Target[], selector: Selector): Target[] {
  return targets.filter((t) => matchesSelector(t.labels, selector)).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

/** `service=checkout,env=prod`: the selector as one line (logs, CLI tables). */
export function formatSelector(selector: Selector): string {
  return Object.entries(selector)
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
}
