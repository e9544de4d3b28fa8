/** buildApp: a configured Fastify instance with the API registered (not listening; `inject()` works). */
import Fastify, { type FastifyInstance, type RawServerDefault } from 'fastify';
import type { Logger } from 'pino';
import fp from 'fastify-plugin';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { serializerCompiler, validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import serviceApp from './app.ts';
import { DEFAULT_HTTP, httpFromConfig, type ApiDeps } from './deps.ts';
import { componentLogger, createLogger } from '@heapcap/service';
import { envelopeServerOptions } from './http-errors.ts';

/** The API's Fastify instance type. */
export type ApiInstance = FastifyInstance<RawServerDefault, IncomingMessage, ServerResponse, Logger, ZodTypeProvider>;

/** Builds the API on `deps`. The caller listens (or uses `inject()`) and closes it; closing it does not close queue or sink. */
export async function buildApp(deps: ApiDeps): Promise<ApiInstance> {
  const http = { ...DEFAULT_HTTP, ...httpFromConfig(deps.config), ...deps.http };
  const logger = componentLogger(deps.logger ?? createLogger(deps.config.logLevel), 'api');
  const app = Fastify({
    loggerInstance: logger,
    bodyLimit: http.bodyLimitBytes,
    trustProxy: http.trustProxy,
    // A HEAD of the artifact route would open (and audit) a download: no implicit HEAD routes.
    exposeHeadRoutes: false,
    // Closing waits for in-flight requests (a ?wait= can take minutes: the caller bounds close()).
    // Requests arriving meanwhile get 503 from the error handler's hook, in the envelope.
    return503OnClosing: false,
    // Router and HTTP-parser errors in the error envelope too.
    ...envelopeServerOptions(),
  }).withTypeProvider<ZodTypeProvider>();
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  // JSON only: a text/plain body is refused with 415 instead of failing validation as a string.
  app.removeContentTypeParser('text/plain');
  // Fastify's JSON parser (with its prototype-poisoning checks), except that an empty
  // body is no body: clients send `Content-Type: application/json` on DELETE too.
  const json = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (req, body, done) => {
    if (body === '') {
      done(null, undefined);
      return;
    }
    void json(req, typeof body === 'string' ? body : body.toString('utf8'), done);
  });
  if (deps.auth.kind === 'dev') {
    logger.warn('AUTH IS OFF (--dev): every caller has every scope; this API must only be reachable from this machine');
  }
  // fp: the app's hooks, decorators and error handler apply to the root instance.
  await app.register(fp(serviceApp, { name: 'heapcap-api' }), { deps, http });
  return app;
}
