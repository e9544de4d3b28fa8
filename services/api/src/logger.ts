/** The API's pino logger: JSON to stdout, secrets redacted by path. */
import { pino, type Logger, type LevelWithSilent } from 'pino';

/**
 * Paths censored in every log line. Fastify's request serializer logs no
 * headers, but handlers and plugins may log a request or its headers; tokens
 * and S3 credentials must never reach the logs.
 */
export const REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'req.headers["x-api-key"]',
  'headers.authorization',
  'headers.cookie',
  'res.headers["set-cookie"]',
  'authorization',
  'token',
  '*.token',
  'secretAccessKey',
  '*.secretAccessKey',
  'sessionToken',
  '*.sessionToken',
];

/** A root logger for the API (and `heapcap serve`) at `level`, with the redaction above. */
export function createLogger(level: LevelWithSilent): Logger {
  return pino({ level, redact: { paths: REDACT_PATHS, censor: '[redacted]' } });
}

/** A child of a caller-supplied logger that still applies the API's redaction. */
export function apiLogger(root: Logger): Logger {
  return root.child({ component: 'api' }, { redact: { paths: REDACT_PATHS, censor: '[redacted]' } });
}
