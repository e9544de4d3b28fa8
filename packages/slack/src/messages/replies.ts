/**
 * The ephemeral replies of `/heapcap`: acknowledgements, help, refusals,
 * mistakes and read-only answers. Each says what happened and what to type
 * next; nothing here is shown to anyone but the person who typed the command.
 */
import type { KnownBlock } from '@slack/types';
import type { CaptureRecord, RegisteredTarget } from '@heapcap/state';
import { context, header, section, type SlackMessage } from '../blocks.ts';
import { USAGE, VERBS, type Verb } from '../command.ts';
import { age, size } from '../format.ts';
import { escapeMrkdwn, fit } from '../text.ts';
import { whoMrkdwn } from '../who.ts';
import { statusPhrase } from './result.ts';

/** An ephemeral reply. */
export function ephemeral(text: string, blocks: KnownBlock[] = [section(text)]): SlackMessage {
  return { response_type: 'ephemeral', text: fit(withoutBold(text), 3_000), blocks };
}

/** The notification text without mrkdwn bold markers; `code` (a cron's `*`, say) is kept as typed. */
function withoutBold(text: string): string {
  return text
    .split('`')
    .map((part, i) => (i % 2 === 1 ? part : part.replace(/\*/g, '')))
    .join('`');
}

const DESCRIBE: Record<Verb, string> = {
  capture: 'take a heap snapshot now; the result is posted in this channel when it ends',
  status: 'where a capture is, or how it ended',
  list: 'the last 10 captures (of one target)',
  targets: 'what may be captured',
  schedules: 'periodic captures (of one target)',
  diff: 'compare two snapshots',
  hunt: 'hunt a leak: three snapshots an interval apart (default 60s), then what survived, suspects first; `hunt <huntId>` shows it',
  help: 'this message',
};

/** The help text, with the caller's targets when they may capture. */
export function helpMessage(command: string, note?: string): SlackMessage {
  const lines = VERBS.map((v) => `\`${command} ${USAGE[v]}\` — ${DESCRIBE[v]}`);
  const blocks: KnownBlock[] = [];
  if (note !== undefined) blocks.push(section(note));
  blocks.push(section(`*heapcap* takes V8 heap snapshots of registered Node.js and Chromium targets.\n${lines.join('\n')}`));
  blocks.push(context(`Example: \`${command} capture checkout-api "p99 climbing since 02:10"\``));
  return ephemeral(`${note === undefined ? '' : `${note}\n`}heapcap commands: ${VERBS.join(', ')}`, blocks);
}

/** `a`, `b` and `c` as inline code, at most `max` of them. */
function idList(ids: string[], max = 40): string {
  const shown = ids.slice(0, max).map((id) => `\`${id}\``).join(', ');
  return ids.length > max ? `${shown} and ${ids.length - max} more` : shown;
}

/** The closest few target ids to a mistyped one (case-insensitive, then by edit distance ≤ 3). */
export function closest(word: string, ids: string[]): string[] {
  const w = word.toLowerCase();
  const scored = ids.map((id) => ({ id, d: distance(w, id.toLowerCase()) })).filter((s) => s.d <= Math.min(3, Math.max(1, Math.floor(w.length / 3))));
  return scored.sort((a, b) => a.d - b.d || a.id.localeCompare(b.id)).slice(0, 3).map((s) => s.id);
}

/** Levenshtein distance (ids are short: a plain table is fine). */
function distance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) cur[j] = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    prev = cur;
  }
  return prev[b.length]!;
}

/** What the caller may capture, as a line. */
export function targetsLine(ids: string[], mayCapture: boolean): string {
  if (!mayCapture) return 'You may not start captures (that needs the `captures:write` scope).';
  if (ids.length === 0) return 'No targets are registered yet: an admin adds them to the targets file (HEAPCAP_TARGETS_FILE).';
  return `Targets you may capture: ${idList(ids)}`;
}

/** A verb heapcap does not know. */
export function unknownCommandMessage(command: string, word: string, targetIds: string[], mayCapture: boolean): SlackMessage {
  const isTarget = targetIds.includes(word);
  const hint = isTarget ? ` Did you mean \`${command} capture ${word}\`?` : '';
  return helpMessage(command, `:thinking_face: I don't know \`${escapeMrkdwn(fit(word, 60))}\`.${hint}\n${targetsLine(targetIds, mayCapture)}`);
}

/** A known verb with arguments it cannot use. */
export function usageMessage(command: string, verb: Verb, problem: string, targetIds: string[], mayCapture: boolean): SlackMessage {
  const extra = verb === 'capture' || verb === 'list' || verb === 'schedules' ? `\n${targetsLine(targetIds, mayCapture)}` : '';
  return ephemeral(`:pencil2: \`${command} ${USAGE[verb]}\`: ${problem}${extra}`);
}

/** A target that is not registered. */
export function unknownTargetMessage(target: string, targetIds: string[], mayCapture: boolean): SlackMessage {
  const near = closest(target, targetIds);
  const guess = near.length > 0 ? ` Did you mean ${idList(near)}?` : '';
  return ephemeral(`:mag: There is no target \`${escapeMrkdwn(target)}\`.${guess}\n${targetsLine(targetIds, mayCapture)}`);
}

/** The caller lacks the scope a command needs. */
export function refusalMessage(who: { userId: string; teamId: string }, verb: string, scope: string): SlackMessage {
  return ephemeral(
    `:lock: Sorry <@${who.userId}>, \`${verb}\` needs the \`${scope}\` scope, which your Slack user does not have here. ` +
      `A heapcap admin can grant it in the Slack users file (HEAPCAP_SLACK_USERS_FILE): your user is \`${who.userId}\` in team \`${who.teamId}\`.`,
  );
}

/** A feature of a later heapcap. */
export function notAvailableMessage(verb: string, what: string): SlackMessage {
  return ephemeral(`:construction: \`${verb}\` is not available yet in this heapcap (${what}).`);
}

/** The backing store did not answer; nothing was done. */
export function unavailableMessage(what: string): SlackMessage {
  return ephemeral(`:warning: heapcap could not ${what}: its queue (Redis) did not answer. Nothing was started; try again in a moment.`);
}

/** The acknowledgement of `capture`: started, joined, or the same request seen before. */
export function captureAckMessage(input: {
  record: CaptureRecord;
  outcome: 'created' | 'coalesced' | 'replayed';
  /** Characters typed and kept, when the reason was cut to fit the record. */
  truncated: { from: number; kept: number } | undefined;
  replyArranged: boolean;
}): SlackMessage {
  const { record, outcome } = input;
  const id = `\`${record.id}\``;
  const lines: string[] = [];
  if (outcome === 'coalesced') {
    lines.push(`:link: \`${record.targetId}\` is already being captured (${id}, asked by ${whoMrkdwn(record.trigger)} ${age(record.createdAt)}, ${statusPhrase(record)}). You joined that capture instead of starting a second one.`);
  } else if (outcome === 'replayed') {
    lines.push(`:repeat: This request was already received: capture ${id} of \`${record.targetId}\` is ${statusPhrase(record)}.`);
  } else {
    lines.push(`:camera_with_flash: Capture ${id} of \`${record.targetId}\` is queued.`);
  }
  lines.push(input.replyArranged ? 'The result will be posted in this channel when it ends.' : `:warning: I could not arrange to post the result here; follow it with \`/heapcap status ${record.id}\`.`);
  const blocks: KnownBlock[] = [section(lines.join('\n'))];
  if (input.truncated !== undefined) {
    const n = (x: number): string => x.toLocaleString('en-US');
    blocks.push(context(`:scissors: Your reason had ${n(input.truncated.from)} characters; the record keeps the first ${n(input.truncated.kept)} and says it was truncated.`));
  }
  return ephemeral(lines.join('\n'), blocks);
}

/** `list`: the last captures, newest first. */
export function listMessage(records: CaptureRecord[], target: string | undefined, nowMs: number = Date.now()): SlackMessage {
  const title = `Last ${records.length} capture${records.length === 1 ? '' : 's'}${target === undefined ? '' : ` of ${target}`}`;
  if (records.length === 0) return ephemeral(`No captures${target === undefined ? '' : ` of \`${escapeMrkdwn(target)}\``} yet.`);
  const lines = records.map((r) => {
    const sized = r.artifact === null ? '' : ` · ${size(r.artifact.bytesUncompressed)}`;
    const why = r.trigger.reason === undefined ? '' : ` · “${escapeMrkdwn(fit(r.trigger.reason, 80))}”`;
    return `• \`${r.id}\` \`${r.targetId}\` ${statusPhrase(r)}${sized} · ${age(r.createdAt, nowMs)} · ${whoMrkdwn(r.trigger)}${why}`;
  });
  return ephemeral(`${title}\n${lines.join('\n')}`, [header(title), section(lines.join('\n')), context('Details: `/heapcap status <captureId>`')]);
}

/** `targets`: the registry, as much of it as fits in one message. */
export function targetsMessage(targets: RegisteredTarget[], mayCapture: boolean): SlackMessage {
  if (targets.length === 0) return ephemeral(targetsLine([], mayCapture));
  const lines: string[] = [];
  let used = 0;
  for (const { target } of targets) {
    const labels = Object.entries(target.labels).map(([k, v]) => `${k}=${v}`).join(' ');
    const line = `• \`${target.id}\` ${target.kind}${labels === '' ? '' : ` · ${escapeMrkdwn(labels)}`}`;
    // One section holds 3,000 characters; the rest is counted, not shown.
    if (used + line.length + 1 > 2_800) break;
    lines.push(line);
    used += line.length + 1;
  }
  const more = targets.length - lines.length;
  const blocks: KnownBlock[] = [header(`Targets (${targets.length})`), section(lines.join('\n'))];
  const notes = [mayCapture ? 'Capture one: `/heapcap capture <target> [reason]`' : 'You may not start captures (that needs `captures:write`).'];
  if (more > 0) notes.push(`${more} more not shown: GET /v1/targets lists them all.`);
  blocks.push(context(...notes));
  return ephemeral(`Targets: ${targets.map((t) => t.target.id).join(', ')}`, blocks);
}
