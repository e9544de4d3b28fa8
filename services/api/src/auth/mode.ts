/** Chooses the auth mode at start-up: tokens from HEAPCAP_TOKENS_FILE (with the OIDC grants file where OIDC is set), or `--dev` (none). */
import type { HeapcapConfig } from '@heapcap/config';
import type { AuthMode } from '../plugins/infra/auth.ts';
import { loadOidcGrants } from './oidc-grants.ts';
import { loadTokens } from './tokens.ts';

/** Tokens when a tokens file is configured (even with `--dev`); dev mode only when asked and none is set. */
export async function resolveAuthMode(config: Pick<HeapcapConfig, 'tokensFile'> & Partial<Pick<HeapcapConfig, 'consoleAuth'>>, options: { dev: boolean }): Promise<AuthMode> {
  const oidc = config.consoleAuth?.oidc;
  if (config.tokensFile !== undefined) {
    return { kind: 'tokens', tokens: await loadTokens(config.tokensFile), oidcGrants: oidc === undefined ? undefined : await loadOidcGrants(oidc.grantsFile) };
  }
  if (oidc !== undefined) throw new Error('HEAPCAP_OIDC_ISSUER needs HEAPCAP_TOKENS_FILE too: OIDC signs people in to the console, machines keep API tokens (see docs/operations.md)');
  if (options.dev) return { kind: 'dev' };
  throw new Error('HEAPCAP_TOKENS_FILE is not set: the API needs tokens (see docs/api.md), or run `heapcap serve --dev` for a loopback-only API without auth');
}
