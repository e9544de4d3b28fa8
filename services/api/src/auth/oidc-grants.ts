/**
 * The OIDC grants file (HEAPCAP_OIDC_GRANTS_FILE, YAML or JSON): which values
 * of one claim of the provider's id token (`groups`, or any claim path) give
 * which heapcap scopes. The same scopes as API tokens and Slack grants; a
 * person holds the union of the grants their claim values match, and a person
 * matching none is refused at sign-in with a page that says so.
 *
 *   claim: groups                 # a top-level claim, or a dotted path: realm_access.roles
 *   name: email                   # the claim that names the person in the audit log (default email, else sub)
 *   grants:
 *     - name: payments-oncall     # shown in logs and the audit log
 *       values: [heapcap-oncall]  # claim values (a string claim or a list of strings); "*": anyone the provider signs in
 *       scopes: [captures:read, captures:write, artifacts:read]
 */
import { assertUniqueNames, loadConfigFile, parseConfigText } from '@heapcap/config';
import { z } from 'zod';
import { SCOPES, type Scope } from './scopes.ts';

const ClaimPath = z.string().regex(/^[A-Za-z0-9_:/.-]{1,200}$/, 'a claim name, or a dotted path into nested claims (realm_access.roles)');

const GrantSchema = z.strictObject({
  name: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._@:-]{0,99}$/, 'letters, digits, ".", "_", "@", ":" or "-" (max 100)'),
  values: z.array(z.string().min(1).max(500)).min(1, 'a grant needs the claim values it matches (or ["*"] for anyone)'),
  scopes: z.array(z.enum(SCOPES)).min(1),
});

const GrantsFileSchema = z.strictObject({
  claim: ClaimPath.default('groups'),
  name: ClaimPath.default('email'),
  grants: z.array(GrantSchema).min(1),
});

/** The parsed grants file. */
export interface OidcGrants {
  /** The claim path, split on dots. */
  claim: string[];
  /** The claim naming the person, split on dots. */
  nameClaim: string[];
  grants: { name: string; values: string[]; scopes: Scope[] }[];
}

/** Parses the text of an OIDC grants file; ConfigFileError names the file and each bad entry. */
export function parseOidcGrants(text: string, file = 'OIDC grants file'): OidcGrants {
  return grantsOf(parseConfigText(text, GrantsFileSchema, file), file);
}

/** Reads and parses the OIDC grants file at `path`. */
export async function loadOidcGrants(path: string): Promise<OidcGrants> {
  return grantsOf(await loadConfigFile(path, GrantsFileSchema, { what: 'OIDC grants file' }), path);
}

function grantsOf(parsed: z.output<typeof GrantsFileSchema>, file: string): OidcGrants {
  assertUniqueNames(file, 'grant name', parsed.grants.map((g) => g.name));
  return { claim: parsed.claim.split('.'), nameClaim: parsed.name.split('.'), grants: parsed.grants };
}

/** The value at a dotted claim path, or undefined. */
function at(claims: Record<string, unknown>, path: readonly string[]): unknown {
  let v: unknown = claims;
  for (const key of path) {
    if (typeof v !== 'object' || v === null || Array.isArray(v)) return undefined;
    v = (v as Record<string, unknown>)[key];
  }
  return v;
}

/** The strings a claim holds: a string is one value, a list keeps its strings, anything else none. */
export function claimValues(claims: Record<string, unknown>, path: readonly string[]): string[] {
  const v = at(claims, path);
  if (typeof v === 'string') return [v];
  if (Array.isArray(v)) return v.filter((x): x is string => typeof x === 'string');
  return [];
}

/** Who the claims name: the configured name claim when it is a string, else the subject. */
export function nameOf(grants: OidcGrants, claims: Record<string, unknown>): string {
  const v = at(claims, grants.nameClaim);
  return typeof v === 'string' && v !== '' ? v : String(claims['sub']);
}

/** The grants `values` match ("*" matches anyone) and the union of their scopes. */
export function grantsFor(grants: OidcGrants, values: readonly string[]): { grants: string[]; scopes: Set<Scope> } {
  const have = new Set(values);
  const matched = grants.grants.filter((g) => g.values.some((v) => v === '*' || have.has(v)));
  return { grants: matched.map((g) => g.name), scopes: new Set(matched.flatMap((g) => g.scopes)) };
}
