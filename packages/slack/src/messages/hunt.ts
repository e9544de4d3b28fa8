/**
 * `hunt <target> [interval] [--no-allocations]` and `hunt <huntId>`: a leak hunt started from
 * Slack, and its state or its suspects once it ended. The suspects come as
 * plain lines (paths formatted by the API), as a diff's do, so this package
 * needs no analysis code.
 */
import type { KnownBlock } from '@slack/types';
import type { LeakHuntRecord } from '@heapcap/state';
import { context, header, section, type SlackMessage } from '../blocks.ts';
import { fitLines, size } from '../format.ts';
import { escapeMrkdwn, fit, linkTarget } from '../text.ts';
import { suspectLines, suspectsHeading, type DiffSuspects } from './analysis.ts';
import { ephemeral } from './replies.ts';

/** The reply to `hunt <target>`: started (or failed at once), and how to follow it. */
export function huntStartedMessage(command: string, hunt: LeakHuntRecord, consoleUrl?: string): SlackMessage {
  if (hunt.status === 'failed') return huntMessage(command, hunt, null, consoleUrl);
  const s = Math.round(hunt.intervalMs / 1000);
  return ephemeral(
    `:mag: Leak hunt \`${hunt.id}\` of \`${escapeMrkdwn(hunt.targetId)}\` started: three snapshots ${s} s apart on one inspector session, then what survived. ` +
      // As `heapcap hunt` warns: tracking cost the bench's busy target 0.09x its requests/s (bench/hunt-tracking.ts).
      (hunt.allocations === false
        ? 'Allocation tracking is off (`--no-allocations`): its suspects will not say where they were allocated. '
        : 'It tracks allocations from the baseline to the target snapshot, so its suspects say where they were allocated; that slows a busy target meanwhile (`--no-allocations` turns it off). ') +
      `See it with \`${command} hunt ${hunt.id}\` (in about ${Math.ceil((2 * s + 30) / 60)} min)${consoleLine(consoleUrl)}.`,
  );
}

/** `, or follow it live in the console: <link>` when the console's page of the hunt is known. */
function consoleLine(url: string | undefined): string {
  return url === undefined ? '' : `, or follow it live in the console: <${linkTarget(url)}|the hunt's page>`;
}

/** A hunt's report as this message shows it: the suspects, and the classes' names and counts. */
export interface HuntReportView {
  suspects: DiffSuspects;
  classes: { name: string; count: number; selfSize: number }[];
  survivingCount: number;
  createdCount: number;
}

/** `hunt <huntId>`: where it is, why it failed, or its suspects first. */
export function huntMessage(command: string, hunt: LeakHuntRecord, report: HuntReportView | null, consoleUrl?: string): SlackMessage {
  const title = `Leak hunt of ${hunt.targetId}`;
  const id = `\`${hunt.id}\``;
  if (hunt.status === 'queued' || hunt.status === 'running') {
    return ephemeral(`:hourglass_flowing_sand: Leak hunt ${id} is ${hunt.status}${hunt.phase === null ? '' : ` (${escapeMrkdwn(hunt.phase)})`}; ${hunt.snapshots.length} of 3 snapshots taken. Ask again with \`${command} hunt ${hunt.id}\`${consoleLine(consoleUrl)}.`);
  }
  if (hunt.status === 'failed') {
    const e = hunt.error;
    const hint = e?.hint === undefined ? '' : `\n${escapeMrkdwn(fit(e.hint, 800))}`;
    return ephemeral(`:warning: Leak hunt ${id} failed${hunt.phase === null ? '' : ` in ${escapeMrkdwn(hunt.phase)}`}: \`${escapeMrkdwn(e?.code ?? 'internal')}\` ${escapeMrkdwn(fit(e?.message ?? '', 1200))}${hint}`);
  }
  if (report === null) return ephemeral(`Leak hunt ${id} succeeded, but its report is gone (reports are kept with the captures' artifacts).`);
  const classes = report.classes.slice(0, 5).map((c) => `• \`${escapeMrkdwn(fit(c.name, 200))}\` ${c.count.toLocaleString('en-US')} (${size(c.selfSize)})`);
  const blocks: KnownBlock[] = [
    header(title),
    ...(consoleUrl === undefined ? [] : [section(`:mag: <${linkTarget(consoleUrl)}|Open the report in the console>: suspect #1 first, with its retainer path.`)]),
    section(`${id}: ${report.survivingCount.toLocaleString('en-US')} of ${report.createdCount.toLocaleString('en-US')} objects created between the first two snapshots are still alive in the third.`),
    section(fitLines([suspectsHeading(report.suspects).replace('largest new retained memory first', 'largest surviving new memory first'), ...suspectLines(report.suspects)])),
    section(fitLines(['*Classes*, largest surviving self size first:', ...(classes.length === 0 ? ['none'] : classes)])),
    context(`The whole report: \`heapcap hunt\` --json, or GET /v1/leak-hunts/${hunt.id}`),
  ];
  const first = report.suspects.suspects[0];
  return ephemeral(`${title}: ${first === undefined ? 'nothing created between the first two snapshots survived' : `#1 suspect: ${fit(`${first.class} ${first.reason}`, 600)}`}`, blocks);
}
