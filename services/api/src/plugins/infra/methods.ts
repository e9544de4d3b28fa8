/**
 * 405 `method_not_allowed` (with `Allow`) for a path that exists with other
 * methods, instead of 404: `TRACE /v1/targets`, `HEAD /v1/targets` (no
 * implicit HEAD routes), `DELETE /v1/captures`. Runs after the auth hook, so
 * a caller without a valid token learns nothing about routes (401).
 */
import fp from 'fastify-plugin';
import type { FastifyPluginAsync } from 'fastify';
import { ApiError } from '../../errors.ts';

interface RoutePattern {
  re: RegExp;
  methods: Set<string>;
}

/** `/v1/captures/:id` → /^\/v1\/captures\/[^/]+$/ (params match one segment, `*` the rest). */
function patternOf(url: string): RegExp {
  const parts = url.split('/').map((seg) => (seg.startsWith(':') ? '[^/]+' : seg === '*' ? '.*' : seg.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')));
  return new RegExp(`^${parts.join('/')}$`);
}

const methodsPlugin: FastifyPluginAsync = async (app) => {
  const patterns = new Map<string, RoutePattern>();
  app.addHook('onRoute', (route) => {
    const p = patterns.get(route.url) ?? { re: patternOf(route.url), methods: new Set<string>() };
    for (const m of [route.method].flat()) p.methods.add(m.toUpperCase());
    patterns.set(route.url, p);
  });
  app.addHook('onRequest', async (req) => {
    if (!req.is404) return;
    const path = req.url.split('?')[0] ?? '';
    const allowed = [...new Set([...patterns.values()].filter((p) => p.re.test(path)).flatMap((p) => [...p.methods]))].sort();
    if (allowed.length === 0) return;
    throw new ApiError('method_not_allowed', `${req.method} is not allowed on ${path}; allowed: ${allowed.join(', ')}`, { allowed }, { allow: allowed.join(', ') });
  });
};

export default fp(methodsPlugin, { name: 'heapcap-methods', dependencies: ['heapcap-auth'] });
