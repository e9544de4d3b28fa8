/**
 * API tokens: loaded from the tokens file (YAML or JSON), stored only as
 * sha256 hashes. A presented bearer token is hashed and compared with every
 * configured hash in constant time, so neither the token nor which entry it
 * matched leaks through timing.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { assertUniqueNames, loadConfigFile, parseConfigText } from '@heapcap/config';
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

/** Parses the text of a tokens file (YAML is a superset of JSON); ConfigFileError names the file and each bad entry. */
export function parseTokens(text: string, file = 'tokens file'): TokenEntry[] {
  return entriesOf(parseConfigText(text, TokensFileSchema, file), file);
}

/** Reads and parses the tokens file at `path`. */
export async function loadTokens(path: string): Promise<TokenEntry[]> {
  return entriesOf(await loadConfigFile(path, TokensFileSchema, { what: 'tokens file' }), path);
}

function entriesOf(parsed: z.output<typeof TokensFileSchema>, file: string): TokenEntry[] {
  assertUniqueNames(file, 'token name', parsed.tokens.map((t) => t.name));
  return parsed.tokens.map((t) => ({ name: t.name, hash: Buffer.from(t.sha256, 'hex'), scopes: new Set(t.scopes) }));
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
