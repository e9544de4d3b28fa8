/**
 * The console's OpenID Connect sign-in: the HEAPCAP_OIDC_* variables (merged
 * into the one env schema), HEAPCAP_CONSOLE_TOKEN_SIGNIN, and the typed
 * settings they become. Bearer tokens stay for machines; OIDC signs people
 * in to the console only.
 */
import { z } from 'zod';

/** The OIDC scopes asked for by default: enough for an id token with a name; `groups` is added where the provider needs it asked. */
export const DEFAULT_OIDC_SCOPES = 'openid email profile';

/** True for an http:// issuer on this machine (a test or a port-forward); any other issuer must be https. */
function loopbackHttp(u: URL): boolean {
  return u.protocol === 'http:' && (u.hostname === '127.0.0.1' || u.hostname === 'localhost' || u.hostname === '[::1]');
}

/** The HEAPCAP_OIDC_* and HEAPCAP_CONSOLE_TOKEN_SIGNIN variables (spread into the env schema). */
export const OIDC_ENV = {
  /** The provider's issuer URL (discovery at <issuer>/.well-known/openid-configuration). Set → the console offers OIDC sign-in. */
  HEAPCAP_OIDC_ISSUER: z
    .url({ protocol: /^https?$/, error: 'must be the provider\'s issuer URL, e.g. https://dex.example.com or https://company.okta.com' })
    .refine((v) => { const u = new URL(v); return u.protocol === 'https:' || loopbackHttp(u); }, 'must be https:// (http:// only for an issuer on 127.0.0.1 or localhost)')
    .optional(),
  /** The client id heapcap is registered under at the provider. */
  HEAPCAP_OIDC_CLIENT_ID: z.string().min(1).optional(),
  /** The client's secret (a secret: never logged); unset for a public client (PKCE alone). */
  HEAPCAP_OIDC_CLIENT_SECRET: z.string().min(1).optional(),
  /** Which claim values (e.g. groups) give which heapcap scopes (YAML or JSON); required with the issuer. */
  HEAPCAP_OIDC_GRANTS_FILE: z.string().min(1).optional(),
  /** The scopes asked of the provider, space-separated; must include openid. */
  HEAPCAP_OIDC_SCOPES: z
    .string()
    .default(DEFAULT_OIDC_SCOPES)
    .transform((v) => v.split(/\s+/).filter((s) => s !== ''))
    .refine((s) => s.includes('openid'), `must include openid, e.g. "${DEFAULT_OIDC_SCOPES} groups"`),
  /** What the console's sign-in button calls the provider ("Sign in with …"). */
  HEAPCAP_OIDC_DISPLAY_NAME: z.string().min(1).max(40).default('single sign-on'),
  /** `off`: the console no longer takes an API token to sign in (POST /v1/session answers 403); bearer tokens still work for the API. */
  HEAPCAP_CONSOLE_TOKEN_SIGNIN: z.enum(['on', 'off']).default('on'),
};

type OidcEnv = z.output<z.ZodObject<typeof OIDC_ENV>>;

/** The OIDC settings (the client secret stays in this object: never log it). */
export interface OidcConfig {
  issuer: string;
  clientId: string;
  clientSecret: string | undefined;
  grantsFile: string;
  scopes: readonly string[];
  displayName: string;
}

/** The console's sign-in settings: OIDC (undefined: off) and whether API tokens still sign in. */
export interface ConsoleAuthConfig {
  oidc: OidcConfig | undefined;
  tokenSignIn: boolean;
}

/** The variables that must come together, and what is missing: one entry per missing variable. */
export function oidcProblems(e: OidcEnv): { variable: string; message: string }[] {
  const problems: { variable: string; message: string }[] = [];
  if (e.HEAPCAP_OIDC_ISSUER === undefined) {
    for (const v of ['HEAPCAP_OIDC_CLIENT_ID', 'HEAPCAP_OIDC_CLIENT_SECRET', 'HEAPCAP_OIDC_GRANTS_FILE'] as const) {
      if (e[v] !== undefined) problems.push({ variable: v, message: 'set without HEAPCAP_OIDC_ISSUER: set the issuer too, or remove it' });
    }
    if (e.HEAPCAP_CONSOLE_TOKEN_SIGNIN === 'off') problems.push({ variable: 'HEAPCAP_CONSOLE_TOKEN_SIGNIN', message: 'off needs another way to sign in: set HEAPCAP_OIDC_ISSUER' });
    return problems;
  }
  if (e.HEAPCAP_OIDC_CLIENT_ID === undefined) problems.push({ variable: 'HEAPCAP_OIDC_CLIENT_ID', message: 'required with HEAPCAP_OIDC_ISSUER: the client id registered at the provider' });
  if (e.HEAPCAP_OIDC_GRANTS_FILE === undefined) problems.push({ variable: 'HEAPCAP_OIDC_GRANTS_FILE', message: 'required with HEAPCAP_OIDC_ISSUER: the file that maps claim values (groups) to scopes (docs/operations.md)' });
  return problems;
}

/** The console sign-in settings of parsed env values (after oidcProblems found nothing). */
export function consoleAuthConfigOf(e: OidcEnv): ConsoleAuthConfig {
  const oidc =
    e.HEAPCAP_OIDC_ISSUER === undefined || e.HEAPCAP_OIDC_CLIENT_ID === undefined || e.HEAPCAP_OIDC_GRANTS_FILE === undefined
      ? undefined
      : {
          issuer: e.HEAPCAP_OIDC_ISSUER,
          clientId: e.HEAPCAP_OIDC_CLIENT_ID,
          clientSecret: e.HEAPCAP_OIDC_CLIENT_SECRET,
          grantsFile: e.HEAPCAP_OIDC_GRANTS_FILE,
          scopes: e.HEAPCAP_OIDC_SCOPES,
          displayName: e.HEAPCAP_OIDC_DISPLAY_NAME,
        };
  return { oidc, tokenSignIn: e.HEAPCAP_CONSOLE_TOKEN_SIGNIN === 'on' };
}
