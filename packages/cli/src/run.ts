/**
 * The `heapcap` command's dispatcher: parses configuration once, then runs one
 * command. The service commands (`serve`, `api`, `worker`) are composition
 * roots that live in services/; the entry point (services/serve/src/heapcap.ts)
 * passes them in, so this package never imports a service and `heapcap capture`
 * never loads Fastify or BullMQ.
 */
import { HEAPCAP_VERSION, parseConfigAtEntry, type HeapcapConfig } from '@heapcap/config';
import { captureMain } from './capture-main.ts';
import { statusMain } from './status.ts';
import { triggerMain } from './trigger.ts';
import { analyzeMain } from './analyze.ts';
import { diffMain } from './diff.ts';
import { schedulesMain } from './schedules.ts';
import { huntMain } from './hunt.ts';
import { targetsMain } from './targets.ts';
import { capturesMain } from './captures.ts';
import { profilesMain } from './profiles.ts';
import { watchMain } from './watch.ts';
import { EXIT } from './exit-codes.ts';
import { bashCompletion, COMMANDS, zshCompletion } from './completion.ts';
import { didYouMean } from '@heapcap/config';

const USAGE = `heapcap ${HEAPCAP_VERSION}: V8 heap snapshots from running Node.js processes and Chromium pages

Usage:
  heapcap capture TARGET [options]   capture one snapshot now (see heapcap capture --help)
  heapcap serve [--dev]              run the API and a worker (needs Redis; --dev: no auth, loopback only)
  heapcap api [--dev]                run the API alone (split deployments)
  heapcap worker                     run a capture worker alone (split deployments)
  heapcap trigger TARGET [--wait S]  ask the API for a capture (HEAPCAP_API_URL, HEAPCAP_TOKEN)
  heapcap status ID                  show a capture's record
  heapcap targets list|show|add|remove                          the registered targets
  heapcap captures list|show|download|pin|unpin|delete|analyse  captures taken through the API
  heapcap profiles list|show|download TARGET|ID                 where live memory was allocated (sampling profiles)
  heapcap watch list|show|create|pause|resume|delete            captures taken when memory climbs
  heapcap hunt start|show            hunt a leak through the API: suspects that survived three snapshots
  heapcap analyze FILE [--json]      retained sizes and retainer paths of a local snapshot file
  heapcap diff BASE HEAD [--json]    what grew between two snapshot files, or two capture ids (API)
  heapcap schedules list|show|create|pause|resume|delete   periodic captures (see heapcap schedules --help)
  heapcap completion bash|zsh        a shell completion script: source <(heapcap completion bash)
  heapcap version

Examples:
  heapcap capture --node 127.0.0.1:9229 --out ./captures     # one snapshot of a local Node.js process
  heapcap serve --dev                                         # the API and a worker on a laptop
  heapcap trigger checkout-1 --wait 60                        # a capture through the API
  heapcap captures download ID                                # the file to load in DevTools (Memory → Load)
  heapcap diff BASE_ID HEAD_ID                                # what grew between two captures

Configuration comes from HEAPCAP_* environment variables (docs/configuration.md).
Exit codes: 0 ok, 1 internal, 2 invalid input, 3 target, 4 snapshot, 5 storage, 6 refused,
7 unavailable (API unreachable or its Redis down: retry), 130 cancelled.
Every command takes --help (with examples); the API commands take --json.
`;

/** A service command: gets its arguments and the environment, resolves with the exit code. */
export type ServiceCommand = (argv: string[], env: Record<string, string | undefined>) => Promise<number>;

/** The service commands the entry point wires in. */
export interface ServiceCommands {
  serve: ServiceCommand;
  api: ServiceCommand;
  worker: ServiceCommand;
}

/** The client commands' view of the parsed configuration. */
function clientEnv(config: HeapcapConfig): Record<string, string | undefined> {
  return { HEAPCAP_API_URL: config.apiUrl, HEAPCAP_TOKEN: config.token };
}

/** Run `heapcap ARGV`; resolves with the exit code. */
export async function runCli(argv: string[], env: Record<string, string | undefined>, services: ServiceCommands): Promise<number> {
  const [command, ...rest] = argv;
  if (command === 'serve' || command === 'api' || command === 'worker') {
    // The service parses the configuration itself (with its own messages and exit codes).
    return services[command](rest, env);
  }
  const config = parseConfigAtEntry(env, (text) => process.stderr.write(text));
  if (config === undefined) return EXIT.usage;
  switch (command) {
    case 'capture':
      return captureMain(rest, config, env);
    case 'trigger':
      return triggerMain(rest, clientEnv(config));
    case 'status':
      return statusMain(rest, clientEnv(config));
    case 'analyze':
      return analyzeMain(rest);
    case 'diff':
      return diffMain(rest, clientEnv(config));
    case 'schedules':
      return schedulesMain(rest, clientEnv(config));
    case 'hunt':
      return huntMain(rest, clientEnv(config));
    case 'targets':
      return targetsMain(rest, clientEnv(config));
    case 'captures':
      return capturesMain(rest, clientEnv(config));
    case 'profiles':
      return profilesMain(rest, clientEnv(config));
    case 'watch':
      return watchMain(rest, clientEnv(config));
    case 'completion': {
      const shell = rest[0];
      if (shell === 'bash' || shell === 'zsh') {
        process.stdout.write(shell === 'bash' ? bashCompletion() : zshCompletion());
        return EXIT.ok;
      }
      const help = shell === '--help' || shell === '-h';
      (help ? process.stdout : process.stderr).write(
        `${help ? '' : `invalid_input: heapcap completion takes bash or zsh${shell === undefined ? '' : `, not "${shell}"${didYouMean(shell, ['bash', 'zsh'])}`}\n\n`}heapcap completion bash|zsh: a completion script for the shell

Examples:
  source <(heapcap completion bash)                      # this shell; add the line to ~/.bashrc to keep it
  heapcap completion zsh > "\${fpath[1]}/_heapcap"        # zsh, after compinit
`,
      );
      return help ? EXIT.ok : EXIT.usage;
    }
    case 'version':
    case '--version':
      process.stdout.write(`${HEAPCAP_VERSION}\n`);
      return EXIT.ok;
    case undefined:
    case 'help':
    case '--help':
    case '-h':
      process.stdout.write(USAGE);
      return command === undefined ? EXIT.usage : EXIT.ok;
    default:
      process.stderr.write(`invalid_input: unknown command "${command}"${didYouMean(command, COMMANDS)}\n\n${USAGE}`);
      return EXIT.usage;
  }
}
