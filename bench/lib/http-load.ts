/**
 * The busy HTTP target (http-target.cjs) under autocannon, and on/off windows
 * in alternating order: what a bench comparing a feature on vs off on a
 * serving target needs (bench/hunt-tracking.ts; bench/profiles.ts has its own
 * copy from before this file).
 */
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { startNodeTarget, type NodeTarget } from '@heapcap/testkit';

const requireHere = createRequire(import.meta.url);

export interface AcResult {
  requests: { average: number; total: number };
  errors: number;
  non2xx: number;
}
export type Autocannon = (opts: { url: string; connections: number; duration: number }) => Promise<AcResult>;

/** autocannon (a dev dependency of bench/). */
export function autocannon(): Autocannon {
  return requireHere('autocannon') as Autocannon;
}

/** Starts lib/http-target.cjs; its URL once it said its port. */
export async function startHttpTarget(): Promise<{ target: NodeTarget; url: string }> {
  const target = await startNodeTarget({ script: fileURLToPath(new URL('./http-target.cjs', import.meta.url)) });
  const port = /HTTP_PORT (\d+)/.exec(target.stdoutText())?.[1];
  if (port === undefined) {
    await target.kill();
    throw new Error(`the HTTP target did not say its port: ${target.stdoutText()}`);
  }
  return { target, url: `http://127.0.0.1:${port}/` };
}

/** `rounds` pairs of windows, off first in even rounds and on first in odd ones: a drift of the host's load favours neither side. */
export async function alternate<T>(rounds: number, off: () => Promise<T>, on: () => Promise<T>): Promise<{ off: T; on: T }[]> {
  const rows: { off: T; on: T }[] = [];
  for (let i = 0; i < rounds; i++) {
    if (i % 2 === 0) {
      const o = await off();
      rows.push({ off: o, on: await on() });
    } else {
      const n = await on();
      rows.push({ on: n, off: await off() });
    }
  }
  return rows;
}
