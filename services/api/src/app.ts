/**
 * The API as a Fastify plugin (fastify/demo layout): infrastructure plugins
 * first (errors, auth, 405s, OpenAPI, metrics, rate limit), then the domain services
 * the routes use (audit, readiness, targets, artifacts, captures, schedules,
 * pins, schedule metrics, Slack), then the
 * routes, the console's sessions and its files (/ui) last. Routes only use
 * decorated services, never the queue or sink directly.
 */
import type { FastifyInstance } from 'fastify';
import type { ApiDeps, HttpSettings } from './deps.ts';
import errorHandler from './plugins/infra/error-handler.ts';
import auth from './plugins/infra/auth.ts';
import rateLimit from './plugins/infra/rate-limit.ts';
import methods from './plugins/infra/methods.ts';
import openapi from './plugins/infra/openapi.ts';
import metrics from './plugins/infra/metrics.ts';
import audit from './plugins/app/audit.ts';
import readiness from './plugins/app/readiness.ts';
import targets from './plugins/app/targets.ts';
import artifacts from './plugins/app/artifacts.ts';
import captures from './plugins/app/captures.ts';
import schedules from './plugins/app/schedules.ts';
import pins from './plugins/app/pins.ts';
import scheduleMetrics from './plugins/app/schedule-metrics.ts';
import watchRules from './plugins/app/watch-rules.ts';
import watchMetrics from './plugins/app/watch-metrics.ts';
import workers from './plugins/app/workers.ts';
import workersRoutes from './routes/workers.ts';
import slack from './plugins/app/slack.ts';
import heapAnalysis from './plugins/app/heap-analysis.ts';
import profiles from './plugins/app/profiles.ts';
import healthRoutes from './routes/health.ts';
import metricsRoutes from './routes/metrics.ts';
import capturesRoutes from './routes/captures/index.ts';
import artifactRoutes from './routes/captures/artifact.ts';
import targetsRoutes from './routes/targets/index.ts';
import schedulesRoutes from './routes/schedules/index.ts';
import { samplesRoutes, watchRulesRoutes } from './routes/watch-rules/index.ts';
import pinRoutes from './routes/captures/pin.ts';
import slackRoutes from './routes/slack/index.ts';
import heapRoutes from './routes/captures/heap.ts';
import profileRoutes from './routes/captures/profile.ts';
import diffRoutes from './routes/diff.ts';
import leakHuntRoutes from './routes/leak-hunts.ts';
import consoleRoutes from './routes/console.ts';
import sessionRoutes from './routes/session.ts';
import oidcRoutes from './routes/oidc.ts';
import { OidcSignIn } from './console/oidc.ts';
import { ConsoleSessions } from './console/sessions.ts';
import { defaultConsoleDir } from './console/assets.ts';
import { DEV_PRINCIPAL } from './auth/scopes.ts';
import { HEAPCAP_VERSION } from '@heapcap/config';
import './types.ts';

/** Options of the app plugin: the dependencies with HTTP settings resolved. */
export interface AppOptions {
  deps: ApiDeps;
  http: HttpSettings;
}

/** Registers the whole API on `app`. */
export default async function serviceApp(app: FastifyInstance, { deps, http }: AppOptions): Promise<void> {
  // Infrastructure.
  await app.register(errorHandler, { bodyLimit: http.bodyLimitBytes });
  // The console's sessions (tokens mode; --dev signs everyone in as dev).
  const oidcGrants = deps.auth.kind === 'tokens' ? deps.auth.oidcGrants : undefined;
  const sessions =
    deps.auth.kind === 'tokens' ? new ConsoleSessions({ redis: deps.queue.redis, prefix: deps.queue.keys.prefix, tokens: deps.auth.tokens, ttlMs: http.sessionTtlMs, oidcGrants }) : undefined;
  // OpenID Connect sign-in to the console (HEAPCAP_OIDC_*): needs sessions and the grants file.
  const oidcConfig = deps.config.consoleAuth.oidc;
  const oidc =
    oidcConfig !== undefined && oidcGrants !== undefined ? new OidcSignIn({ config: oidcConfig, publicUrl: deps.config.publicUrl, redis: deps.queue.redis, prefix: deps.queue.keys.prefix }) : undefined;
  await app.register(auth, { mode: deps.auth, failures: { max: http.authFailureMax, windowMs: http.authFailureWindowMs }, sessions });
  // Before every route (it collects their methods) and after auth (its hook runs after auth's).
  await app.register(methods);
  await app.register(openapi, { version: HEAPCAP_VERSION });
  await app.register(metrics, { queue: deps.queue, rulesFile: deps.rulesFile });
  // After auth (its key is the token name) and before any route it limits.
  await app.register(rateLimit, { max: http.rateLimitMax, timeWindowMs: http.rateLimitWindowMs });

  // Domain services.
  await app.register(audit, { queue: deps.queue });
  await app.register(readiness, { redis: deps.queue.redis, sink: deps.sink, registrySynced: () => deps.queue.targets.isSynced(), lastDataLoss: () => deps.queue.epoch.lastLoss() });
  await app.register(targets, { queue: deps.queue });
  await app.register(artifacts, { sink: deps.sink });
  await app.register(captures, { queue: deps.queue });
  await app.register(schedules, { queue: deps.queue, settings: deps.config.schedules });
  await app.register(pins, { queue: deps.queue });
  await app.register(scheduleMetrics, { queue: deps.queue });
  await app.register(watchRules, { queue: deps.queue, settings: deps.config.watch });
  await app.register(watchMetrics, { queue: deps.queue, settings: deps.config.watch });
  await app.register(heapAnalysis, { queue: deps.queue, sink: deps.sink });
  await app.register(profiles, { sink: deps.sink });
  await app.register(workers, { queue: deps.queue });
  if (deps.slack !== undefined) await app.register(slack, { queue: deps.queue, store: deps.sink, slack: deps.slack });

  // Routes.
  await app.register(healthRoutes);
  await app.register(metricsRoutes, { auth: http.metricsAuth });
  await app.register(capturesRoutes, { prefix: '/v1/captures' });
  await app.register(artifactRoutes, { prefix: '/v1/captures' });
  await app.register(pinRoutes, { prefix: '/v1/captures' });
  await app.register(heapRoutes, { prefix: '/v1/captures' });
  await app.register(profileRoutes, { prefix: '/v1/captures' });
  await app.register(diffRoutes, { prefix: '/v1/diff' });
  await app.register(leakHuntRoutes, { prefix: '/v1/leak-hunts' });
  await app.register(targetsRoutes, { prefix: '/v1/targets' });
  await app.register(schedulesRoutes, { prefix: '/v1/schedules' });
  await app.register(watchRulesRoutes, { prefix: '/v1/watch-rules' });
  await app.register(samplesRoutes, { prefix: '/v1/targets' });
  await app.register(workersRoutes, { prefix: '/v1/workers' });
  await app.register(sessionRoutes, { prefix: '/v1/session', sessions, devPrincipal: deps.auth.kind === 'dev' ? DEV_PRINCIPAL : undefined, oidc, tokenSignIn: deps.config.consoleAuth.tokenSignIn });
  if (oidc !== undefined && sessions !== undefined && oidcGrants !== undefined) await app.register(oidcRoutes, { prefix: '/auth/oidc', oidc, sessions, grants: oidcGrants });
  await app.register(consoleRoutes, { dir: deps.consoleDir ?? defaultConsoleDir() });
  // Only with a signing secret: without one the paths answer 404 like any unknown route.
  if (deps.slack !== undefined) await app.register(slackRoutes, { prefix: '/slack', signingSecret: deps.slack.signingSecret, responseOrigins: deps.slack.responseOrigins });
}
