/** Flags of `heapcap capture`, validated into a typed command. */
import { parseArgs } from 'node:util';
import { CaptureError } from '@heapcap/errors';
import { parseArgsMessage } from './flags.ts';
import { definedOnly, type EndpointSpec, type SnapshotTransport, type WarmMode } from '@heapcap/capture';
import { parseDuration, parseStorageUrl, RedactModeSchema, type RedactMode, type S3Settings, type StorageConfig } from '@heapcap/config';

/** A validated `heapcap capture` invocation. */
export interface CaptureCommand {
  endpoint: EndpointSpec;
  targetId: string;
  storage: StorageConfig;
  warm: WarmMode;
  gc: boolean;
  gzip: boolean;
  json: boolean;
  quiet: boolean;
  reason: string | undefined;
  exposeInternals: boolean;
  captureNumericValue: boolean;
  memoryCeilingBytes: number;
  spillDir: string | undefined;
  snapshotTimeoutMs: number | undefined;
  /** How the snapshot bytes travel. */
  transport: SnapshotTransport;
  pipeDir: string | undefined;
  /** `strings`: every string value replaced before any byte is spilled or stored. */
  redact: RedactMode;
  /** Capture even when the headroom gate refuses. */
  force: boolean;
  /** Print the preflight facts and the headroom decision; take nothing. */
  dryRun: boolean;
  /** The target's memory limit when it cannot tell (or a tighter budget). */
  memoryLimitBytes: number | undefined;
  /** `--sampling DURATION`: an allocation sampling profile instead of a snapshot. */
  sampling: { seconds: number; intervalBytes: number | undefined } | undefined;
}

export const CAPTURE_USAGE = `Usage: heapcap capture (--node HOST:PORT | --ws URL | --chromium HOST:PORT | --pid N) [options]

Target (exactly one):
  --node HOST:PORT        a Node.js inspector (--inspect) address
  --ws URL                an inspector WebSocket URL (ws://HOST:PORT/UUID)
  --chromium HOST:PORT    a browser's remote debugging address, with
      --url-pattern RE    page URL regular expression
      --title-pattern RE  page title regular expression
      --target-type T     page (default) | worker | service_worker | shared_worker
      --pick first        when several targets match, take the first the browser
                          lists (default: refuse with target_ambiguous)
  --pid N                 a local Node.js process started without --inspect
      --port N            its inspector port after SIGUSR1 (default 9229)

Options:
  --out DIR|s3://BUCKET/PREFIX   where to store (default: HEAPCAP_STORAGE or ./data/captures)
  --s3-endpoint URL       S3-compatible endpoint (default: HEAPCAP_S3_ENDPOINT)
  --target-id ID          id used in artifact keys (default: derived from the target)
  --warm / --no-warm      always / never warm script line ends (default: auto, by V8 version)
  --gc                    collect garbage before the snapshot
  --no-gzip               store plain JSON
  --expose-internals      include V8 internals (where supported)
  --capture-numeric-value include numeric values (where supported)
  --memory-ceiling MiB    snapshot bytes held in memory before spilling (default 16)
  --spill-dir DIR         where to spill (default: the OS temp dir)
  --transport T           auto (default) | cdp | pipe: how the snapshot bytes travel; pipe has a
                          Node.js target on this host write them into a FIFO with its own
                          writeHeapSnapshot() (a shorter pause); auto uses it where it can
  --pipe-dir DIR          where the FIFO is made (default: the OS temp dir; the target must see it)
  --redact MODE           none | strings: strings replaces every string value (class, property and
                          function names stay) before any byte is spilled, summarized or stored
                          (default: HEAPCAP_REDACT, else none)
  --timeout SECONDS       deadline for the snapshot itself (default 1800)
  --reason TEXT           why (goes into the manifest)
  --json                  print the manifest as JSON on stdout
  --quiet                 no progress output

Allocation sampling profile (instead of a snapshot):
  --sampling DURATION     sample allocations for DURATION (1s-600s, e.g. 30s, 2m) and
                          store <id>.heapprofile[.gz] (load it in DevTools' Memory tab);
                          costs the target little, so no headroom check
  --sampling-interval BYTES  average bytes allocated between samples (default 32768)

Headroom (a snapshot makes the target's RSS grow ~7-20x its heap used, outside the JS heap):
  --dry-run               print the preflight facts and the decision; take nothing
                          (exit 0 if it would capture, 6 if it would be refused)
  --force                 capture even when the estimate exceeds the available memory
  --memory-limit MiB      the target's memory limit, when it cannot tell (a remote browser)

Examples:
  heapcap capture --node 127.0.0.1:9229 --out ./captures
  heapcap capture --pid 4242 --gc --reason "after the load test"
  heapcap capture --chromium 127.0.0.1:9222 --url-pattern "shop\\.example" --out s3://heapcap/captures
  heapcap capture --node 10.0.3.7:9229 --dry-run           # would it fit? (headroom)
  heapcap capture --node 127.0.0.1:9229 --sampling 30s     # where memory is allocated, not what holds it
`;

/** The options `heapcap capture` takes. */
export const CAPTURE_OPTIONS = {
  node: { type: 'string' },
  ws: { type: 'string' },
  chromium: { type: 'string' },
  'url-pattern': { type: 'string' },
  'title-pattern': { type: 'string' },
  'target-type': { type: 'string' },
  pick: { type: 'string' },
  pid: { type: 'string' },
  port: { type: 'string' },
  out: { type: 'string' },
  's3-endpoint': { type: 'string' },
  'target-id': { type: 'string' },
  warm: { type: 'boolean' },
  'no-warm': { type: 'boolean' },
  gc: { type: 'boolean' },
  'no-gzip': { type: 'boolean' },
  transport: { type: 'string' },
  'pipe-dir': { type: 'string' },
  redact: { type: 'string' },
  'expose-internals': { type: 'boolean' },
  'capture-numeric-value': { type: 'boolean' },
  'memory-ceiling': { type: 'string' },
  'spill-dir': { type: 'string' },
  timeout: { type: 'string' },
  reason: { type: 'string' },
  json: { type: 'boolean' },
  quiet: { type: 'boolean' },
  'dry-run': { type: 'boolean' },
  force: { type: 'boolean' },
  'memory-limit': { type: 'string' },
  sampling: { type: 'string' },
  'sampling-interval': { type: 'string' },
} as const;

/** Parse `heapcap capture` argv (without the subcommand). Throws CaptureError('invalid_input'). */
export function parseCaptureArgs(argv: string[], defaults: { storage: StorageConfig; memoryCeilingBytes: number; spillDir: string | undefined; s3?: S3Settings; transport?: SnapshotTransport; pipeDir?: string | undefined; redact?: RedactMode }): CaptureCommand {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      strict: true,
      allowPositionals: false,
      options: CAPTURE_OPTIONS,
    }));
  } catch (err) {
    throw invalid(parseArgsMessage(err, CAPTURE_OPTIONS));
  }
  const chosen = (['node', 'ws', 'chromium', 'pid'] as const).filter((k) => values[k] !== undefined);
  if (chosen.length !== 1) throw invalid(chosen.length === 0 ? 'no target given' : `choose one target, not ${chosen.map((c) => `--${c}`).join(' and ')}`);
  const which = chosen[0]!;
  if (values['url-pattern'] !== undefined || values['title-pattern'] !== undefined || values['target-type'] !== undefined || values.pick !== undefined) {
    if (which !== 'chromium') throw invalid('--url-pattern, --title-pattern, --target-type and --pick go with --chromium');
  }
  if (values.pick !== undefined && values.pick !== 'first' && values.pick !== 'only') throw invalid(`--pick "${values.pick}" is not one of first, only`);
  // Bad input is reported as such before anything touches the network (the
  // engine compiles the patterns only after reaching the browser).
  for (const flag of ['url-pattern', 'title-pattern'] as const) checkPattern(values[flag], flag);
  if (values.port !== undefined && which !== 'pid') throw invalid('--port goes with --pid');
  if (values.warm === true && values['no-warm'] === true) throw invalid('--warm and --no-warm contradict each other');

  let endpoint: EndpointSpec;
  let derivedId: string;
  switch (which) {
    case 'node':
      endpoint = { kind: 'node', inspect: values.node! };
      derivedId = `node-${values.node!}`;
      break;
    case 'ws':
      endpoint = { kind: 'node', ws: values.ws! };
      derivedId = `node-${safeHost(values.ws!)}`;
      break;
    case 'chromium': {
      const type = values['target-type'];
      if (type !== undefined && !['page', 'worker', 'service_worker', 'shared_worker'].includes(type)) {
        throw invalid(`--target-type "${type}" is not one of page, worker, service_worker, shared_worker`);
      }
      endpoint = {
        kind: 'chromium',
        browser: values.chromium!,
        // Only the flags given: the spec is compared and shown as the operator wrote it.
        select: definedOnly({ urlPattern: values['url-pattern'], titlePattern: values['title-pattern'], type: type as 'page' | undefined, pick: values.pick as 'first' | 'only' | undefined }),
      };
      derivedId = `chromium-${values.chromium!}`;
      break;
    }
    case 'pid': {
      const pid = positiveInt(values.pid!, '--pid');
      endpoint = { kind: 'node-pid', pid, ...definedOnly({ port: values.port === undefined ? undefined : positiveInt(values.port, '--port', 65535) }) };
      derivedId = `pid-${pid}`;
      break;
    }
  }

  let storage = defaults.storage;
  // --out s3://… keeps every HEAPCAP_S3_* setting (encryption, storage class, part size…); --s3-endpoint overrides the endpoint.
  const s3Endpoint = values['s3-endpoint'] ?? defaults.s3?.endpoint;
  if (values.out !== undefined) {
    try {
      storage = parseStorageUrl(values.out, { ...defaults.s3, endpoint: s3Endpoint });
    } catch (err) {
      throw invalid(`--out: ${(err as Error).message}`);
    }
  } else if (storage.kind === 's3' && values['s3-endpoint'] !== undefined) {
    storage = { ...storage, endpoint: values['s3-endpoint'], forcePathStyle: true };
  }

  const sampling = samplingOf(values);
  const targetId = values['target-id'] ?? derivedId.replace(/[^A-Za-z0-9._-]+/g, '-').replace(/^[^A-Za-z0-9]+/, '').slice(0, 128);
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/.test(targetId)) {
    throw invalid(`--target-id "${targetId}" must be 1-128 characters of letters, digits, '.', '_' or '-'`);
  }
  return {
    endpoint,
    targetId,
    storage,
    warm: values.warm === true ? 'always' : values['no-warm'] === true ? 'never' : 'auto',
    gc: values.gc === true,
    gzip: values['no-gzip'] !== true,
    json: values.json === true,
    quiet: values.quiet === true,
    reason: values.reason,
    exposeInternals: values['expose-internals'] === true,
    captureNumericValue: values['capture-numeric-value'] === true,
    memoryCeilingBytes: values['memory-ceiling'] === undefined ? defaults.memoryCeilingBytes : positiveInt(values['memory-ceiling'], '--memory-ceiling', 4096) * 1024 * 1024,
    spillDir: values['spill-dir'] ?? defaults.spillDir,
    transport: transportOf(values.transport, defaults.transport ?? 'auto'),
    pipeDir: values['pipe-dir'] ?? defaults.pipeDir,
    redact: redactOf(values.redact, defaults.redact ?? 'none'),
    snapshotTimeoutMs: values.timeout === undefined ? undefined : positiveInt(values.timeout, '--timeout', 86_400) * 1000,
    force: values.force === true,
    dryRun: values['dry-run'] === true,
    memoryLimitBytes: values['memory-limit'] === undefined ? undefined : positiveInt(values['memory-limit'], '--memory-limit', 16 * 1024 * 1024) * 1024 * 1024,
    sampling,
  };
}

/** Flags that only mean something for a heap snapshot. */
const SNAPSHOT_ONLY = ['warm', 'no-warm', 'gc', 'expose-internals', 'capture-numeric-value', 'memory-ceiling', 'spill-dir', 'transport', 'pipe-dir', 'redact', 'timeout', 'dry-run', 'force', 'memory-limit'] as const;

/** `--sampling DURATION [--sampling-interval BYTES]`, or undefined for a snapshot. */
function samplingOf(values: Partial<Record<string, string | boolean>>): CaptureCommand['sampling'] {
  const duration = values['sampling'];
  const interval = values['sampling-interval'];
  if (typeof duration !== 'string') {
    if (interval !== undefined) throw invalid('--sampling-interval goes with --sampling DURATION');
    return undefined;
  }
  const clash = SNAPSHOT_ONLY.filter((flag) => values[flag] !== undefined);
  if (clash.length > 0) throw invalid(`${clash.map((f) => `--${f}`).join(', ')} ${clash.length === 1 ? 'is' : 'are'} for heap snapshots, not with --sampling`);
  const intervalBytes = typeof interval === 'string' ? positiveInt(interval, '--sampling-interval', 16 * 1024 * 1024) : undefined;
  if (intervalBytes !== undefined && intervalBytes < 1024) throw invalid(`--sampling-interval "${String(interval)}" must be at least 1024 bytes (smaller intervals make every allocation in the target slower)`);
  return { seconds: samplingSeconds(duration, '--sampling'), intervalBytes };
}

/** A sampling duration (`30s`, `2m`, or plain seconds) in whole seconds from 1 to 600; throws invalid_input naming `flag`. */
export function samplingSeconds(text: string, flag: string): number {
  const ms = /^\d+$/.test(text) ? Number(text) * 1000 : parseDuration(text);
  if (ms === undefined || ms % 1000 !== 0 || ms < 1000 || ms > 600_000) {
    throw new CaptureError('invalid_input', `${flag} "${text}" must be whole seconds from 1s to 600s (10m), e.g. 30s or 2m`);
  }
  return ms / 1000;
}

function positiveInt(value: string, flag: string, max = 2 ** 31 - 1): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n) || n <= 0 || n > max) throw invalid(`${flag} "${value}" must be a whole number from 1 to ${max}`);
  return n;
}

function checkPattern(pattern: string | undefined, flag: string): void {
  if (pattern === undefined) return;
  try {
    new RegExp(pattern);
  } catch (err) {
    throw new CaptureError('invalid_input', `--${flag} "${pattern}" is not a valid regular expression: ${(err as Error).message}`, {
      hint: 'escape special characters, e.g. shop\\.example',
    });
  }
}

function safeHost(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return 'ws';
  }
}

function invalid(message: string): CaptureError {
  return new CaptureError('invalid_input', message, { hint: 'run `heapcap capture --help` for the flags' });
}

/** `--transport`: one of auto, cdp, pipe. */
function transportOf(value: string | undefined, fallback: SnapshotTransport): SnapshotTransport {
  if (value === undefined) return fallback;
  if (value === 'auto' || value === 'cdp' || value === 'pipe') return value;
  throw new CaptureError('invalid_input', `--transport "${value}" is not one of auto, cdp, pipe`);
}

/** `--redact`: none or strings. */
function redactOf(value: string | undefined, fallback: RedactMode): RedactMode {
  if (value === undefined) return fallback;
  const parsed = RedactModeSchema.safeParse(value);
  if (parsed.success) return parsed.data;
  throw new CaptureError('invalid_input', `--redact "${value}" is not one of ${RedactModeSchema.options.join(', ')}`);
}
