/** The one logger of every heapcap service: JSON to stdout, one redaction list, one child per component. */
import { hostname } from 'node:os';
import { isClusterRedisUrl } from '@heapcap/config';
import { pino, type DestinationStream, type LevelWithSilent, type Logger } from 'pino';

/**
 * Censored wherever they appear at these paths, in every service. Tokens and
 * S3 credentials must never reach the logs; an inspector WebSocket URL carries
 * the session UUID, which is as good as code execution on the target; a Redis
 * URL may carry its password.
 */
export const REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'req.headers["x-api-key"]',
  'req.headers["x-slack-signature"]',
  'headers.authorization',
  'headers.cookie',
  'res.headers["set-cookie"]',
  'authorization',
  '*.authorization',
  'token',
  '*.token',
  'password',
  '*.password',
  'secret',
  '*.secret',
  'signingSecret',
  '*.signingSecret',
  'secretAccessKey',
  '*.secretAccessKey',
  'sessionToken',
  '*.sessionToken',
  'wsUrl',
  '*.wsUrl',
  'target.ws',
  'redisUrl',
  '*.redisUrl',
  'responseUrl',
  '*.responseUrl',
  // Slack's spelling of the same capability, and the app's bot token.
  'response_url',
  '*.response_url',
  'botToken',
  '*.botToken',
];

/** A root logger at `level` with the redaction above; `destination` captures lines in tests. */
export function createLogger(level: LevelWithSilent, options: { service?: string; destination?: DestinationStream } = {}): Logger {
  const settings = {
    level,
    // pino's default base (pid, hostname) plus the service name: which process of which host said it.
    base: { pid: process.pid, hostname: hostname(), service: options.service },
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
  };
  return options.destination === undefined ? pino(settings) : pino(settings, options.destination);
}

/** A child of a caller-supplied logger that still applies the redaction (the caller's logger may have none). */
export function componentLogger(root: Logger, component: string): Logger {
  return root.child({ component }, { redact: { paths: REDACT_PATHS, censor: '[redacted]' } });
}

/** Strip the password from a Redis URL for log lines and messages. */
export function safeRedisUrl(url: string): string {
  // A cluster URL lists several HOST:PORTs, which URL() cannot parse: mask the password by hand.
  if (isClusterRedisUrl(url)) {
    return url.replace(/^([^:]+:\/\/)([^@]*)@/, (_, scheme: string, auth: string) => {
      const colon = auth.indexOf(':');
      return `${scheme}${colon === -1 ? '' : auth.slice(0, colon + 1)}xxxxx@`;
    });
  }
  try {
    const u = new URL(url);
    if (u.password !== '') u.password = 'xxxxx';
    return u.toString();
  } catch {
    return '(unparseable Redis URL)';
  }
}
