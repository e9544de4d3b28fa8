/** Response schema of /v1/session (the console's sign-in), shared with the OpenAPI document. */
import { z } from 'zod';
import { SCOPES } from '../auth/scopes.ts';

export const SessionViewSchema = z
  .object({
    /** True when this request is signed in: a live session cookie, a bearer token, or `--dev`. */
    signedIn: z.boolean(),
    /** `tokens`: signed in (or to sign in) with a token; `oidc`: signed in through the OpenID provider; `dev`: no auth (`heapcap serve --dev`), every caller is `dev`. */
    mode: z.enum(['tokens', 'oidc', 'dev']),
    /** The token's name, or for `oidc` the person's name claim (who the audit log names). */
    name: z.string().nullable(),
    /** What the console may do: it hides what these do not allow. */
    scopes: z.array(z.enum(SCOPES)),
    /** Send this in the x-heapcap-csrf header with every write made with the session cookie. Null without a session. */
    csrfToken: z.string().nullable(),
    expiresAt: z.iso.datetime().nullable(),
    /** The ways this deployment signs people in to the console: an API token (HEAPCAP_CONSOLE_TOKEN_SIGNIN), and the OpenID provider (its button's label and where it starts). */
    signIn: z.object({
      token: z.boolean(),
      oidc: z.object({ name: z.string(), url: z.string() }).nullable(),
    }),
  })
  .describe('ConsoleSession');
