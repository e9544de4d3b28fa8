/**
 * The API's Slack dependencies, prepared at start-up from the configuration:
 * nothing when HEAPCAP_SLACK_SIGNING_SECRET is unset (the endpoints are not
 * mounted), otherwise the users file (required: without it nobody could use
 * `/heapcap`), the bot's Web API client when a token is set, and the producer
 * of reply jobs. Mistakes stop the start with a message naming the variable.
 */
import type { Logger } from 'pino';
import type { HeapcapConfig } from '@heapcap/config';
import type { HeapcapQueue } from '@heapcap/state';
import { StartupError } from '@heapcap/service';
import { linkSettingsOf, repliesFromConfig, webApiOf, type LinkSettings, type SlackReplies } from '@heapcap/slack';
import { SlackAuthorizer } from './auth/slack-auth.ts';
import { loadSlackUsers } from './auth/slack-users.ts';

/** What the Slack endpoints need. The caller closes `replies`. */
export interface SlackDeps {
  signingSecret: string;
  authorizer: SlackAuthorizer;
  replies: SlackReplies;
  links: LinkSettings;
  /** Origins a response_url may have (HEAPCAP_SLACK_RESPONSE_HOSTS): checked when a request arrives and again before each post. */
  responseOrigins: readonly string[];
}

/** The Slack dependencies for `config`, or undefined when Slack is not configured. Throws StartupError on mistakes. */
export async function prepareSlack(config: HeapcapConfig, queue: HeapcapQueue, log: Logger): Promise<SlackDeps | undefined> {
  const { signingSecret, usersFile } = config.slack;
  if (signingSecret === undefined) {
    if (usersFile !== undefined) log.warn('HEAPCAP_SLACK_USERS_FILE is set but HEAPCAP_SLACK_SIGNING_SECRET is not: the Slack endpoints are off');
    return undefined;
  }
  if (usersFile === undefined) {
    throw new StartupError('invalid_config', 'HEAPCAP_SLACK_SIGNING_SECRET is set but HEAPCAP_SLACK_USERS_FILE is not: nobody could use /heapcap. Write a Slack users file (docs/configuration.md) and point HEAPCAP_SLACK_USERS_FILE at it.');
  }
  // A bad file is a ConfigFileError, which runService reports as the operator's to fix.
  const grants = await loadSlackUsers(usersFile);
  const web = webApiOf(config, log);
  const authorizer = new SlackAuthorizer(grants, web === undefined ? undefined : (group, team) => web.userGroupMembers(group, team));
  if (authorizer.usesGroups && web === undefined) {
    throw new StartupError('invalid_config', `${usersFile} grants scopes to Slack user groups, which heapcap can only resolve with a bot token: set HEAPCAP_SLACK_BOT_TOKEN (scope usergroups:read), or list users instead.`);
  }
  log.info({ grants: grants.length, bot: web !== undefined, links: config.slack.links }, 'slack endpoints enabled');
  return { signingSecret, authorizer, replies: repliesFromConfig(config, queue), links: linkSettingsOf(config), responseOrigins: config.slack.responseOrigins };
}
