/**
 * @heapcap/slack — `/heapcap` in Slack, the parts shared by the API (which
 * answers Slack's requests) and the worker (which posts results):
 *
 *   verifySlackSignature(secret, { timestamp, signature, rawBody })  → { ok } | { ok: false, reason }
 *   parseCommand(text)                                               → SlackCommand
 *   captureMessage(record, link, { inChannel }) · helpMessage(…) · …  → SlackMessage (Block Kit, within limits)
 *   checkMessage(message)                                            → Slack limit violations
 *   new SlackReplies(queue, retry).arrange(job)                      → reply job (API side)
 *   new SlackDelivery(deps).start() / close()                        → posts results (worker side)
 *   SlackWebApi                                                      → chat.postMessage, usergroups.users.list
 */
export { verifySlackSignature, signSlackRequest, SIGNATURE_TOLERANCE_S, type SignatureCheck, type SignatureFailure, type SignedRequest } from './signature.ts';
export { parseCommand, MAX_REASON, USAGE, VERBS, type SlackCommand, type Verb } from './command.ts';
export { checkMessage, deliverable, LIMITS, type SlackMessage } from './blocks.ts';
export { escapeMrkdwn, decodeSlackText, fit, graphemeLength, linkTarget } from './text.ts';
export { size, duration, age, timingsTable } from './format.ts';
export { slackWho, slackUserOf, whoMrkdwn } from './who.ts';
export { huntMessage, huntStartedMessage, type HuntReportView } from './messages/hunt.ts';
export { allocationDiffMessage, type AllocationDiffView, type SiteDeltaLine } from './messages/allocations.ts';
export { diffMessage, schedulesMessage, suspectLines, suspectsHeading, type DiffClassLine, type DiffSuspectLine, type DiffSuspects, type DiffView, type ScheduleLine } from './messages/analysis.ts';
export { captureMessage, statusPhrase, CAPTURE_AGAIN_ACTION, type CaptureConsoleLinks, type ResultLink } from './messages/result.ts';
export {
  captureAckMessage,
  closest,
  ephemeral,
  helpMessage,
  listMessage,
  notAvailableMessage,
  refusalMessage,
  targetsMessage,
  unavailableMessage,
  unknownCommandMessage,
  unknownTargetMessage,
  usageMessage,
} from './messages/replies.ts';
export { artifactLink, apiArtifactUrl, captureConsoleLinks, type LinkSettings } from './links.ts';
export { SlackReplies, SlackReplyJobSchema, SLACK_QUEUE, SLACK_REPLY_JOB, DEFAULT_REPLY_ATTEMPTS, type SlackReplyJob, type ReplyRetry } from './replies.ts';
export { postToResponseUrl, responseUrlRefusal, ResponseUrlBudget, responseUrlBudget, RESPONSE_URL_MAX_POSTS, RESPONSE_URL_WINDOW_MS, type PostOutcome, type PostOptions } from './response-url.ts';
export { SlackWebApi, describeWebApiError } from './web-api.ts';
export { SlackDelivery, DEFAULT_DELIVERY_TUNING, type DeliveryTuning, type SlackDeliveryDeps } from './delivery.ts';
export { deliveryFromConfig, linkSettingsOf, repliesFromConfig, webApiOf } from './from-config.ts';
