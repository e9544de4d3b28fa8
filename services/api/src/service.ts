/** The API as a service part: auth resolved before anything connects, the server closed first on shutdown. */
import type { HeapcapConfig } from '@heapcap/config';
import { StartupError, type ServiceContext, type ServiceDefinition } from '@heapcap/service';
import { resolveAuthMode } from './auth/mode.ts';
import type { AuthMode } from './plugins/infra/auth.ts';
import { prepareSlack } from './slack-setup.ts';
import { isLoopback, startApi, type RunningApi } from './start.ts';

/** In-flight requests (a `?wait=` can take minutes) get this long at shutdown, then their connections are cut. */
export const API_CLOSE_MS = 10_000;

/** The auth mode for `config`, or a StartupError saying how to fix it. */
export async function prepareAuth(config: HeapcapConfig, options: { dev: boolean }): Promise<AuthMode> {
  let auth: AuthMode;
  try {
    auth = await resolveAuthMode(config, options);
  } catch (err) {
    throw new StartupError('refused', (err as Error).message, { cause: err });
  }
  if (auth.kind === 'dev' && !isLoopback(config.host)) {
    throw new StartupError('refused', `--dev only binds to loopback, but HEAPCAP_HOST is ${config.host}`);
  }
  return auth;
}

/** Listen with the API in `ctx`; registers its close (stop accepting, finish or cut in-flight requests). */
export async function startApiPart(ctx: ServiceContext, auth: AuthMode): Promise<RunningApi> {
  const slack = await prepareSlack(ctx.config, ctx.queue, ctx.log);
  // Registered first, so it closes after the API (parts close in reverse order).
  if (slack !== undefined) ctx.onClose({ name: 'slack replies', close: () => slack.replies.close(), timeoutMs: 2_000 });
  const api = await startApi(ctx.config, { queue: ctx.queue, sink: ctx.store, auth, logger: ctx.log, slack, rulesFile: ctx.rulesFile });
  ctx.onClose({ name: 'api', close: () => api.close(API_CLOSE_MS), timeoutMs: API_CLOSE_MS + 2_000 });
  return api;
}

/** The API process alone. */
export function apiService(options: { dev: boolean }): ServiceDefinition<AuthMode> {
  return {
    name: 'api',
    prepare: (config) => prepareAuth(config, options),
    async start(ctx, auth) {
      const api = await startApiPart(ctx, auth);
      ctx.stderr.write(`heapcap serving on ${api.url} (api only; ${auth.kind === 'dev' ? 'NO AUTH' : 'bearer tokens'}); Ctrl-C to stop\n`);
    },
  };
}
