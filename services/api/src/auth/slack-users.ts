/**
 * The Slack users file (HEAPCAP_SLACK_USERS_FILE, YAML or JSON): which Slack
 * users and user groups of which workspace hold which scopes. The same scopes
 * as API tokens, so `/heapcap capture` needs exactly what `POST /v1/captures`
 * needs. A file of its own rather than a section of the tokens file: the
 * tokens file holds secrets' hashes and is rotated with them; this one holds
 * ids an incident lead edits when the rota changes.
 *
 *   grants:
 *     - name: payments-oncall            # shown in logs and the audit log
 *       team: T0123ABCD                  # workspace id (or an Enterprise Grid org id)
 *       users: [U0123ABCD, U0456EFGH]    # "*": everyone in that team
 *       groups: [S0789IJKL]              # user groups (needs a bot token with usergroups:read)
 *       scopes: [captures:read, captures:write, artifacts:read]
 */
import { assertUniqueNames, loadConfigFile, parseConfigText } from '@heapcap/config';
import { z } from 'zod';
import { SCOPES, type Scope } from './scopes.ts';

const SlackId = (example: string) => z.string().regex(/^[A-Z0-9]{2,32}$/, `a Slack id in capitals, e.g. ${example}`);

const GrantSchema = z
  .strictObject({
    name: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._@:-]{0,99}$/, 'letters, digits, ".", "_", "@", ":" or "-" (max 100)'),
    team: SlackId('T0123ABCD'),
    users: z.array(z.union([SlackId('U0123ABCD'), z.literal('*')])).default([]),
    groups: z.array(SlackId('S0123ABCD')).default([]),
    scopes: z.array(z.enum(SCOPES)).min(1),
  })
  .refine((g) => g.users.length + g.groups.length > 0, { message: 'a grant needs users or groups (or users: ["*"] for the whole team)' });

const SlackUsersFileSchema = z.strictObject({ grants: z.array(GrantSchema).min(1) });

/** One grant of the file. */
export type SlackGrant = z.output<typeof GrantSchema> & { scopes: Scope[] };

/** Parses the text of a Slack users file; ConfigFileError names the file and each bad entry. */
export function parseSlackUsers(text: string, file = 'Slack users file'): SlackGrant[] {
  return grantsOf(parseConfigText(text, SlackUsersFileSchema, file), file);
}

/** Reads and parses the Slack users file at `path`. */
export async function loadSlackUsers(path: string): Promise<SlackGrant[]> {
  return grantsOf(await loadConfigFile(path, SlackUsersFileSchema, { what: 'Slack users file' }), path);
}

function grantsOf(parsed: z.output<typeof SlackUsersFileSchema>, file: string): SlackGrant[] {
  assertUniqueNames(file, 'grant name', parsed.grants.map((g) => g.name));
  return parsed.grants;
}
