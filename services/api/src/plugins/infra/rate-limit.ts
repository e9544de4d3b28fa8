/**
 * Per-token rate limit (@fastify/rate-limit, in-process store). Keyed by the
 * token's name, so one noisy runbook cannot starve the others; public routes
 * fall back to the client address. Runs after the auth hook (route-level
 * onRequest hooks run after the app's), so the principal is known.
 */
import fp from 'fastify-plugin';
import rateLimit from '@fastify/rate-limit';
import type { FastifyPluginAsync } from 'fastify';
import { ApiError } from '../../errors.ts';

/** Requests per token per window. */
export interface RateLimitOptions {
  max: number;
  timeWindowMs: number;
}

const rateLimitPlugin: FastifyPluginAsync<RateLimitOptions> = async (app, opts) => {
  await app.register(rateLimit, {
    global: true,
    max: opts.max,
    timeWindow: opts.timeWindowMs,
    keyGenerator: (req) => (req.principal === null ? `ip:${req.ip}` : `token:${req.principal.name}`),
    // Probes and scrapers (public routes) are not limited: a readiness probe must never see 429.
    allowList: (req) => req.routeOptions.config.public === true,
    errorResponseBuilder: (_req, ctx) =>
      new ApiError('rate_limited', `rate limit of ${ctx.max} requests exceeded; retry in ${ctx.after}`, {
        limit: ctx.max,
        retryAfterSeconds: Math.ceil(ctx.ttl / 1000),
      }),
  });
};

export default fp(rateLimitPlugin, { name: 'heapcap-rate-limit' });
