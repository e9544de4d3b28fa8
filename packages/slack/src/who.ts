/**
 * Who asked, as a capture record stores it: `slack:<team>/<user>`. Stable ids,
 * never display names (they change, and are not unique); Slack renders
 * `<@user>` as the person's current name.
 */
import type { Trigger } from '@heapcap/state';
import { escapeMrkdwn } from './text.ts';

/** The `trigger.who` of a Slack user. */
export function slackWho(teamId: string, userId: string): string {
  return `slack:${teamId}/${userId}`;
}

const WHO = /^slack:([A-Z0-9]+)\/([A-Z0-9]+)$/;

/** The Slack user id in a `trigger.who`, or undefined for other triggers. */
export function slackUserOf(who: string): string | undefined {
  return WHO.exec(who)?.[2];
}

/** mrkdwn for who asked: a mention for Slack users, the token or schedule name otherwise. */
export function whoMrkdwn(trigger: Pick<Trigger, 'kind' | 'who'>): string {
  const user = trigger.kind === 'slack' ? slackUserOf(trigger.who) : undefined;
  if (user !== undefined) return `<@${user}>`;
  return `\`${escapeMrkdwn(trigger.who)}\` (${trigger.kind})`;
}
