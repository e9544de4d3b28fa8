/** `heapcap trigger TARGET [--reason TEXT] [--wait SECONDS] [--force] [--sampling DURATION] [--idempotency-key KEY] [--json]`: POST /v1/captures. */
import { DEFAULT_API_URL } from '@heapcap/config';
import type { CliIo } from './status-client.ts';
import { openLine } from './open-line.ts';
import { EXIT, exitCodeForApiError } from './exit-codes.ts';
import { apiTargetFrom, apiTargetOrUndefined, callApi, reportRestError, RestError, type ApiTarget } from './status-client.ts';
import { formatRecord } from './status-format.ts';
import { samplingSeconds } from './capture-args.ts';
import { lastValue, parseFlags } from './flags.ts';
import { ProgressDisplay, RecordProgress, type RecordProgressView } from './progress.ts';
import { randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';

export const TRIGGER_USAGE = `heapcap trigger TARGET [options]: ask the heapcap API for a capture of a registered target

  --reason TEXT     why (audit log, manifest)
  --wait SECONDS    block until the capture ends (max 600); exit code reflects its outcome;
                    shows the phase, its seconds and the bytes/s on stderr while it runs
  --quiet           no progress output on stderr while --wait runs (errors still go there)
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
  /** `--quiet`: no progress display while `--wait` runs. */
  quiet: boolean;
}

/** The options `heapcap trigger` takes. */
export const TRIGGER_FLAGS = { reason: { type: 'string' }, wait: { type: 'string' }, sampling: { type: 'string' }, force: { type: 'boolean' }, json: { type: 'boolean' }, quiet: { type: 'boolean' }, 'idempotency-key': { type: 'string' } } as const;

/** Parse arguments; throws Error with a usage message. */
export function parseTriggerArgs(argv: string[]): TriggerArgs {
  const { values, positionals } = parseFlags(argv, TRIGGER_FLAGS, 1);
  const out: TriggerArgs = { target: positionals[0] ?? '', reason: lastValue(values.reason), waitSeconds: undefined, force: values.force === true, json: values.json === true, samplingSeconds: undefined, idempotencyKey: lastValue(values['idempotency-key']), quiet: values.quiet === true };
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
  capture: Parameters<typeof formatRecord>[0] & RecordProgressView;
  coalesced: boolean;
  replayed: boolean;
}

/** Exit code for a final record: 0 succeeded, else the code of its error. */
export function exitCodeForRecord(r: CaptureBody['capture']): number {
  if (r.status === 'succeeded' || r.status === 'queued' || r.status === 'running') return EXIT.ok;
  if (r.status === 'cancelled') return EXIT.cancelled;
  return exitCodeForApiError(r.error?.code);
}

function isFinal(r: CaptureBody['capture']): boolean {
  return r.status !== 'queued' && r.status !== 'running';
}

const POLL_MS = 1000;

/**
 * `--wait`: GET the record every second until it is final or the wait is over,
 * showing its phase, seconds and bytes (progress.ts) on stderr. A token that may
 * not read captures (403) gets the API's own wait for the rest of the time, with
 * no progress. A failed GET (the API busy or restarting) is tried again the next second.
 */
async function follow(
  api: ApiTarget,
  io: CliIo,
  record: CaptureBody['capture'],
  waitSeconds: number,
  post: (wait: number) => Promise<{ data: CaptureBody }>,
  quiet: boolean,
): Promise<{ record: CaptureBody['capture'] }> {
  const deadline = Date.now() + waitSeconds * 1000;
  const stderr = io.stderr as NodeJS.WritableStream & { isTTY?: boolean };
  const display = quiet ? undefined : new ProgressDisplay(io.stderr, stderr.isTTY === true);
  const live = new RecordProgress();
  const show = (r: CaptureBody['capture']): void => {
    const state = live.state(r);
    if (state !== undefined) display?.set(state);
  };
  let last = record;
  try {
    show(last);
    while (!isFinal(last) && Date.now() < deadline) {
      await delay(Math.min(POLL_MS, deadline - Date.now()));
      try {
        const res = await callApi(api, 'GET', `/v1/captures/${encodeURIComponent(last.id)}`, undefined, Math.max(1000, Math.min(30_000, deadline - Date.now())));
        last = (res.body as { capture: CaptureBody['capture'] }).capture;
        show(last);
      } catch (err) {
        if (!(err instanceof RestError)) throw err;
        if (err.status === 403) {
          display?.stop();
          if (!quiet) io.stderr.write(`(no progress: the token may not read captures (scope captures:read); waiting for the API's answer)\n`);
          const rest = Math.max(0, Math.ceil((deadline - Date.now()) / 1000));
          return { record: (await post(rest)).data.capture };
        }
        if (err.status === 404) throw err;
      }
    }
    return { record: last };
  } finally {
    display?.stop();
  }
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
    const body = {
      target: args.target,
      force: args.force,
      reason: args.reason,
      options: args.samplingSeconds === undefined ? undefined : { kind: 'sampling', samplingSeconds: args.samplingSeconds },
    };
    const waitSeconds = args.waitSeconds ?? 0;
    // --wait: the CLI follows the record itself (GET every second) to show its phase; the key makes the
    // fallback to the API's own wait (a token without captures:read) return this capture, not a new one.
    const key = args.idempotencyKey ?? (waitSeconds > 0 ? `heapcap-cli-${randomUUID()}` : undefined);
    const headers: Record<string, string> = key === undefined ? {} : { 'idempotency-key': key };
    const post = async (wait: number): Promise<{ status: number; data: CaptureBody }> => {
      // The API holds the request up to `wait` seconds; allow for the round trip on top.
      const res = await callApi(api, 'POST', `/v1/captures${args.waitSeconds === undefined ? '' : `?wait=${wait}`}`, body, (wait + 30) * 1000, headers);
      return { status: res.status, data: res.body as CaptureBody };
    };
    const first = await post(0);
    const data = { ...first.data };
    let status = first.status;
    if (waitSeconds > 0 && !isFinal(data.capture)) {
      const followed = await follow(api, io, data.capture, waitSeconds, post, args.quiet);
      data.capture = followed.record;
      status = isFinal(followed.record) ? 200 : 202;
    }
    if (args.json) io.stdout.write(`${JSON.stringify(data, null, 2)}\n`);
    else {
      const how = data.coalesced ? 'joined the capture already in progress' : data.replayed ? 'same request as before' : status === 202 ? 'queued' : 'done';
      io.stdout.write(`${formatRecord(data.capture)}\n  (${how}${args.waitSeconds !== undefined && status === 202 ? `; still ${data.capture.status} after ${args.waitSeconds} s: heapcap status ${data.capture.id}` : ''})\n`);
      io.stdout.write(openLine(api.url, { capture: data.capture.id }));
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
