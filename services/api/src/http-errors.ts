/**
 * Fastify server options for the answers given before any route runs, so
 * that they too are the `{ error: { code, message, details } }` envelope:
 *
 * - the router: a path that is not valid percent-encoding (`/v1/captures/%ff`)
 *   or a path parameter over the router's length limit (`frameworkErrors`);
 * - Node's HTTP parser (`clientError`): a header value with CR/LF or other
 *   bytes HTTP forbids, a malformed request line or body framing (400),
 *   headers over `maxHeaderSize` (431), a request that took too long (408).
 *   Node answers those itself, before Fastify sees a request, unless the
 *   server has a clientError listener: this is that listener.
 */
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest, FastifyServerOptions } from 'fastify';
import { ApiError, errorBody, validationFailed } from './errors.ts';

/** Largest request head (request line + headers): Node's default, set here so no runtime flag changes it. */
export const MAX_HEADER_BYTES = 16 * 1024;
/** Longest path parameter the router accepts; longer ones are refused as validation_failed (ids are ≤ 128). */
export const MAX_PARAM_LENGTH = 1024;

/** The ApiError for an error of Node's HTTP parser. */
export function clientErrorToApiError(err: NodeJS.ErrnoException & { reason?: unknown }): ApiError {
  switch (err.code) {
    case 'HPE_HEADER_OVERFLOW':
      return new ApiError('headers_too_large', `request line and headers larger than ${MAX_HEADER_BYTES} bytes`, { limitBytes: MAX_HEADER_BYTES });
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new ApiError('request_timeout', 'the request was not received in time');
    default: {
      const reason = typeof err.reason === 'string' ? `: ${err.reason}` : '';
      return new ApiError(
        'malformed_request',
        `not a valid HTTP/1.1 request${reason} (header values must not contain CR, LF or NUL)`,
        { parserError: err.code },
      );
    }
  }
}

function clientErrorHandler(this: FastifyInstance, err: NodeJS.ErrnoException, socket: Socket): void {
  // A reset connection has nobody to answer.
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const apiErr = clientErrorToApiError(err);
  this.log.debug({ code: apiErr.code, parserError: err.code }, apiErr.message);
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  const body = JSON.stringify(errorBody(apiErr));
  const head = [
    `HTTP/1.1 ${apiErr.statusCode} ${STATUS_CODES[apiErr.statusCode] ?? 'Error'}`,
    'Content-Type: application/json; charset=utf-8',
    `Content-Length: ${Buffer.byteLength(body)}`,
    // The parser is in an error state: nothing more can be read from this connection.
    'Connection: close',
  ];
  socket.end(`${head.join('\r\n')}\r\n\r\n${body}`, () => socket.destroy());
}

function frameworkErrors(error: FastifyError, req: FastifyRequest, reply: FastifyReply): void {
  let apiErr: ApiError;
  if (error.code === 'FST_ERR_BAD_URL') {
    apiErr = new ApiError('malformed_request', 'the URL path is not valid percent-encoding (e.g. a lone %ff); encode each byte of a UTF-8 character');
  } else if (error.code === 'FST_ERR_MAX_PARAM_LENGTH') {
    apiErr = validationFailed([{ in: 'params', path: '', message: `a path segment longer than ${MAX_PARAM_LENGTH} characters` }]);
  } else {
    req.log.error({ err: error }, 'router error');
    apiErr = new ApiError('internal', 'internal error');
  }
  if (apiErr.statusCode < 500) req.log.info({ code: apiErr.code, status: apiErr.statusCode }, apiErr.message);
  void reply.code(apiErr.statusCode).headers(apiErr.headers).send(errorBody(apiErr));
}

/** The Fastify options above; buildApp spreads them into its own. */
export function envelopeServerOptions(): Pick<FastifyServerOptions, 'frameworkErrors' | 'clientErrorHandler' | 'routerOptions'> & { http: { maxHeaderSize: number } } {
  return {
    frameworkErrors,
    clientErrorHandler,
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    http: { maxHeaderSize: MAX_HEADER_BYTES },
  };
}
