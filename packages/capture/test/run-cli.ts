/** `heapcap capture ARGS` as a child process for the headroom tests, killed at the deadline. */
import { runHeapcap, type HeapcapRun } from '@heapcap/testkit';

export type CliRun = HeapcapRun;

/** Run `heapcap capture ARGS` (through tsx) and collect its exit and output. */
export function runCli(args: string[], timeoutMs: number): Promise<CliRun> {
  return runHeapcap(['capture', ...args], { timeoutMs, env: { HEAPCAP_LOG_LEVEL: 'warn' } });
}
