/** The worker's pino logger: JSON to stdout, one child per capture, secrets redacted by path. */
import { pino, type Logger, type LevelWithSilent } from 'pino';

/**
 * Censored wherever they appear at these paths. An inspector WebSocket URL
 * carries the session UUID, which is as good as code execution on the target:
 * it is redacted like a credential.
 */
export const WORKER_REDACT_PATHS = [
  'token',
  '*.token',
  'authorization',
  '*.authorization',
  'password',
  '*.password',
  'secretAccessKey',
  '*.secretAccessKey',
  'sessionToken',
  '*.sessionToken',
  'wsUrl',
  '*.wsUrl',
  'target.ws',
  'redisUrl',
];

/** A root logger at `level` (pass `destination` in tests to capture lines). */
export function createWorkerLogger(level: LevelWithSilent, destination?: pino.DestinationStream): Logger {
  const options = { level, base: { component: 'worker' }, redact: { paths: WORKER_REDACT_PATHS, censor: '[redacted]' } };
  return destination === undefined ? pino(options) : pino(options, destination);
}

/** Strip the password from a Redis URL for log lines and messages. */
export function safeRedisUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password !== '') u.password = 'xxxxx';
    return u.toString();
  } catch {
    return '(unparseable Redis URL)';
  }
}
