/** `heapcap status ID [--json]`: GET /v1/captures/ID. */
import { DEFAULT_API_URL } from '@heapcap/config';
import type { CliIo } from './status-client.ts';
import { openLine } from './open-line.ts';
import { EXIT } from './exit-codes.ts';
import { apiTargetFrom, callApi, reportRestError, RestError } from './status-client.ts';
import { formatRecord } from './status-format.ts';
import { parseFlags } from './flags.ts';

export const STATUS_USAGE = `heapcap status ID [--json]: show one capture (status, phase, timings, artifact)

Examples:
  heapcap status 01M7ZHH716228KMD1V49A92AEZ
  heapcap status 01M7ZHH716228KMD1V49A92AEZ --json | jq .capture.timings

API: HEAPCAP_API_URL (default ${DEFAULT_API_URL}), token: HEAPCAP_TOKEN.
`;

/** Run `heapcap status`; returns the exit code (0 when the API answered). */
export async function statusMain(argv: string[], env: Record<string, string | undefined>, io: CliIo = { stdout: process.stdout, stderr: process.stderr }): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    io.stdout.write(STATUS_USAGE);
    return EXIT.ok;
  }
  let flags;
  try {
    flags = parseFlags(argv, { json: { type: 'boolean' } }, 1);
  } catch {
    flags = undefined;
  }
  const id = flags?.positionals[0];
  if (flags === undefined || id === undefined) {
    io.stderr.write(`invalid_input: heapcap status takes one capture id\n\n${STATUS_USAGE}`);
    return EXIT.usage;
  }
  const json = flags.values.json === true;
  try {
    const api = apiTargetFrom(env);
    const res = await callApi(api, 'GET', `/v1/captures/${encodeURIComponent(id)}`, undefined, 30_000);
    const data = res.body as { capture: Parameters<typeof formatRecord>[0] };
    io.stdout.write(json ? `${JSON.stringify(data, null, 2)}\n` : `${formatRecord(data.capture)}\n${openLine(api.url, { capture: data.capture.id })}`);
    return EXIT.ok;
  } catch (err) {
    if (!(err instanceof RestError)) throw err;
    return reportRestError(io, err);
  }
}
