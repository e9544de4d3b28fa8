#!/usr/bin/env node
/** The `heapcap` command: entry point. Parses configuration once, then dispatches. */
import { parseConfigAtEntry, type HeapcapConfig } from '@heapcap/config';
import { captureMain } from './capture-main.ts';
import { serveMain } from './serve.ts';
import { statusMain } from './status.ts';
import { triggerMain } from './trigger.ts';
import { analyzeMain } from './analyze.ts';
import { diffMain } from './diff.ts';
import { EXIT } from './exit-codes.ts';
import { HEAPCAP_VERSION } from './version.ts';

const USAGE = `heapcap ${HEAPCAP_VERSION}: V8 heap snapshots from running Node.js processes and Chromium pages

Usage:
  heapcap capture TARGET [options]   capture one snapshot now (see heapcap capture --help)
  heapcap serve [--dev]              run the API and a worker (needs Redis; --dev: no auth, loopback only)
  heapcap trigger TARGET [--wait S]  ask the API for a capture (HEAPCAP_API_URL, HEAPCAP_TOKEN)
  heapcap status ID                  show a capture's record
  heapcap analyze FILE [--json]      retained sizes and retainer paths of a local snapshot file
  heapcap diff BASE HEAD [--json]    what grew between two local snapshot files
  heapcap version

Configuration comes from HEAPCAP_* environment variables (docs/configuration.md).
Exit codes: 0 ok, 1 internal, 2 invalid input, 3 target, 4 snapshot, 5 storage, 6 refused, 130 cancelled.
`;

/** The client commands' view of the parsed configuration. */
function clientEnv(config: HeapcapConfig): Record<string, string | undefined> {
  return { HEAPCAP_API_URL: config.apiUrl, HEAPCAP_TOKEN: config.token };
}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  const config = parseConfigAtEntry(process.env, (text) => process.stderr.write(text));
  if (config === undefined) return EXIT.usage;
  switch (command) {
    case 'capture':
      return captureMain(rest, config, process.env);
    case 'serve':
      return serveMain(rest);
    case 'trigger':
      return triggerMain(rest, clientEnv(config));
    case 'status':
      return statusMain(rest, clientEnv(config));
    case 'analyze':
      return analyzeMain(rest);
    case 'diff':
      return diffMain(rest);
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
      process.stderr.write(`invalid_input: unknown command "${command}"\n\n${USAGE}`);
      return EXIT.usage;
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`internal: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n  check: this is a bug in heapcap; please report it with the command you ran\n`);
    process.exitCode = EXIT.internal;
  },
);
