/**
 * `diff <captureA> <captureB>` of two allocation sampling profiles: the code
 * whose live allocations grew, the top site first (what a phone shows).
 * Plain shapes in, as GET /v1/diff's `allocations` carries them.
 */
import { context, header, section, type SlackMessage } from '../blocks.ts';
import { age, fitLines, size } from '../format.ts';
import { escapeMrkdwn, fit } from '../text.ts';
import { ephemeral } from './replies.ts';

/** One allocation site's growth. */
export interface SiteDeltaLine {
  functionName: string;
  url: string;
  line: number;
  column: number;
  baseBytes: number;
  headBytes: number;
  bytesDelta: number;
}

/** The two profiles compared and their growth by site. */
export interface AllocationDiffView {
  targetId: string;
  base: { captureId: string; createdAt: string };
  head: { captureId: string; createdAt: string };
  totalBytesDelta: number;
  grown: SiteDeltaLine[];
}

const TOP = 5;

/** `createSession /srv/app/session.js:22:23`: where a site's function is (V8 names functions, not statements). */
function siteText(s: SiteDeltaLine): string {
  const name = s.functionName === '' ? '(anonymous)' : s.functionName;
  return `${name}${s.url === '' ? '' : ` ${s.url}${s.line > 0 ? `:${s.line}:${s.column}` : ''}`}`;
}

function signedSize(bytes: number): string {
  return `${bytes < 0 ? '−' : '+'}${size(Math.abs(bytes))}`;
}

/** The top grown sites as bullet lines (at most five), or `[]` when none grew. */
export function grownSiteLines(grown: SiteDeltaLine[]): string[] {
  return grown.slice(0, TOP).map((s) => `• ${signedSize(s.bytesDelta)} \`${escapeMrkdwn(fit(siteText(s), 300))}\` (${size(s.baseBytes)} → ${size(s.headBytes)})`);
}

/** The notification text's line for the top grown site (`\nTop grown site: …`), empty when none grew. */
export function topSiteLead(grown: SiteDeltaLine[]): string {
  const top = grown[0];
  return top === undefined ? '' : `\nTop grown site: ${fit(siteText(top), 300)} ${signedSize(top.bytesDelta)}`;
}

/** What grew by allocation site, the top site in the notification text. */
export function allocationDiffMessage(view: AllocationDiffView, nowMs: number = Date.now()): SlackMessage {
  const title = `Where ${view.targetId}'s live allocations grew`;
  const span = `\`${view.base.captureId}\` (${age(view.base.createdAt, nowMs)}) → \`${view.head.captureId}\` (${age(view.head.createdAt, nowMs)})`;
  const total = `sampled live bytes ${signedSize(view.totalBytesDelta)}`;
  const lines = grownSiteLines(view.grown);
  const body = lines.length === 0 ? 'No allocation site grew between these two profiles.' : lines.join('\n');
  const lead = topSiteLead(view.grown);
  return ephemeral(`${title}: ${span}, ${total}${lead}\n${body}`, [
    header(title),
    section(`${span}\n${total}`),
    section(fitLines(['*Allocation sites*, largest growth first:', ...body.split('\n')])),
    context('Sampled: small objects statistically, nothing allocated before sampling started. All sites: `heapcap diff <captureA> <captureB>` or GET /v1/diff'),
  ]);
}
