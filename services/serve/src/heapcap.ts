#!/usr/bin/env node
/**
 * Entry point of the `heapcap` command (bundled into dist/heapcap.mjs; tests and
 * development run it through tsx). The CLI's commands, with the service
 * commands wired in. Each service is imported only when its command runs: the
 * bundle splits them into chunks, so `heapcap capture` on a host short of
 * memory never loads Fastify, BullMQ or pino.
 */
import { runCli } from '@heapcap/cli';

const code = await runCli(process.argv.slice(2), process.env, {
  serve: async (argv, env) => (await import('./serve.ts')).runServe(argv, env),
  api: async (argv, env) => (await import('./split.ts')).runApi(argv, env),
  worker: async (argv, env) => (await import('./split.ts')).runWorker(argv, env),
}).catch((err: unknown) => {
  process.stderr.write(`internal: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n  check: this is a bug in heapcap; please report it with the command you ran\n`);
  return 1;
});
process.exitCode = code;
