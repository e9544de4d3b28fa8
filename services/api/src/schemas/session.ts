/** Response schema of /v1/session (the console's sign-in), shared with the OpenAPI document. */
import { z } from 'zod';
import { SCOPES } from '../auth/scopes.ts';

export const SessionViewSchema = z
  .object({
    /** True when this request is signed in: a live session cookie, a bearer token, or `--dev`. */
    signedIn: z.boolean(),
    /** `tokens`: sign in with a token; `dev`: no auth (`heapcap serve --dev`), every caller is `dev`. */
    mode: z.enum(['tokens', 'dev']),
    /** The token's name (who the audit log names). */
    name: z.string().nullable(),
    /** What the console may do: it hides what these do not allow. */
    scopes: z.array(z.enum(SCOPES)),
    /** Send this in the x-heapcap-csrf header with every write made with the session cookie. Null without a session. */
    csrfToken: z.string().nullable(),
    expiresAt: z.iso.datetime().nullable(),
  })
  .describe('ConsoleSession');
