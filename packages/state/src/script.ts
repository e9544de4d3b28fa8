/** A Lua script run with EVALSHA, loaded on NOSCRIPT (after a Redis restart the script cache is empty). */
import { createHash } from 'node:crypto';
import type { RedisClient } from './connection.ts';

/** One Lua script; `run` sends EVALSHA and falls back to EVAL once. */
export class LuaScript {
  readonly source: string;
  readonly sha: string;

  constructor(source: string) {
    this.source = source;
    this.sha = createHash('sha1').update(source).digest('hex');
  }

  /** Runs the script; the reply is untyped Redis data for the caller to check. */
  async run(redis: RedisClient, keys: string[], args: (string | number)[]): Promise<unknown> {
    try {
      return await redis.evalsha(this.sha, keys.length, ...keys, ...args);
    } catch (err) {
      if (!(err instanceof Error) || !err.message.startsWith('NOSCRIPT')) throw err;
      return redis.eval(this.source, keys.length, ...keys, ...args);
    }
  }
}

/** The reply of our scripts: an array of strings (status word first). */
export function replyStrings(reply: unknown): string[] {
  if (!Array.isArray(reply) || !reply.every((x) => typeof x === 'string')) {
    throw new Error(`unexpected script reply: ${JSON.stringify(reply)}`);
  }
  return reply as string[];
}
