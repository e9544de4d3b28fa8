/**
 * The redaction tests' target (fixtures/secrets-target.cjs): secrets of many
 * shapes planted around random tokens, which it prints before READY.
 */
import { fixturePath } from './fixtures.ts';
import { startNodeTarget, type NodeTarget, type NodeTargetOptions } from './node-target.ts';

/** A running secrets target and the tokens it planted (each in exactly one secret). */
export interface SecretsTarget {
  target: NodeTarget;
  tokens: string[];
  /** Tokens redaction keeps by design, by what holds them: `tostringtag` (a Symbol.toStringTag value, an object's class name). */
  kept: Record<string, string>;
}

/** Starts the secrets target (`node`: which Node; `env`, `wrap`… as for any target). */
export async function startSecretsTarget(options: Omit<NodeTargetOptions, 'script'> = {}): Promise<SecretsTarget> {
  const target = await startNodeTarget({ ...options, script: fixturePath('secrets-target.cjs') });
  const line = /^SECRETS (.*)$/m.exec(target.stdoutText());
  if (line === null) {
    await target.kill();
    throw new Error('the secrets target printed no SECRETS line');
  }
  const keptLine = /^KEPT (.*)$/m.exec(target.stdoutText());
  return { target, tokens: JSON.parse(line[1] as string) as string[], kept: JSON.parse(keptLine?.[1] ?? '{}') as Record<string, string> };
}

/** The tokens that occur in `bytes` (a byte search: the tokens are ASCII). */
export function tokensIn(bytes: Uint8Array, tokens: string[]): string[] {
  const b = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return tokens.filter((t) => b.includes(t));
}
