/** `heapcap capture ARGS` as a child process for the headroom tests, killed at the deadline. */
import { runHeapcapHere, type HeapcapResult } from '@heapcap/testkit';

export type CliRun = HeapcapResult;

/** Run `heapcap capture ARGS` (the bundle on this Node) and collect its exit and output. */
export function runCli(args: string[], timeoutMs: number): Promise<CliRun> {
  return runHeapcapHere(['capture', ...args], { timeoutMs });
}
