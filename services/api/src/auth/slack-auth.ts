/**
 * Who a Slack user is to heapcap: the union of the scopes of every grant of
 * the Slack users file that names them (directly, by "*", or through a user
 * group). Group membership is asked of Slack (usergroups.users.list) only when
 * it could add a scope, and kept for a minute: a rota change takes effect
 * within a minute, and a burst of commands costs one call per group.
 */
import type { Principal, Scope } from './scopes.ts';
import type { SlackGrant } from './slack-users.ts';

/** The Slack user behind a request, as Slack's payload names them. */
export interface SlackCaller {
  teamId: string;
  /** Enterprise Grid org id, when the workspace belongs to one. */
  enterpriseId?: string | undefined;
  userId: string;
  /** Display handle from the payload (audit only; never used to decide). */
  userName?: string | undefined;
}

/** The caller's principal, the grants that gave it, and why groups could not be checked (if so). */
export interface SlackAuthorization {
  principal: Principal;
  grants: string[];
  groupsError: string | undefined;
}

/** Members of a user group (Slack's Web API). */
export type GroupMembers = (groupId: string, teamId: string) => Promise<string[]>;

/** How long a group's member list is trusted. */
export const GROUP_CACHE_MS = 60_000;

/** Decides the scopes of Slack callers from the grants. */
export class SlackAuthorizer {
  readonly #grants: readonly SlackGrant[];
  readonly #members: GroupMembers | undefined;
  readonly #cacheMs: number;
  readonly #cache = new Map<string, { at: number; members: Promise<ReadonlySet<string>> }>();

  constructor(grants: readonly SlackGrant[], members: GroupMembers | undefined, cacheMs = GROUP_CACHE_MS) {
    this.#grants = grants;
    this.#members = members;
    this.#cacheMs = cacheMs;
  }

  /** True when a grant names user groups (then a bot token is needed to resolve them). */
  get usesGroups(): boolean {
    return this.#grants.some((g) => g.groups.length > 0);
  }

  #groupMembers(groupId: string, teamId: string): Promise<ReadonlySet<string>> {
    const key = `${teamId}/${groupId}`;
    const hit = this.#cache.get(key);
    if (hit !== undefined && Date.now() - hit.at < this.#cacheMs) return hit.members;
    if (this.#members === undefined) return Promise.reject(new Error('no bot token (HEAPCAP_SLACK_BOT_TOKEN) to look up user groups'));
    const members = this.#members(groupId, teamId).then((ids) => new Set(ids));
    this.#cache.set(key, { at: Date.now(), members });
    // A failed lookup is not cached: the next command asks again.
    members.catch(() => this.#cache.delete(key));
    return members;
  }

  /** The caller's scopes (empty when no grant names them). */
  async authorize(caller: SlackCaller): Promise<SlackAuthorization> {
    const scopes = new Set<Scope>();
    const grants: string[] = [];
    let groupsError: string | undefined;
    const inTeam = this.#grants.filter((g) => g.team === caller.teamId || (caller.enterpriseId !== undefined && g.team === caller.enterpriseId));
    const give = (g: SlackGrant): void => {
      grants.push(g.name);
      for (const s of g.scopes) scopes.add(s);
    };
    const pending: SlackGrant[] = [];
    for (const g of inTeam) {
      if (g.users.includes('*') || g.users.includes(caller.userId)) give(g);
      else if (g.groups.length > 0) pending.push(g);
    }
    for (const g of pending) {
      if (g.scopes.every((s) => scopes.has(s))) continue;
      for (const group of g.groups) {
        try {
          if ((await this.#groupMembers(group, caller.teamId)).has(caller.userId)) {
            give(g);
            break;
          }
        } catch (err) {
          groupsError ??= err instanceof Error ? err.message : String(err);
        }
      }
    }
    return { principal: { name: `slack:${caller.teamId}/${caller.userId}`, scopes }, grants, groupsError };
  }
}
