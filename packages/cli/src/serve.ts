/**
 * `heapcap serve`: runs the service entry point services/serve/src/main.ts.
 *
 * Why a child process instead of an import: packages never import services
 * (scripts/check-imports.mjs), and the service is a composition root (Fastify,
 * BullMQ, pino) the rest of the CLI must not load. The child is the same
 * program a deployment runs; this parent only forwards signals and exit codes.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { EXIT } from './exit-codes.ts';

/** Where the service entry point lives in the workspace (resolved at run time, not imported). */
export const SERVE_ENTRY = fileURLToPath(new URL('../../../services/serve/src/main.ts', import.meta.url));

/** Run `heapcap serve ARGS` in a child with inherited stdio; resolves with its exit code. */
export function serveMain(argv: string[], entry: string = SERVE_ENTRY): Promise<number> {
  if (!existsSync(entry)) {
    process.stderr.write(`internal: the service entry point ${entry} is missing (heapcap serve needs the whole workspace)\n`);
    return Promise.resolve(EXIT.internal);
  }
  // Same node and loader flags as this process (e.g. --import tsx).
  const child = spawn(process.execPath, [...process.execArgv, entry, ...argv], { stdio: 'inherit' });
  const forward = (signal: NodeJS.Signals): void => {
    // The child has its own shutdown deadline and ignores repeats (a terminal's Ctrl-C reaches both of us).
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
  };
  process.on('SIGINT', forward);
  process.on('SIGTERM', forward);
  return new Promise((resolve) => {
    const done = (code: number): void => {
      process.off('SIGINT', forward);
      process.off('SIGTERM', forward);
      resolve(code);
    };
    child.once('error', (err) => {
      process.stderr.write(`internal: could not start the service: ${err.message}\n`);
      done(EXIT.internal);
    });
    child.once('exit', (code, signal) => done(code ?? (signal === 'SIGINT' || signal === 'SIGTERM' ? EXIT.cancelled : EXIT.internal)));
  });
}
