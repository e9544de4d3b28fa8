/**
 * One error handler for the whole app: everything thrown becomes
 * `{ error: { code, message, details } }` with a stable code. 4xx answers say
 * what was wrong; 5xx answers never carry internal messages (they are logged
 * with the request id instead).
 */
import fp from 'fastify-plugin';
import type { FastifyError, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { hasZodFastifySchemaValidationErrors, type ZodFastifySchemaValidationError } from 'fastify-type-provider-zod';
import { isCaptureError } from '@heapcap/errors';
import { ApiError, errorBody, validationFailed, type FieldIssue } from '../../errors.ts';

function fieldIssues(validation: ZodFastifySchemaValidationError[], where: string): FieldIssue[] {
  return validation.flatMap((v) => {
    const path = String(v.instancePath).split('/').filter((p: string) => p !== '').join('.');
    const keys = (v.params as { keys?: unknown }).keys;
    // An unknown-fields issue names several keys at once: list each as its own field.
    if (v.keyword === 'unrecognized_keys' && Array.isArray(keys)) {
      return keys.map((k) => ({ in: where, path: path === '' ? String(k) : `${path}.${String(k)}`, message: 'unknown field' }));
    }
    // A custom issue may carry a stable code of its field's problem (zod's `params`, e.g. profile_interval_out_of_range).
    const code = (v.params as { params?: { code?: unknown } }).params?.code;
    return [{ in: where, path, message: v.message ?? 'invalid', code: typeof code === 'string' ? code : undefined }];
  });
}

/** Maps anything thrown in a request to an ApiError. */
export function toApiError(err: unknown, bodyLimit: number): ApiError {
  if (err instanceof ApiError) return err;
  if (hasZodFastifySchemaValidationErrors(err)) {
    return validationFailed(fieldIssues(err.validation, err.validationContext ?? 'request'));
  }
  if (isCaptureError(err)) {
    if (err.code === 'target_not_found') return new ApiError('target_not_found', err.message);
    if (err.code === 'invalid_input') return new ApiError('validation_failed', err.message, { fields: [] });
    if (err.code === 'storage_unavailable') return new ApiError('unavailable', 'artifact storage is unavailable; retry later');
    return new ApiError('internal', 'internal error');
  }
  const fe = err as Partial<FastifyError>;
  switch (fe.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new ApiError('payload_too_large', `request body larger than ${bodyLimit} bytes`, { limitBytes: bodyLimit });
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new ApiError('unsupported_media_type', 'request bodies must be application/json', { accepted: ['application/json'] });
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new ApiError('malformed_json', 'the request body is not valid JSON');
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new ApiError('validation_failed', 'Content-Length does not match the body', { fields: [] });
    default:
  }
  if (fe.statusCode === 429) return new ApiError('rate_limited', 'rate limit exceeded; retry later');
  // Remaining client errors raised by Fastify itself (bad URL encoding, …): a generic 400.
  if (typeof fe.statusCode === 'number' && fe.statusCode >= 400 && fe.statusCode < 500) {
    return new ApiError('validation_failed', fe.message ?? 'bad request', { fields: [] });
  }
  return new ApiError('internal', 'internal error');
}

/** Sends `err` as the error envelope (also used by the not-found handler). */
export function sendError(reply: FastifyReply, err: ApiError): FastifyReply {
  return reply.code(err.statusCode).headers(err.headers).send(errorBody(err));
}

const errorHandlerPlugin: FastifyPluginAsync<{ bodyLimit: number }> = async (app, { bodyLimit }) => {
  app.setErrorHandler((err: unknown, req: FastifyRequest, reply: FastifyReply) => {
    // The route's own limit where it has one (the Slack routes: 128 KiB and 1 MiB), else the app's.
    const apiErr = toApiError(err, req.routeOptions.bodyLimit ?? bodyLimit);
    if (apiErr.statusCode >= 500) {
      // The cause goes to the log (with the request id), never to the client.
      req.log.error({ err, code: apiErr.code }, 'request failed');
    } else {
      req.log.info({ code: apiErr.code, status: apiErr.statusCode }, apiErr.message);
    }
    return sendError(reply, apiErr);
  });
  // Fastify's own 503 while closing is not the envelope (build.ts turns it off): this is.
  let closing = false;
  app.addHook('preClose', (done) => {
    closing = true;
    done();
  });
  app.addHook('onRequest', async (_req, reply) => {
    if (!closing) return;
    reply.header('connection', 'close');
    throw new ApiError('unavailable', 'the service is shutting down; retry in a moment');
  });
  app.setNotFoundHandler((req, reply) => {
    const path = req.url.split('?')[0] ?? '';
    return sendError(reply, new ApiError('not_found', `no route ${req.method} ${path}`));
  });
};

export default fp(errorHandlerPlugin, { name: 'heapcap-error-handler' });
