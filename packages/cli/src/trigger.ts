/** `heapcap trigger TARGET [--reason TEXT] [--wait SECONDS] [--force] [--sampling DURATION] [--idempotency-key KEY] [--json]`: POST /v1/captures. */
import { DEFAULT_API_URL } from '@heapcap/config';
import type { CliIo } from './status-client.ts';
import { EXIT, exitCodeForApiError } from './exit-codes.ts';
import { apiTargetFrom, apiTargetOrUndefined, callApi, reportRestError, RestError } from './status-client.ts';
import { formatRecord } from './status-format.ts';
import { samplingSeconds } from './capture-args.ts';
import { lastValue, parseFlags } from './flags.ts';

export const TRIGGER_USAGE = `heapcap trigger TARGET [options]: ask the heapcap API for a capture of a registered target

  --reason TEXT     why (audit log, manifest)
  --wait SECONDS    block until the capture ends (max 600); exit code reflects its outcome
  --force           a new capture even if one of TARGET is queued or running
  --sampling DURATION  an allocation sampling profile over DURATION (1s-600s, e.g. 30s)
                    instead of a heap snapshot (options.kind "sampling")
  --idempotency-key KEY  sent as the Idempotency-Key header: the same KEY (per token,
                    within 24 h) returns the first request's capture instead of a new one,
                    so a retry after a timeout or a 503 never captures twice
  --json            print the API's JSON

Examples:
  heapcap trigger checkout-1 --wait 60 --reason "OOM alert #4711"
  heapcap trigger checkout-1 --sampling 30s --wait 90
  heapcap trigger checkout-1 --json | jq -r .capture.id
  heapcap trigger checkout-1 --idempotency-key "incident-4711" --wait 60

API: HEAPCAP_API_URL (default ${DEFAULT_API_URL}), token: HEAPCAP_TOKEN.
`;

/** Parsed `heapcap trigger` arguments. */
export interface TriggerArgs {
  target: string;
  reason: string | undefined;
  waitSeconds: number | undefined;
  force: boolean;
  json: boolean;
  /** `--sampling DURATION`: seconds of an allocation sampling profile. */
  samplingSeconds: number | undefined;
  /** `--idempotency-key KEY`: the Idempotency-Key header. */
  idempotencyKey: string | undefined;
}

/** The options `heapcap trigger` takes. */
export const TRIGGER_FLAGS = { reason: { type: 'string' }, wait: { type: 'string' }, sampling: { type: 'string' }, force: { type: 'boolean' }, json: { type: 'boolean' }, 'idempotency-key': { type: 'string' } } as const;

/** Parse arguments; throws Error with a usage message. */
export function parseTriggerArgs(argv: string[]): TriggerArgs {
  const { values, positionals } = parseFlags(argv, TRIGGER_FLAGS, 1);
  const out: TriggerArgs = { target: positionals[0] ?? '', reason: lastValue(values.reason), waitSeconds: undefined, force: values.force === true, json: values.json === true, samplingSeconds: undefined, idempotencyKey: lastValue(values['idempotency-key']) };
  // The API's rule (1-255 printable ASCII), said before a request is made.
  if (out.idempotencyKey !== undefined && !/^[\x21-\x7e]{1,255}$/.test(out.idempotencyKey)) throw new Error(`--idempotency-key takes 1-255 printable ASCII characters without spaces, got "${out.idempotencyKey}"`);
  const wait = lastValue(values.wait);
  if (wait !== undefined) {
    const n = Number(wait);
    if (!Number.isInteger(n) || n < 0 || n > 600) throw new Error(`--wait takes whole seconds 0..600, got "${wait}"`);
    out.waitSeconds = n;
  }
  const sampling = lastValue(values.sampling);
  if (sampling !== undefined) out.samplingSeconds = samplingSeconds(sampling, '--sampling');
  if (out.target === '') throw new Error('which target? heapcap trigger TARGET');
  return out;
}

interface CaptureBody {
  capture: Parameters<typeof formatRecord>[0];
  coalesced: boolean;
  replayed: boolean;
}

/** Exit code for a final record: 0 succeeded, else the code of its error. */
export function exitCodeForRecord(r: CaptureBody['capture']): number {
  if (r.status === 'succeeded' || r.status === 'queued' || r.status === 'running') return EXIT.ok;
  if (r.status === 'cancelled') return EXIT.cancelled;
  return exitCodeForApiError(r.error?.code);
}

/** Run `heapcap trigger`; returns the exit code. */
export async function triggerMain(argv: string[], env: Record<string, string | undefined>, io: CliIo = { stdout: process.stdout, stderr: process.stderr }): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    io.stdout.write(TRIGGER_USAGE);
    return EXIT.ok;
  }
  let args: TriggerArgs;
  try {
    args = parseTriggerArgs(argv);
  } catch (err) {
    io.stderr.write(`invalid_input: ${(err as Error).message}\n\n${TRIGGER_USAGE}`);
    return EXIT.usage;
  }
  try {
    const api = apiTargetFrom(env);
    const query = args.waitSeconds === undefined ? '' : `?wait=${args.waitSeconds}`;
    const body = {
      target: args.target,
      force: args.force,
      reason: args.reason,
      options: args.samplingSeconds === undefined ? undefined : { kind: 'sampling', samplingSeconds: args.samplingSeconds },
    };
    // The API holds the request up to --wait seconds; allow for the round trip on top.
    const headers: Record<string, string> = args.idempotencyKey === undefined ? {} : { 'idempotency-key': args.idempotencyKey };
    const res = await callApi(api, 'POST', `/v1/captures${query}`, body, ((args.waitSeconds ?? 0) + 30) * 1000, headers);
    const data = res.body as CaptureBody;
    if (args.json) io.stdout.write(`${JSON.stringify(data, null, 2)}\n`);
    else {
      const how = data.coalesced ? 'joined the capture already in progress' : data.replayed ? 'same request as before' : res.status === 202 ? 'queued' : 'done';
      io.stdout.write(`${formatRecord(data.capture)}\n  (${how}${args.waitSeconds !== undefined && res.status === 202 ? `; still ${data.capture.status} after ${args.waitSeconds} s: heapcap status ${data.capture.id}` : ''})\n`);
    }
    return args.waitSeconds === undefined ? EXIT.ok : exitCodeForRecord(data.capture);
  } catch (err) {
    if (!(err instanceof RestError)) throw err;
    const code = await reportRestError(io, err, apiTargetOrUndefined(env), args.target);
    // The API (or the network) may have taken the request before failing: a retry with a key cannot capture twice.
    if (code === EXIT.unavailable) io.stderr.write(`  retry: heapcap trigger ${args.target} … --idempotency-key ${args.idempotencyKey ?? 'KEY'} (the same KEY on every retry returns one capture)\n`);
    return code;
  }
}
