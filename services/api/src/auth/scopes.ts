/** The scopes a token can hold; each route names the one it needs. */
export const SCOPES = ['captures:read', 'captures:write', 'artifacts:read', 'targets:admin'] as const;
export type Scope = (typeof SCOPES)[number];

/** Who is calling: the token's name (never the token) and what it may do. */
export interface Principal {
  name: string;
  scopes: ReadonlySet<Scope>;
}

/** The principal of `--dev` mode: no tokens, every scope, loopback only. */
export const DEV_PRINCIPAL: Principal = { name: 'dev', scopes: new Set(SCOPES) };
