/** `heapcap api` and `heapcap worker`: one service each, for deployments that run them apart. */
import { apiService } from '@heapcap/api';
import { runService } from '@heapcap/service';
import { workerService } from '@heapcap/worker';

const API_USAGE = 'heapcap api [--dev]: run the REST API alone (captures run in `heapcap worker` processes)\n';
const WORKER_USAGE = 'heapcap worker: run a capture worker alone (the API runs in `heapcap api` or `heapcap serve`)\n';

/** Refuse unknown arguments with the usage (exit 2); print the usage for --help (exit 0). */
function checkArgs(argv: string[], allowed: string[], usage: string): number | undefined {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(usage);
    return 0;
  }
  const bad = argv.find((a) => !allowed.includes(a));
  if (bad === undefined) return undefined;
  process.stderr.write(`invalid_input: unknown argument "${bad}"\n\n${usage}`);
  return 2;
}

/** Run `heapcap api ARGV` until a signal. */
export async function runApi(argv: string[], env: Record<string, string | undefined>): Promise<number> {
  const early = checkArgs(argv, ['--dev'], API_USAGE);
  if (early !== undefined) return early;
  return runService(apiService({ dev: argv.includes('--dev') }), { env, stderr: process.stderr });
}

/** Run `heapcap worker ARGV` until a signal. */
export async function runWorker(argv: string[], env: Record<string, string | undefined>): Promise<number> {
  const early = checkArgs(argv, [], WORKER_USAGE);
  if (early !== undefined) return early;
  return runService(workerService, { env, stderr: process.stderr });
}
