/** Fastify type augmentation: route config, the request's principal and the decorated services. */
import type { Principal, Scope } from './auth/scopes.ts';
import type { Session } from './console/sessions.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The scope a token needs for this route. */
    scope?: Scope;
    /** No authentication at all (health, metrics, docs). */
    public?: boolean;
  }
  interface FastifyRequest {
    /** Set by the auth hook on every non-public route. */
    principal: Principal | null;
    /** The console session the request was authenticated by (its cookie), or null (bearer, --dev, public). */
    session: Session | null;
  }
}
