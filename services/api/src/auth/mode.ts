/** Chooses the auth mode at start-up: tokens from HEAPCAP_TOKENS_FILE, or `--dev` (none). */
import type { HeapcapConfig } from '@heapcap/config';
import type { AuthMode } from '../plugins/infra/auth.ts';
import { loadTokens } from './tokens.ts';

/** Tokens when a tokens file is configured (even with `--dev`); dev mode only when asked and none is set. */
export async function resolveAuthMode(config: Pick<HeapcapConfig, 'tokensFile'>, options: { dev: boolean }): Promise<AuthMode> {
  if (config.tokensFile !== undefined) return { kind: 'tokens', tokens: await loadTokens(config.tokensFile) };
  if (options.dev) return { kind: 'dev' };
  throw new Error('HEAPCAP_TOKENS_FILE is not set: the API needs tokens (see docs/api.md), or run `heapcap serve --dev` for a loopback-only API without auth');
}
