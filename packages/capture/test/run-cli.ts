/** `heapcap capture ARGS` as a child process for the headroom tests, killed at the deadline. */
import { runHeapcapSource, type HeapcapResult } from '@heapcap/testkit';

export type CliRun = HeapcapResult;

/** Run `heapcap capture ARGS` (through tsx) and collect its exit and output. */
export function runCli(args: string[], timeoutMs: number): Promise<CliRun> {
  return runHeapcapSource(['capture', ...args], { timeoutMs });
}
