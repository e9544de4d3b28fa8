/** Entry point of `heapcap serve` (the CLI runs this file): `node --import tsx services/serve/src/main.ts [--dev]`. */
import { runServe } from './serve.ts';

runServe(process.argv.slice(2), process.env).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`heapcap serve: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exitCode = 1;
  },
);
