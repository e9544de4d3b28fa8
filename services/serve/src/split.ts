/** `heapcap api` and `heapcap worker`: one service each, for deployments that run them apart. */
import { apiService } from '@heapcap/api';
import { FlagError, parseFlags, type FlagSpec, type Flags } from '@heapcap/cli';
import { runService } from '@heapcap/service';
import { workerService } from '@heapcap/worker';

const API_USAGE = `heapcap api [--dev]: run the REST API alone (captures run in \`heapcap worker\` processes)

Examples:
  HEAPCAP_TOKENS_FILE=./heapcap.tokens.yaml HEAPCAP_REDIS_URL=redis://redis:6379 heapcap api
`;
const WORKER_USAGE = `heapcap worker: run a capture worker alone (the API runs in \`heapcap api\` or \`heapcap serve\`)

Examples:
  HEAPCAP_REDIS_URL=redis://redis:6379 HEAPCAP_STORAGE=s3://heapcap/captures heapcap worker
  HEAPCAP_WORKER_PLACEMENTS=host-a heapcap worker        # captures the targets placed on host-a (node-pid targets)
`;

/** Refuse unknown arguments with the usage (exit 2); print the usage for --help (exit 0); else the flags. */
function checkArgs<S extends FlagSpec>(argv: string[], spec: S, usage: string): { exit: number } | { values: Flags<S>['values'] } {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(usage);
    return { exit: 0 };
  }
  try {
    return { values: parseFlags(argv, spec, 0).values };
  } catch (err) {
    if (!(err instanceof FlagError)) throw err;
    process.stderr.write(`invalid_input: unknown argument "${err.arg}"${err.suggestion}\n\n${usage}`);
    return { exit: 2 };
  }
}

/** Run `heapcap api ARGV` until a signal. */
export async function runApi(argv: string[], env: Record<string, string | undefined>): Promise<number> {
  const args = checkArgs(argv, { dev: { type: 'boolean' } }, API_USAGE);
  if ('exit' in args) return args.exit;
  return runService(apiService({ dev: args.values.dev === true }), { env, stderr: process.stderr });
}

/** Run `heapcap worker ARGV` until a signal. */
export async function runWorker(argv: string[], env: Record<string, string | undefined>): Promise<number> {
  const args = checkArgs(argv, {}, WORKER_USAGE);
  if ('exit' in args) return args.exit;
  return runService(workerService, { env, stderr: process.stderr });
}
