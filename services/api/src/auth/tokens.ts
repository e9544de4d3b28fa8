/**
 * API tokens: loaded from the tokens file (YAML or JSON), stored only as
 * sha256 hashes. A presented bearer token is hashed and compared with every
 * configured hash in constant time, so neither the token nor which entry it
 * matched leaks through timing.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { SCOPES, type Principal } from './scopes.ts';

const TokenEntrySchema = z.strictObject({
  /** Shown in logs and the audit log as "who"; never the token itself. */
  name: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._@:-]{0,99}$/, 'letters, digits, ".", "_", "@", ":" or "-" (max 100)'),
  sha256: z.string().regex(/^[0-9a-fA-F]{64}$/, 'hex sha256 of the token (64 hex digits)'),
  scopes: z.array(z.enum(SCOPES)).min(1),
});

const TokensFileSchema = z.strictObject({ tokens: z.array(TokenEntrySchema).min(1) });

/** One configured token: its name, hash bytes and scopes. */
export interface TokenEntry {
  name: string;
  hash: Buffer;
  scopes: Principal['scopes'];
}

/** A tokens file that does not parse; the message names the file and each bad entry. */
export class TokensFileError extends Error {
  override readonly name = 'TokensFileError';
  readonly code = 'invalid_config';
}

/** Parses the text of a tokens file (YAML is a superset of JSON). */
export function parseTokens(text: string, file = 'tokens file'): TokenEntry[] {
  let raw: unknown;
  try {
    raw = parseYaml(text);
  } catch (err) {
    throw new TokensFileError(`${file}: not YAML or JSON: ${(err as Error).message}`);
  }
  const parsed = TokensFileSchema.safeParse(raw);
  if (!parsed.success) throw new TokensFileError(`${file}: ${z.prettifyError(parsed.error)}`);
  const names = new Set<string>();
  return parsed.data.tokens.map((t) => {
    if (names.has(t.name)) throw new TokensFileError(`${file}: token name "${t.name}" appears twice`);
    names.add(t.name);
    return { name: t.name, hash: Buffer.from(t.sha256, 'hex'), scopes: new Set(t.scopes) };
  });
}

/** Reads and parses the tokens file at `path`. */
export async function loadTokens(path: string): Promise<TokenEntry[]> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    throw new TokensFileError(`cannot read tokens file ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  return parseTokens(text, path);
}

/** Hex sha256 of a token: what the tokens file stores. */
export function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

/** The principal whose hash matches `token`, or undefined. Compares against every entry. */
export function verifyToken(tokens: readonly TokenEntry[], token: string): Principal | undefined {
  const presented = createHash('sha256').update(token, 'utf8').digest();
  let match: TokenEntry | undefined;
  for (const entry of tokens) {
    // No early exit: the time spent does not depend on which entry matches.
    if (timingSafeEqual(presented, entry.hash) && match === undefined) match = entry;
  }
  return match === undefined ? undefined : { name: match.name, scopes: match.scopes };
}
