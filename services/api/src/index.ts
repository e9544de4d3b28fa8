/** @heapcap/api — the REST API (Fastify): buildApp for tests and composition, startApi to listen. */
export { buildApp, type ApiInstance } from './build.ts';
export { startApi, isLoopback, type RunningApi } from './start.ts';
export { DEFAULT_HTTP, type ApiDeps, type HttpSettings } from './deps.ts';
export type { AuthMode } from './plugins/infra/auth.ts';
export { resolveAuthMode } from './auth/mode.ts';
export { loadTokens, parseTokens, hashToken, type TokenEntry } from './auth/tokens.ts';
export { SCOPES, type Scope, type Principal } from './auth/scopes.ts';
export { API_CLOSE_MS, apiService, prepareAuth, startApiPart } from './service.ts';
export { API_ERROR_STATUS, type ApiErrorCode } from './errors.ts';
export { prepareSlack, type SlackDeps } from './slack-setup.ts';
export { parseSlackUsers, loadSlackUsers, type SlackGrant } from './auth/slack-users.ts';
