/**
 * The on/off load windows the continuous-profile benches share: the busy HTTP target (http-target.cjs) under
 * autocannon, and rounds of two windows in alternating order (off then on, on then off), so a drift of this
 * shared host's load favours neither side.
 */
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { startNodeTarget, type NodeTarget } from '@heapcap/testkit';

const requireHere = createRequire(import.meta.url);

/** What the benches read of an autocannon run. */
export interface AcResult {
  requests: { average: number; total: number };
  errors: number;
  non2xx: number;
}
export type Autocannon = (opts: { url: string; connections: number; duration: number }) => Promise<AcResult>;

/** Runs `fn` with the busy HTTP target started (its URL, autocannon) and killed afterwards. */
export async function withHttpTarget<T>(fn: (target: NodeTarget, url: string, autocannon: Autocannon) => Promise<T>): Promise<T> {
  const autocannon = requireHere('autocannon') as Autocannon;
  const target = await startNodeTarget({ script: fileURLToPath(new URL('./http-target.cjs', import.meta.url)) });
  try {
    const port = /HTTP_PORT (\d+)/.exec(target.stdoutText())?.[1];
    if (port === undefined) throw new Error(`the HTTP target did not say its port: ${target.stdoutText()}`);
    return await fn(target, `http://127.0.0.1:${port}/`, autocannon);
  } finally {
    await target.kill();
  }
}

/** `rounds` pairs of windows, off first in even rounds and on first in odd ones. */
export async function alternatingRounds<W>(rounds: number, off: () => Promise<W>, on: () => Promise<W>): Promise<{ off: W; on: W }[]> {
  const rows: { off: W; on: W }[] = [];
  for (let i = 0; i < rounds; i++) {
    if (i % 2 === 0) {
      const o = await off();
      rows.push({ off: o, on: await on() });
    } else {
      const o = await on();
      rows.push({ on: o, off: await off() });
    }
  }
  return rows;
}
