/**
 * The read-only answers about schedules and about what grew: `schedules
 * [target]` and `diff <captureA> <captureB>`. Inputs are plain shapes (what the
 * API's schedule views and diffs carry), so this package needs neither the
 * scheduler nor the analysis code.
 */
import type { KnownBlock } from '@slack/types';
import { context, header, section, type SlackMessage } from '../blocks.ts';
import { age, fitLines, size } from '../format.ts';
import { escapeMrkdwn, fit, linkTarget } from '../text.ts';
import { grownSiteLines, topSiteLead, type SiteDeltaLine } from './allocations.ts';
import { ephemeral } from './replies.ts';

/** One schedule as `schedules` shows it. */
export interface ScheduleLine {
  id: string;
  state: 'active' | 'paused';
  target?: string | undefined;
  selector?: Readonly<Record<string, string>> | undefined;
  every?: string | undefined;
  cron?: string | undefined;
  timezone?: string | undefined;
  nextRunAt: string[];
  keepLast: number;
  /** The last capture it made; its status is null once the record is gone (record TTL). */
  lastCapture: { id: string; status: string | null } | null;
}

/** `schedules [target]`: what runs when, and how its last capture ended. */
export function schedulesMessage(schedules: ScheduleLine[], target: string | undefined, nowMs: number = Date.now()): SlackMessage {
  const of = target === undefined ? '' : ` of \`${escapeMrkdwn(target)}\``;
  if (schedules.length === 0) {
    return ephemeral(`No schedules${of}. Create one with \`heapcap schedules create\` or POST /v1/schedules (docs/operations.md, "Scheduled captures and retention").`);
  }
  const lines = schedules.map((s) => {
    const what = s.target !== undefined ? `\`${escapeMrkdwn(s.target)}\`` : `every target with ${escapeMrkdwn(Object.entries(s.selector ?? {}).map(([k, v]) => `${k}=${v}`).join(' '))}`;
    const when = s.every !== undefined ? `every ${s.every}` : `cron \`${escapeMrkdwn(s.cron ?? '')}\`${s.timezone === undefined ? '' : ` (${escapeMrkdwn(s.timezone)})`}`;
    const next = s.state === 'paused' ? 'paused' : s.nextRunAt[0] === undefined ? 'no run due' : `next ${inFuture(s.nextRunAt[0], nowMs)}`;
    const last = s.lastCapture === null ? 'no capture yet' : `last \`${s.lastCapture.id}\` ${s.lastCapture.status ?? '(record gone)'}`;
    return `• \`${escapeMrkdwn(s.id)}\` ${what}, ${when} · ${next} · keep ${s.keepLast} · ${last}`;
  });
  const title = `Schedules${target === undefined ? '' : ` of ${target}`} (${schedules.length})`;
  return ephemeral(`${title}\n${lines.join('\n')}`, [header(title), section(fitLines(lines)), context('Compare two of its captures: `/heapcap diff <captureA> <captureB>`')]);
}

/** One class of a diff (as GET /v1/diff returns it). */
export interface DiffClassLine {
  name: string;
  status: string;
  countDelta: number;
  selfSizeDelta: number;
  retainedSizeDelta?: number | undefined;
}

/** One leak suspect (as GET /v1/diff returns it), its retainer path already formatted (`(root) → .sessions Map → …`). */
export interface DiffSuspectLine {
  rank: number;
  class: string;
  reason: string;
  path: string | null;
  /** Hunts that tracked allocations: `allocated at src/session.js:44 createSession ← …` (allocatedAtLine in @heapcap/analysis). */
  allocatedAt?: string | undefined;
}

/** A diff's suspects: `graph` (holders known) or `summary` (classes only, `note` says why and what to ask for). */
export interface DiffSuspects {
  mode: 'graph' | 'summary';
  note?: string | undefined;
  suspects: DiffSuspectLine[];
  /** `and 7 small changes (21.4 KiB in all)`: growth below the significance rule; null or absent when none. */
  small?: string | null | undefined;
}

/** What `diff` shows: the two sides, the suspects, and the classes, largest growth first. */
export interface DiffView {
  suspects: DiffSuspects;
  base: { captureId: string; createdAt: string };
  head: { captureId: string; createdAt: string };
  targetId: string;
  retained: boolean;
  totalSelfSizeDelta: number;
  nodeCountDelta: number;
  classes: DiffClassLine[];
  /** The console's compare of the two captures (consoleLinks.compare), linked above the suspects. */
  consoleUrl?: string | undefined;
  /** Two snapshots with continuous profiles beside them: GET /v1/diff's `allocations` between those profiles. */
  allocations?: { totalBytesDelta: number; grown: SiteDeltaLine[] } | null | undefined;
}

/** How many growers `diff` lists. */
const TOP = 10;

/** How many suspects `diff` shows (Slack's section is 3,000 characters; the rest are one `heapcap diff` away). */
const TOP_SUSPECTS = 5;

/**
 * The suspects' lines: the reason (who holds what) and, for graph suspects,
 * the path to the holder in a code span. A path can be long: it is cut to
 * keep five suspects inside one section.
 */
export function suspectLines(s: DiffSuspects): string[] {
  // The words of @heapcap/analysis' NOTHING_GREW, as every channel prints them.
  if (s.suspects.length === 0) return [s.small === null || s.small === undefined ? 'No suspects: nothing grew beyond noise.' : `No suspects: nothing grew beyond noise (${escapeMrkdwn(s.small)}).`];
  const lines = s.suspects.slice(0, TOP_SUSPECTS).map((x) => {
    const path = x.path === null ? '' : `\n    \`${escapeMrkdwn(fit(x.path, 400)).replaceAll('`', "'")}\``;
    // A graph suspect's reason names its class already; a summary one's does not.
    const what = x.reason.includes(x.class) ? '' : `\`${escapeMrkdwn(fit(x.class, 200))}\` `;
    const allocated = x.allocatedAt === undefined ? '' : `\n    ${escapeMrkdwn(fit(x.allocatedAt, 300))}`;
    return `*${x.rank}.* ${what}${escapeMrkdwn(fit(x.reason, 600))}${path}${allocated}`;
  });
  return s.small === null || s.small === undefined ? lines : [...lines, `_${escapeMrkdwn(s.small)}_`];
}

/** The suspects' heading: graph suspects say what they rank by; summary-only ones say so and why. */
export function suspectsHeading(s: DiffSuspects): string {
  return s.mode === 'graph' ? '*Suspects*, largest new retained memory first:' : `*Suspects (summary-only, no holders)*: ${escapeMrkdwn(fit(s.note ?? 'analyse both captures for holders', 600))}`;
}

/** `diff A B`: the suspects first (who holds the new memory), then the top growers, with count and size deltas. */
export function diffMessage(view: DiffView, nowMs: number = Date.now()): SlackMessage {
  const growers = view.classes.filter((c) => c.selfSizeDelta > 0 || c.countDelta > 0).slice(0, TOP);
  const title = `What grew in ${view.targetId}`;
  const span = `\`${view.base.captureId}\` (${age(view.base.createdAt, nowMs)}) → \`${view.head.captureId}\` (${age(view.head.createdAt, nowMs)})`;
  const total = `heap ${signedSize(view.totalSelfSizeDelta)}, ${signedCount(view.nodeCountDelta)} objects`;
  const lines = growers.map((c) => {
    const retained = c.retainedSizeDelta === undefined ? '' : ` · retained ${signedSize(c.retainedSizeDelta)}`;
    return `• \`${escapeMrkdwn(c.name)}\` ${signedCount(c.countDelta)} · ${signedSize(c.selfSizeDelta)}${retained}${c.status === 'new' ? ' · new' : ''}`;
  });
  const body = lines.length === 0 ? 'Nothing grew between these two captures.' : lines.join('\n');
  const note = view.retained ? 'Retained sizes from both captures’ analyses.' : 'Self sizes; for retained sizes analyse both captures (POST /v1/captures/<id>/analysis).';
  const suspects = [suspectsHeading(view.suspects), ...suspectLines(view.suspects)];
  // The profiles beside the snapshots: which code allocated what grew, the top site first.
  const sites = view.allocations === null || view.allocations === undefined ? null : view.allocations.grown;
  const allocations = sites === null ? null : ['*Allocation sites* (profiles beside the snapshots), largest growth first:', ...(sites.length === 0 ? ['No allocation site grew between their profiles.'] : grownSiteLines(sites))];
  const blocks: KnownBlock[] = [
    header(title),
    section(`${span}\n${total}`),
    ...(view.consoleUrl === undefined ? [] : [section(`:mag: <${linkTarget(view.consoleUrl)}|Open the compare in the console>: suspects first, every class sortable.`)]),
    section(fitLines(suspects)),
    ...(allocations === null ? [] : [section(fitLines(allocations))]),
    section(fitLines(['*Classes*, largest growth first:', ...body.split('\n')])),
    context(note, 'All suspects and classes: `heapcap diff <captureA> <captureB>` or GET /v1/diff'),
  ];
  // The notification text leads with the first suspect: what a phone shows is who holds the memory.
  const first = view.suspects.suspects[0];
  const lead = first === undefined ? '' : `\n#1 suspect: ${fit(`${first.class} ${first.reason}`, 600)}`;
  return ephemeral(`${title}: ${span}, ${total}${lead}${sites === null ? '' : topSiteLead(sites)}\n${body}`, blocks);
}

function signedSize(bytes: number): string {
  return `${bytes < 0 ? '−' : '+'}${size(Math.abs(bytes))}`;
}

function signedCount(n: number): string {
  return `${n < 0 ? '−' : '+'}${Math.abs(n).toLocaleString('en-US')}`;
}

function inFuture(iso: string, nowMs: number): string {
  const s = Math.round((Date.parse(iso) - nowMs) / 1_000);
  if (s < 60) return 'in under a minute';
  if (s < 3_600) return `in ${Math.round(s / 60)} min`;
  return `in ${(s / 3_600).toFixed(1)} h`;
}
