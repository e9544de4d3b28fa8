/**
 * A capture as a Slack message: the result posted in the channel when it ends
 * (target, status, who asked and why, phase timings, sizes, the download link,
 * the error and what to check, a "Capture again" button), and the same view
 * for `/heapcap status` while it runs.
 */
import type { KnownBlock } from '@slack/types';
import type { CaptureRecord } from '@heapcap/state';
import { actions, button, codeBlock, context, header, section, type SlackMessage } from '../blocks.ts';
import { duration, fitLines, size, timingsTable } from '../format.ts';
import { escapeMrkdwn, fit, linkTarget, squash } from '../text.ts';
import { whoMrkdwn } from '../who.ts';

/** The `action_id` of the "Capture again" button. */
export const CAPTURE_AGAIN_ACTION = 'heapcap_capture_again';

/** Where to download the snapshot from. */
export interface ResultLink {
  url: string;
  /** `api`: the API's artifact route (needs a token); `presigned`: a storage URL anyone holding it can use until it expires. */
  kind: 'api' | 'presigned';
  expiresInSeconds?: number | undefined;
}

/** A capture's console pages a message links to: the capture, its target's curve, and the compare with the previous capture when there is one. */
export interface CaptureConsoleLinks {
  capture: string;
  target: string;
  compare: string | null;
}

const ICON: Record<CaptureRecord['status'], string> = {
  queued: ':clock3:',
  running: ':hourglass_flowing_sand:',
  succeeded: ':white_check_mark:',
  failed: ':x:',
  cancelled: ':no_entry_sign:',
  expired: ':wastebasket:',
};

/** One-line status: `succeeded in 4.5 s`, `running (serialize)`, `failed: target_closed`. */
export function statusPhrase(record: CaptureRecord): string {
  const total = record.timings?.['total'];
  switch (record.status) {
    case 'succeeded':
      return total === undefined ? 'succeeded' : `succeeded in ${duration(total)}`;
    case 'failed':
      return `failed: \`${escapeMrkdwn(record.error?.code ?? 'unknown')}\``;
    case 'running':
      return record.phase === null ? 'running' : `running (${escapeMrkdwn(record.phase)})`;
    default:
      return record.status;
  }
}

/** Slack's date token: rendered in each reader's time zone, with the ISO time as fallback. */
function slackDate(iso: string): string {
  const s = Math.floor(Date.parse(iso) / 1000);
  return `<!date^${s}^{date_short_pretty} {time_secs}|${iso}>`;
}

function askedBy(record: CaptureRecord): string {
  const joined = record.coalesced > 0 ? ` (+${record.coalesced} joined)` : '';
  const why = record.trigger.reason === undefined ? '' : `\n*Why:* ${escapeMrkdwn(record.trigger.reason)}`;
  return `*Asked by* ${whoMrkdwn(record.trigger)}${joined}${why}`;
}

function facts(record: CaptureRecord): string[] {
  const out = [`*Target*\n\`${record.targetId}\``, `*Status*\n${statusPhrase(record)}`];
  const a = record.artifact;
  if (a !== null) {
    out.push(`*${a.kind === 'sampling-profile' ? 'Sampling profile' : 'Snapshot'}*\n${size(a.bytesUncompressed)}`, `*Stored*\n${size(a.bytesStored)}${a.gzip ? ' (gzip)' : ''}`);
  }
  // The mode the snapshot was stored with (a target's `strings` over a request's `none`); `none` goes unsaid.
  if (record.redaction?.mode === 'strings') out.push(`*Redaction*\nstrings (${record.redaction.redactedStrings ?? 0} values replaced)`);
  out.push(`*Capture*\n\`${record.id}\``);
  const labels = Object.entries(record.labels).map(([k, v]) => `${k}=${v}`);
  if (labels.length > 0) out.push(`*Labels*\n${escapeMrkdwn(labels.join(' '))}`);
  if (record.attempts > 1) out.push(`*Attempts*\n${record.attempts}`);
  return out;
}

/** What the capture takes: a heap snapshot, or an allocation sampling profile (options.kind). */
function kindName(record: CaptureRecord): string {
  return record.options.kind === 'sampling' ? 'sampling profile' : 'heap snapshot';
}

function linkBlocks(record: CaptureRecord, link: ResultLink): KnownBlock[] {
  const sized = record.artifact === null ? '' : ` (${size(record.artifact.bytesUncompressed)} JSON)`;
  // A sampling profile loads in DevTools' Memory tab as `.heapprofile`.
  const profile = record.artifact?.kind === 'sampling-profile';
  const [what, extension] = profile ? ['sampling profile', 'heapprofile'] : ['snapshot', 'heapsnapshot'];
  const note =
    link.kind === 'presigned'
      ? `:warning: Anyone holding this link can download the snapshot until it expires${link.expiresInSeconds === undefined ? '' : ` (in ${duration(link.expiresInSeconds * 1000)})`}; it contains whatever the process held, secrets included.`
      : `Needs a heapcap token with \`artifacts:read\`: \`curl -H "Authorization: Bearer $TOKEN" -o ${record.id}.${extension} '${escapeMrkdwn(link.url)}'\``;
  return [section(`:arrow_down: <${linkTarget(link.url)}|Download the ${what}>${sized}`), context(note)];
}

/** The console's pages of this capture, first where a phone reads: the capture, the compare with the previous one, the target's curve. */
function consoleBlock(record: CaptureRecord, links: CaptureConsoleLinks): KnownBlock {
  const compare = links.compare === null ? '' : ` · <${linkTarget(links.compare)}|Compare with the previous capture>`;
  return section(`:mag: <${linkTarget(links.capture)}|Open the capture in the console>${compare} · <${linkTarget(links.target)}|${escapeMrkdwn(record.targetId)}'s memory curve>`);
}

function errorBlocks(record: CaptureRecord): KnownBlock[] {
  const e = record.error;
  if (e === null || record.status === 'succeeded') return [];
  const where = e.phase === undefined ? '' : ` in phase \`${escapeMrkdwn(e.phase)}\``;
  const settle = e.settle === undefined ? '' : `\nThe target was left to settle: ${e.settle.outcome} after ${duration(e.settle.waitedMs)}.`;
  const blocks: KnownBlock[] = [section(`*Error* \`${escapeMrkdwn(e.code)}\`${where}: ${escapeMrkdwn(e.message)}${settle}`)];
  const check = e.hint ?? 'See "Error codes" in docs/operations.md for what this code means and what to do.';
  if (record.status === 'failed') blocks.push(section(`*What to check:* ${escapeMrkdwn(check)}`));
  return blocks;
}

/**
 * The attempts that failed before the last one, each with its error and when the retry was due: the
 * on-call reader sees that a target refused twice before it answered, or why every attempt failed.
 */
function failedAttemptsBlock(record: CaptureRecord): KnownBlock[] {
  const failed = record.failedAttempts ?? [];
  if (failed.length === 0) return [];
  const lines = failed.map((f) => {
    const where = f.phase === undefined ? '' : ` in \`${escapeMrkdwn(f.phase)}\``;
    const retry = f.nextAttemptAt === null ? '' : `; retried ${duration(Math.max(0, Date.parse(f.nextAttemptAt) - Date.parse(f.failedAt)))} later`;
    return `• attempt ${f.attempt} of ${f.of} failed${where}: \`${escapeMrkdwn(f.code)}\` (${escapeMrkdwn(fit(squash(f.message), 300))})${retry}`;
  });
  return [section(`*Failed attempts*\n${fitLines(lines)}`)];
}

/** The message of a capture: the final result (in channel) or its current state (`status`). */
export function captureMessage(record: CaptureRecord, link: ResultLink | null, options: { inChannel: boolean; console?: CaptureConsoleLinks | undefined }): SlackMessage {
  const blocks: KnownBlock[] = [
    header(`${ICON[record.status]} ${record.targetId}: ${kindName(record)} ${record.status}`),
    section(askedBy(record), facts(record)),
    ...errorBlocks(record),
    ...failedAttemptsBlock(record),
  ];
  if (record.timings !== null && Object.keys(record.timings).length > 0) blocks.push(section(`*Phase timings*\n${codeBlock(timingsTable(record.timings), 2_900)}`));
  if (options.console !== undefined) blocks.push(consoleBlock(record, options.console));
  if (link !== null && record.status === 'succeeded') blocks.push(...linkBlocks(record, link));
  const terminal = record.status === 'succeeded' || record.status === 'failed' || record.status === 'cancelled';
  if (terminal) blocks.push(actions(`heapcap_result_${record.id}`, button('Capture again', CAPTURE_AGAIN_ACTION, record.targetId, record.status === 'succeeded' ? undefined : 'primary')));
  const [verb, when] = record.finishedAt !== null ? ['finished', record.finishedAt] : record.startedAt !== null ? ['started', record.startedAt] : ['asked', record.createdAt];
  blocks.push(context(`heapcap · capture \`${record.id}\` · ${verb} ${slackDate(when)}`));
  const text = `${record.targetId}: ${kindName(record)} ${record.status}${record.artifact === null ? '' : ` (${size(record.artifact.bytesUncompressed)})`}${record.error === null || record.status === 'succeeded' ? '' : ` — ${record.error.code}`}`;
  return { text, blocks, response_type: options.inChannel ? 'in_channel' : 'ephemeral', replace_original: false };
}
