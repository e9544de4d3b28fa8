/**
 * `/heapcap …` after the signature check: parse, authorize (the same scopes
 * as API tokens), act, and answer with an ephemeral message. A refusal is
 * polite and audited; a mistake gets help with what the caller may do.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { formatPath, smallLine, type Suspects } from '@heapcap/analysis';
import type { HeapcapQueue } from '@heapcap/state';
import type { ArtifactStore } from '@heapcap/storage';
import { consoleLinks } from '@heapcap/config';
import {
  allocationDiffMessage,
  artifactLink,
  captureConsoleLinks,
  captureMessage,
  diffMessage,
  huntMessage,
  huntStartedMessage,
  ephemeral,
  helpMessage,
  listMessage,
  parseCommand,
  refusalMessage,
  schedulesMessage,
  targetsMessage,
  unknownCommandMessage,
  unknownTargetMessage,
  usageMessage,
  type DiffSuspects,
  type ResultLink,
  type SlackMessage,
} from '@heapcap/slack';
import { matchesSelector, type CaptureRecord } from '@heapcap/state';
import { ApiError } from '../../errors.ts';
import type { Scope } from '../../auth/scopes.ts';
import type { SlackDeps } from '../../slack-setup.ts';
import type { SlashCommandBody } from '../../schemas/slack.ts';
import { startSlackCapture, type SlackOrigin } from './slack-capture.ts';

/** What the command handlers use. */
export interface SlackCommandDeps {
  queue: HeapcapQueue;
  slack: SlackDeps;
  store: ArtifactStore;
}

/** The scope each verb needs (help needs none). */
const NEEDS: Record<string, Scope> = {
  capture: 'captures:write',
  status: 'captures:read',
  list: 'captures:read',
  targets: 'captures:read',
  schedules: 'captures:read',
  diff: 'captures:read',
  hunt: 'captures:write',
  huntStatus: 'artifacts:read',
};

/** The Slack origin of a slash command (issued no later than now). */
export function commandOrigin(body: SlashCommandBody, timestampS: number): SlackOrigin {
  return {
    caller: { teamId: body.team_id, enterpriseId: body.enterprise_id, userId: body.user_id, userName: body.user_name },
    channelId: body.channel_id,
    responseUrl: body.response_url,
    issuedAtMs: Math.min(Date.now(), timestampS * 1000),
    triggerId: body.trigger_id,
    via: 'slack',
  };
}

/** Refuse `verb` for lack of `scope`, audited with the Slack user and team. */
export async function refuse(app: FastifyInstance, req: FastifyRequest, origin: SlackOrigin, verb: string, scope: Scope, groupsError: string | undefined, targetId?: string): Promise<SlackMessage> {
  const { caller } = origin;
  await app.audit.record(req, {
    action: 'slack.denied',
    targetId,
    details: { command: verb, requiredScope: scope, via: origin.via, slackTeam: caller.teamId, slackUser: caller.userId, slackChannel: origin.channelId, groupsError },
  });
  const message = refusalMessage({ userId: caller.userId, teamId: caller.teamId }, verb, scope);
  if (groupsError === undefined) return message;
  return ephemeral(`${message.text}\n(Your user groups could not be checked just now: ${groupsError}. Try again in a minute.)`);
}

/** Answer one slash command. */
export async function runCommand(app: FastifyInstance, deps: SlackCommandDeps, req: FastifyRequest, body: SlashCommandBody, origin: SlackOrigin): Promise<SlackMessage> {
  const name = body.command === '' ? '/heapcap' : body.command;
  const command = parseCommand(body.text);
  if (command.kind === 'help') return helpMessage(name);
  const auth = await deps.slack.authorizer.authorize(origin.caller);
  req.principal = auth.principal;
  const may = (s: Scope): boolean => auth.principal.scopes.has(s);
  const { queue } = deps;
  const targetIds = async (): Promise<string[]> => (may('captures:read') || may('captures:write') ? (await queue.targets.list()).map((t) => t.target.id).sort() : []);
  if (command.kind === 'unknown') return unknownCommandMessage(name, command.word, await targetIds(), may('captures:write'));
  if (command.kind === 'usage') return usageMessage(name, command.verb, command.problem, await targetIds(), may('captures:write'));
  const scope = NEEDS[command.kind];
  if (scope !== undefined && !may(scope)) return refuse(app, req, origin, command.kind, scope, auth.groupsError, command.kind === 'capture' || command.kind === 'hunt' ? command.target : undefined);
  switch (command.kind) {
    case 'capture':
      return startSlackCapture(app, { ...deps, targetIds }, req, origin, {
        targetId: command.target,
        reason: command.reason,
        truncated: command.truncated ? { from: command.reasonLength, kept: command.keptLength } : undefined,
      });
    case 'status': {
      const record = await queue.getCapture(command.captureId);
      if (record === null) return ephemeral(`:mag: There is no capture \`${command.captureId}\`. \`${name} list\` shows the recent ones.`);
      const link = may('artifacts:read') ? await statusLink(app, deps, req, record) : null;
      return captureMessage(record, link, { inChannel: false, console: await captureConsoleLinks(queue, deps.slack.links.publicUrl, record) });
    }
    case 'list': {
      const items = (await queue.listCaptures({ targetId: command.target, limit: 10 })).items;
      // A target removed from the registry still has its history; only a name with neither is a mistake.
      if (items.length === 0 && command.target !== undefined && (await queue.targets.get(command.target)) === null) {
        return unknownTargetMessage(command.target, await targetIds(), may('captures:write'));
      }
      return listMessage(items, command.target);
    }
    case 'targets':
      return targetsMessage(await queue.targets.list(), may('captures:write'));
    case 'schedules': {
      let views = await app.schedules.list();
      if (command.target !== undefined) {
        const entry = await queue.targets.get(command.target);
        if (entry === null) return unknownTargetMessage(command.target, await targetIds(), may('captures:write'));
        const labels = entry.target.labels;
        views = views.filter((v) => v.schedule.target === command.target || (v.schedule.selector !== undefined && matchesSelector(labels, v.schedule.selector)));
      }
      return schedulesMessage(
        views.map((v) => ({ ...v.schedule, state: v.state, nextRunAt: v.nextRunAt, keepLast: v.retention.keepLast, lastCapture: v.lastCapture })),
        command.target,
      );
    }
    case 'diff':
      return diffCommand(app, deps, command.a, command.b, name);
    case 'hunt': {
      if ((await queue.targets.get(command.target)) === null) return unknownTargetMessage(command.target, await targetIds(), may('captures:write'));
      // The same path as POST /v1/leak-hunts (audited there); Slack never drives a target (that needs targets:admin and a body).
      const hunt = await app.heapAnalysis.createHunt(req, { targetId: command.target, intervalMs: command.intervalSeconds * 1000, allocations: command.allocations });
      return huntStartedMessage(name, hunt, consoleLinks.hunt(deps.slack.links.publicUrl, hunt.id));
    }
    case 'huntStatus': {
      const found = await queue.leakHunts.get(command.huntId);
      if (found === null) return ephemeral(`:mag: There is no leak hunt \`${command.huntId}\`. Start one with \`${name} hunt <target>\`.`);
      const { hunt, report } = await app.heapAnalysis.hunt(req, command.huntId);
      const view =
        report === null
          ? null
          : {
              suspects: suspectsView(report.suspects ?? { mode: 'summary', note: 'this report predates suspects', suspects: [] }),
              classes: report.classes,
              survivingCount: report.survivingCount,
              createdCount: report.createdCount,
            };
      return huntMessage(name, hunt, view, consoleLinks.hunt(deps.slack.links.publicUrl, hunt.id));
    }
  }
}

/** Suspects as the Slack messages take them: plain lines, each path formatted. */
function suspectsView(s: Suspects): DiffSuspects {
  return { mode: s.mode, note: s.note, small: smallLine(s), suspects: s.suspects.map((x) => ({ rank: x.rank, class: x.class, reason: x.reason, path: x.path === null ? null : (x.shortPath ?? formatPath(x.path)), allocatedAt: x.allocated })) };
}

/** `diff A B`: the same comparison as GET /v1/diff (same target only), or what is missing for it. */
async function diffCommand(app: FastifyInstance, deps: SlackCommandDeps, a: string, b: string, name: string): Promise<SlackMessage> {
  const [base, head] = [await deps.queue.getCapture(a), await deps.queue.getCapture(b)];
  const missing = [base === null ? a : undefined, head === null ? b : undefined].filter((id) => id !== undefined);
  if (base === null || head === null) return ephemeral(`:mag: There is no capture ${missing.map((id) => `\`${id}\``).join(' or ')}. \`${name} list\` shows the recent ones.`);
  try {
    if (app.profiles.has(base) && app.profiles.has(head)) {
      const { allocations } = await app.profiles.diff(base, head, false, 5);
      const of = (r: CaptureRecord): { captureId: string; createdAt: string } => ({ captureId: r.id, createdAt: r.createdAt });
      return allocationDiffMessage({ targetId: head.targetId, base: of(base), head: of(head), totalBytesDelta: allocations.totalBytesDelta, grown: allocations.grown });
    }
    const { diff } = await app.heapAnalysis.diff(base, head, false);
    // As GET /v1/diff: with profiles beside both snapshots, the grown sites, and the suspects naming the one that constructs their class.
    const beside = await app.profiles.beside(base, head, 5, diff.suspects);
    return diffMessage({
      base: { captureId: base.id, createdAt: base.createdAt },
      head: { captureId: head.id, createdAt: head.createdAt },
      targetId: head.targetId,
      retained: diff.retained,
      totalSelfSizeDelta: diff.totalSelfSizeDelta,
      nodeCountDelta: diff.nodeCountDelta,
      classes: diff.classes,
      suspects: suspectsView(beside?.suspects ?? diff.suspects),
      consoleUrl: consoleLinks.compare(deps.slack.links.publicUrl, base.id, head.id),
      allocations: beside?.allocations ?? null,
    });
  } catch (err) {
    // A diff that cannot be made says why (no summary, other targets, no artifact) in the API's words.
    if (err instanceof ApiError) {
      // The API's way round a target mismatch (force=true) does not exist here: say what does.
      const why = err.code === 'target_mismatch' ? `they are captures of two targets (\`${base.targetId}\` and \`${head.targetId}\`); compare two captures of one target (\`${name} list ${head.targetId}\`)` : err.message;
      return ephemeral(`:warning: Cannot compare \`${base.id}\` and \`${head.id}\`: ${why}`);
    }
    throw err;
  }
}

/** The download link for `status`, audited when it is a presigned URL. */
async function statusLink(app: FastifyInstance, deps: SlackCommandDeps, req: FastifyRequest, record: CaptureRecord): Promise<ResultLink | null> {
  const link = await artifactLink(record, deps.slack.links, deps.store);
  if (link?.kind === 'presigned') {
    await app.audit.record(req, { action: 'artifact.presign', targetId: record.targetId, captureId: record.id, details: { via: 'slack', expiresInSeconds: link.expiresInSeconds } });
  }
  return link;
}
