/**
 * `heapcap serve [--dev]`: the API, a capture worker and the schedule/retention worker in one process, on the
 * embedded defaults (file storage under ./data, Redis at 127.0.0.1:6379).
 * Without a tokens file it refuses to start unless `--dev`, which binds to
 * loopback and runs without auth (and says so loudly).
 *
 * Shutdown (SIGTERM/SIGINT) is ordered and bounded: the API stops accepting,
 * the worker finishes or hands back its captures, connections close, logs flush.
 */
import { prepareAuth, startApiPart } from '@heapcap/api';
import { FlagError, parseFlags } from '@heapcap/cli';
import { runService, type RunServiceOptions, type ServiceDefinition } from '@heapcap/service';
import { startSchedulerPart, startWatchPart, startWorkerPart } from '@heapcap/worker';
import type { AuthMode } from '@heapcap/api';

export const SERVE_USAGE = `heapcap serve [--dev]: run the API and a capture worker in one process

  --dev    no authentication, loopback only (127.0.0.1); for a laptop, never for a shared host

Configuration: HEAPCAP_* variables (docs/configuration.md). Without HEAPCAP_TOKENS_FILE only --dev runs.
Needs Redis (HEAPCAP_REDIS_URL, default redis://127.0.0.1:6379).

Examples:
  heapcap serve --dev                                                  # a laptop: no tokens, loopback only
  HEAPCAP_TOKENS_FILE=./heapcap.tokens.yaml HEAPCAP_TARGETS_FILE=./heapcap.targets.yaml heapcap serve
`;

const DEV_BANNER = `
!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!
!!  heapcap serve --dev: AUTHENTICATION IS OFF                             !!
!!  Anyone who can reach this port can take heap snapshots (which contain  !!
!!  the target's secrets) and read them. Bound to loopback only.           !!
!!  For anything shared, set HEAPCAP_TOKENS_FILE and drop --dev.           !!
!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!
`;

/** Parsed flags of `heapcap serve`. */
export interface ServeFlags {
  dev: boolean;
  help: boolean;
}

/** Parse `heapcap serve` arguments; throws on unknown ones. */
export function parseServeArgs(argv: string[]): ServeFlags {
  try {
    const { values } = parseFlags(argv, { dev: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } }, 0);
    return { dev: values.dev === true, help: values.help === true };
  } catch (err) {
    if (err instanceof FlagError) throw new Error(`unknown argument "${err.arg}" for heapcap serve${err.suggestion}`, { cause: err });
    throw err;
  }
}

/** `heapcap serve`: the API and a worker on one bootstrap; refuses without auth unless `--dev` on loopback. */
function serveService(flags: ServeFlags, stderr: NodeJS.WritableStream): ServiceDefinition<AuthMode> {
  return {
    name: 'serve',
    async prepare(config) {
      const auth = await prepareAuth(config, { dev: flags.dev });
      if (auth.kind === 'dev') stderr.write(DEV_BANNER);
      return auth;
    },
    async start(ctx, auth) {
      const worker = await startWorkerPart(ctx);
      await startSchedulerPart(ctx);
      startWatchPart(ctx, worker.id);
      const api = await startApiPart(ctx, auth);
      stderr.write(`heapcap serving on ${api.url} (storage ${ctx.store.root}, ${auth.kind === 'dev' ? 'NO AUTH' : 'bearer tokens'}); Ctrl-C to stop\n`);
    },
  };
}

/** Run the service until a signal; resolves with the exit code. Writes operator messages to `stderr`. */
export async function runServe(argv: string[], env: Record<string, string | undefined>, stderr: NodeJS.WritableStream = process.stderr, options: Partial<RunServiceOptions> = {}): Promise<number> {
  let flags: ServeFlags;
  try {
    flags = parseServeArgs(argv);
  } catch (err) {
    stderr.write(`invalid_input: ${(err as Error).message}\n\n${SERVE_USAGE}`);
    return 2;
  }
  if (flags.help) {
    process.stdout.write(SERVE_USAGE);
    return 0;
  }
  return runService(serveService(flags, stderr), { env, stderr, ...options });
}
