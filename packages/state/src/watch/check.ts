/**
 * What the rule schema cannot check alone: the target is registered (a
 * selector may match nothing yet: replicas come and go, and a watch rule, unlike
 * a schedule, costs nothing while nothing matches), the cooldown is not shorter
 * than the watch interval, a growth window spans at least two samples and fits
 * in the samples kept, rssBytes is not asked of a Chromium target, and the
 * capture does not force the headroom gate.
 * Each problem names the field: the API answers 400 and creates nothing.
 */
import { newCaptureId } from '@heapcap/config';
import type { Target } from '../schemas.ts';
import { selectTargets } from '../selectors.ts';
import { PROFILE_UNSUPPORTED_CODE } from '../profile-setting.ts';
import { DEFAULT_COOLDOWN_SECONDS, DEFAULT_MAX_PER_DAY, type WatchRule, type WatchRuleSpec } from './schema.ts';

/** The watcher's settings a rule is checked against, and the registry now. */
export interface WatchCheckContext {
  intervalMs: number;
  /** How long samples are kept (HEAPCAP_WATCH_RETENTION). */
  retentionMs: number;
  targets: readonly Target[];
}

/** One bad field: dotted path in the body, and why. */
export interface WatchIssue {
  path: string;
  message: string;
  /** A stable code for the field's problem, where it has one (profile_unsupported). */
  code?: string;
}

/** Problems of a shape-valid spec (empty when fine). */
export function checkWatchRule(spec: WatchRuleSpec, ctx: WatchCheckContext): WatchIssue[] {
  const issues: WatchIssue[] = [];
  const intervalS = ctx.intervalMs / 1000;
  const cooldown = spec.cooldownSeconds ?? DEFAULT_COOLDOWN_SECONDS;
  if (cooldown < intervalS) {
    issues.push({ path: 'cooldownSeconds', message: `${cooldown} s is shorter than the watch interval (${intervalS} s, HEAPCAP_WATCH_INTERVAL): a cooldown must span at least one sample` });
  }
  const window = spec.when.windowSeconds;
  if (window !== undefined && window < 2 * intervalS) {
    issues.push({ path: 'when.windowSeconds', message: `${window} s spans fewer than two samples (the watch interval is ${intervalS} s): give at least ${2 * intervalS}` });
  }
  if (window !== undefined && window * 1000 > ctx.retentionMs) {
    issues.push({ path: 'when.windowSeconds', message: `${window} s is longer than the samples kept (${ctx.retentionMs / 1000} s, HEAPCAP_WATCH_RETENTION)` });
  }
  if (spec.capture?.options?.forceHeadroom === true) {
    issues.push({ path: 'capture.options.forceHeadroom', message: 'a watch rule never forces the headroom gate: it fires near the memory limit, where a forced snapshot can get the target OOM-killed; when the gate refuses, the rule takes a sampling profile instead' });
  }
  if (spec.target !== undefined) {
    const t = ctx.targets.find((x) => x.id === spec.target);
    if (t === undefined) issues.push({ path: 'target', message: `no target "${spec.target}" in the registry (GET /v1/targets lists them)` });
    else if (t.kind === 'chromium' && spec.when.metric === 'rssBytes') {
      issues.push({ path: 'when.metric', message: `rssBytes is read inside Node.js targets only; "${t.id}" is a Chromium target: use heapUsedRatio or heapUsedBytes` });
    }
    if (t?.kind === 'node-pid' && spec.profile !== undefined) {
      // A selector may match node-pid targets too: the watcher skips them (effectiveProfile); one named target is refused here.
      issues.push({ path: 'profile', code: PROFILE_UNSUPPORTED_CODE, message: `${PROFILE_UNSUPPORTED_CODE}: "${t.id}" is a node-pid target, which cannot hold a continuous allocation profile (heapcap opens its inspector for one capture and closes it again): register the process as kind node with --inspect, or remove profile` });
    }
  }
  return issues;
}

/** A new rule id: `wr-` and a lower-case ULID. */
export function newWatchRuleId(now = Date.now()): string {
  return `wr-${newCaptureId(now).toLowerCase()}`;
}

/** The stored rule for a checked spec; a replacement keeps the id, owner and creation time of `existing`. */
export function buildWatchRule(spec: WatchRuleSpec, owner: string, existing: WatchRule | null, now = new Date()): WatchRule {
  const iso = now.toISOString();
  return {
    id: existing?.id ?? spec.id ?? newWatchRuleId(now.getTime()),
    target: spec.target,
    selector: spec.selector,
    when: spec.when,
    cooldownSeconds: spec.cooldownSeconds ?? DEFAULT_COOLDOWN_SECONDS,
    maxPerDay: spec.maxPerDay ?? DEFAULT_MAX_PER_DAY,
    capture: spec.capture ?? {},
    enabled: spec.enabled ?? true,
    reason: spec.reason,
    profile: spec.profile,
    owner: existing?.owner ?? owner,
    createdAt: existing?.createdAt ?? iso,
    updatedAt: iso,
  };
}

/** The targets a rule watches now. */
export function watchedBy(rule: Pick<WatchRule, 'target' | 'selector'>, targets: readonly Target[]): Target[] {
  if (rule.target !== undefined) return targets.filter((t) => t.id === rule.target);
  return rule.selector === undefined ? [] : selectTargets(targets, rule.selector);
}
