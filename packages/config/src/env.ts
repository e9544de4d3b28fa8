/**
 * The configuration contract: HEAPCAP_* environment variables, parsed once at
 * process start with zod. Every setting has a default that works on a laptop.
 * Packages never read process.env; they receive the typed result.
 */
import { parseRedisUrl } from './redis-url.ts';
import { closest } from './suggest.ts';
import { isServiceLink } from './service-links.ts';
import { z } from 'zod';
import { DurationSchema } from './duration.ts';
import { PROFILE_DEFAULT_INTERVAL_BYTES, PROFILE_MAX_EVERY_MS, PROFILE_MIN_EVERY_MS, profileIntervalProblem } from './profile.ts';
import { RedactModeSchema, type RedactMode } from './redact.ts';
import { parseStorageUrl, S3_STORAGE_CLASSES, type S3Settings, type StorageConfig } from './storage.ts';
import { publicUrlOf, SLACK_ENV, slackConfigOf, type SlackConfig } from './slack.ts';
import { consoleAuthConfigOf, OIDC_ENV, oidcProblems, type ConsoleAuthConfig } from './oidc.ts';

/** Where the client commands find the API unless HEAPCAP_API_URL says otherwise. */
export const DEFAULT_API_URL = 'http://127.0.0.1:8080';

const bool = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'])
  .transform((v) => v === 'true' || v === '1' || v === 'yes');

const EnvSchema = z.object({
  /** Queue, records, schedules and locks. */
  /** One Redis (redis://, rediss://) or a Redis Cluster's seed nodes (redis+cluster://HOST:PORT,HOST:PORT). */
  HEAPCAP_REDIS_URL: z
    .string()
    .superRefine((v, ctx) => {
      try {
        parseRedisUrl(v);
      } catch (err) {
        ctx.addIssue({ code: 'custom', message: (err as Error).message });
      }
    })
    .default('redis://127.0.0.1:6379'),
  /**
   * A partition of the fleet in its own keys: prefix `heapcap-<name>` instead of `heapcap` (`{heapcap-<name>}` on a
   * cluster: its own slot, so partitions spread over the masters). Unset: the one deployment, as always.
   */
  HEAPCAP_REDIS_PARTITION: z
    .string()
    .regex(/^[a-z0-9][a-z0-9-]{0,31}$/, 'lowercase letters, digits and dashes, up to 32, e.g. eu-1')
    .optional(),
  /** Where artifacts go: file://DIR (or a plain path) or s3://BUCKET/PREFIX. */
  HEAPCAP_STORAGE: z.string().min(1).default('file://./data/captures'),
  /** S3-compatible endpoint, e.g. http://127.0.0.1:9000 for MinIO; unset = AWS. */
  HEAPCAP_S3_ENDPOINT: z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL, e.g. http://127.0.0.1:9000' }).optional(),
  HEAPCAP_S3_REGION: z.string().min(1).optional(),
  /** Path-style addressing (MinIO needs it); defaults to true when an endpoint is set. */
  HEAPCAP_S3_FORCE_PATH_STYLE: bool.optional(),
  /** Server-side encryption: AES256 (SSE-S3) or aws:kms (then HEAPCAP_S3_KMS_KEY_ID). */
  HEAPCAP_S3_SSE: z.enum(['AES256', 'aws:kms']).optional(),
  HEAPCAP_S3_KMS_KEY_ID: z.string().min(1).optional(),
  HEAPCAP_S3_STORAGE_CLASS: z.enum(S3_STORAGE_CLASSES).optional(),
  /** Multipart part size in MiB (min 5); memory held by one upload is part size × (queue size + 1). */
  HEAPCAP_S3_PART_SIZE_MB: z.coerce.number().int().min(5).max(512).default(8),
  /** Unset: derived from the part size (defaultS3QueueSize: 2 for 8 MiB parts). */
  HEAPCAP_S3_QUEUE_SIZE: z.coerce.number().int().min(1).max(16).optional(),
  /** The target registry (YAML or JSON). */
  HEAPCAP_TARGETS_FILE: z.string().min(1).default('./heapcap.targets.yaml'),
  /** Schedules and watch rules declared in YAML, applied by every replica at start and on change; unset = none. */
  HEAPCAP_RULES_FILE: z.string().min(1).optional(),
  /** API tokens; unset means only `heapcap serve --dev` runs. */
  HEAPCAP_TOKENS_FILE: z.string().min(1).optional(),
  HEAPCAP_HOST: z.string().min(1).default('127.0.0.1'),
  HEAPCAP_PORT: z.coerce.number().int().min(0).max(65535).default(8080),
  HEAPCAP_WORKER_CONCURRENCY: z.coerce.number().int().min(1).max(64).default(2),
  /**
   * The target placements this worker captures, comma-separated (e.g. the node
   * name), or `*` for all. Every worker also takes targets without a placement.
   */
  HEAPCAP_WORKER_PLACEMENTS: z
    .string()
    .regex(/^(\*|[a-z0-9]([a-z0-9.-]*[a-z0-9])?(,[a-z0-9]([a-z0-9.-]*[a-z0-9])?)*)$/, '* or comma-separated placements (lower-case letters, digits, "." and "-"), e.g. node-1,node-2')
    .default('*'),
  /** API requests per token per minute. */
  HEAPCAP_RATE_LIMIT: z.coerce.number().int().min(1).max(1_000_000).default(600),
  /**
   * Who may read /metrics: `none` (anyone who reaches it, as the probes; its
   * heapcap_target_* series name every target) or `token` (a token with
   * captures:read, sent as `Authorization: Bearer`: Prometheus' `authorization`
   * scrape setting).
   */
  HEAPCAP_METRICS_AUTH: z.enum(['none', 'token']).default('none'),
  /** API requests with a missing or invalid token per client address per minute. */
  HEAPCAP_AUTH_FAILURE_LIMIT: z.coerce.number().int().min(1).max(1_000_000).default(30),
  /** Trust X-Forwarded-For from: false (default), a hop count, or comma-separated proxy addresses/CIDRs. */
  HEAPCAP_TRUST_PROXY: z
    .string()
    .regex(/^(false|true|\d{1,2}|[0-9A-Fa-f.:/]+(,[0-9A-Fa-f.:/]+)*)$/, 'false, true, a hop count, or comma-separated proxy addresses/CIDRs (e.g. 10.0.0.1,10.0.1.0/24)')
    .default('false'),
  HEAPCAP_LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** Where `heapcap trigger` and `heapcap status` find the API. */
  HEAPCAP_API_URL: z.url({ protocol: /^https?$/, error: `must be an http:// or https:// URL, e.g. ${DEFAULT_API_URL}` }).default(DEFAULT_API_URL),
  /** Bearer token for `heapcap trigger` and `heapcap status` (a secret: never logged). */
  HEAPCAP_TOKEN: z.string().min(16, 'must be the bearer token (at least 16 characters)').optional(),
  /** Snapshot bytes held in memory before spilling to disk, MiB. */
  HEAPCAP_MEMORY_CEILING_MB: z.coerce.number().int().min(1).max(4096).default(16),
  /** Directory for spill files (default: the OS temp dir). */
  HEAPCAP_SPILL_DIR: z.string().min(1).optional(),
  /**
   * The N largest strings (a 200-character preview each) in every capture's
   * summary. 0 (default): none; strings are the most sensitive part of a heap.
   */
  HEAPCAP_SUMMARY_LARGEST_STRINGS: z.coerce.number().int().min(0).max(100).default(0),
  /**
   * Largest snapshot (uncompressed JSON bytes) the worker's retained-size analysis
   * loads; larger ones are refused with analysis_too_large before any byte is read.
   * The analysis holds ~88 bytes per node and ~13 per edge (docs/analysis.md):
   * 2 GB of JSON is ~1.5 GB of RAM.
   */
  HEAPCAP_ANALYSIS_MAX_BYTES: z.coerce.number().int().min(1).default(2_000_000_000),
  /**
   * Analysis jobs a worker process runs at a time; 0: it runs none (keep the
   * analysis, synchronous CPU for ~0.3-0.4 s per million nodes, off workers
   * capturing from busy targets).
   */
  HEAPCAP_ANALYSIS_CONCURRENCY: z.coerce.number().int().min(0).max(4).default(1),
  /**
   * How snapshot bytes travel: cdp (inspector messages), pipe (a Node.js target on a
   * shared filesystem writes them into a FIFO), auto (the pipe where possible).
   */
  HEAPCAP_SNAPSHOT_TRANSPORT: z.enum(['auto', 'cdp', 'pipe']).default('auto'),
  /**
   * Redaction of snapshots whose request and target say nothing: none, or strings (every string
   * value replaced while the snapshot streams, before any byte is spilled, summarized or stored).
   */
  HEAPCAP_REDACT: RedactModeSchema.default('none'),
  /** Where the pipe's FIFO is made (default: the OS temp dir); the target must see the same directory. */
  HEAPCAP_PIPE_DIR: z.string().min(1).optional(),
  /**
   * The nice value `heapcap capture`, `serve` and `worker` lower themselves to,
   * so that a paused target on the same host gets the CPU first (0: leave the
   * priority alone). See packages/capture/src/cpu-priority.ts.
   */
  HEAPCAP_NICE: z.coerce.number().int().min(0).max(19).default(10),
  /**
   * The shortest schedule interval the API accepts. A snapshot pauses the
   * target for seconds; a schedule tighter than a minute is nearly always a
   * typo. Tests lower it (e.g. `1s`).
   */
  HEAPCAP_SCHEDULE_MIN_INTERVAL: DurationSchema.default(60_000),
  /** Schedules without their own `retention.keepLast` keep this many newest snapshots. */
  HEAPCAP_RETENTION_KEEP_LAST: z.coerce.number().int().min(1).max(100_000).default(48),
  /**
   * Artifacts older than this many days are deleted (unless pinned): every
   * capture's, except a schedule's with its own `retention.maxAgeDays`. 0 = no age limit.
   */
  HEAPCAP_RETENTION_MAX_AGE_DAYS: z.coerce.number().min(0).max(36_500).default(30),
  /** How often the retention janitor runs (one run at a time across replicas). */
  HEAPCAP_RETENTION_INTERVAL: DurationSchema.default(10 * 60_000),
  /**
   * Days a record whose artifact is gone (expired, failed, cancelled, deleted)
   * stays in Redis. A record is ~3.4 KB with its index entries (bench/redis-footprint.ts):
   * a target captured every 30 min keeps 48 + 48 × 7 records ≈ 1.3 MB at 7 days.
   */
  HEAPCAP_RECORD_TTL_DAYS: z.coerce.number().positive().max(36_500).default(7),
  /**
   * How often the watcher samples each watched target (Runtime.getHeapUsage and
   * the heap limit over CDP). A rule's cooldown must be at least this long.
   */
  HEAPCAP_WATCH_INTERVAL: DurationSchema.refine((ms) => ms >= 100 && ms <= 3_600_000, 'between 100ms and 1h').default(15_000),
  /**
   * How often the watcher samples every registered target it may reach, watched or not (the console's memory
   * curves, the heapcap_target_* gauges). `0` turns it off. A minute: one Runtime.getHeapUsage over a held
   * session, ~1.7 ms of worker CPU per sample (3 % of a core at 1,000 targets), 1,440 samples a day per target;
   * a target a watch rule watches is sampled at HEAPCAP_WATCH_INTERVAL instead.
   */
  HEAPCAP_SAMPLE_INTERVAL: z.union([z.literal('0').transform(() => 0), DurationSchema.refine((ms) => ms >= 1_000 && ms <= 3_600_000, '0 (off) or between 1s and 1h')]).default(60_000),
  /** How long each watched target's samples are kept (the stream holds this divided by the interval: a day at 15 s is 5,760 samples). */
  HEAPCAP_WATCH_RETENTION: DurationSchema.refine((ms) => ms >= 1_000, 'at least 1s').default(86_400_000),
  /** When the headroom gate refuses a rule's snapshot, the allocation sampling profile taken instead lasts this long. */
  HEAPCAP_WATCH_SAMPLING_DURATION: DurationSchema.refine((ms) => ms >= 1_000 && ms <= 600_000, 'between 1s and 10m').default(30_000),
  /**
   * Continuous allocation profiles for every target the watcher may reach (a target's or a watch rule's `profile`
   * overrides it; a node-pid target never gets one): store the live-allocation profile this often. `0` (the default)
   * leaves it to targets and rules. Each read makes V8 run a full GC in the target (docs/watch.md, "Continuous
   * allocation profiles"): keep it to minutes on large heaps.
   */
  HEAPCAP_PROFILE_EVERY: z
    .union([z.literal('0').transform(() => 0), DurationSchema.refine((ms) => ms >= PROFILE_MIN_EVERY_MS && ms <= PROFILE_MAX_EVERY_MS, '0 (off) or between 5s and 1d, e.g. 10m')])
    .default(0),
  /** Bytes between two samples of a continuous profile (16 KiB to 16 MiB; default 512 KiB). */
  HEAPCAP_PROFILE_SAMPLING_INTERVAL: z
    .string()
    .default(String(PROFILE_DEFAULT_INTERVAL_BYTES))
    .transform((text, ctx) => {
      const problem = profileIntervalProblem(Number(text), JSON.stringify(text));
      if (problem === undefined) return Number(text);
      ctx.addIssue({ code: 'custom', message: problem });
      return z.NEVER;
    }),
  /**
   * A Prometheus that scrapes heapcap's /metrics (its heapcap_target_* gauges):
   * GET /v1/targets/:id/samples answers a range that starts before what Redis
   * keeps (HEAPCAP_WATCH_RETENTION) from its query_range API instead.
   */
  HEAPCAP_PROMETHEUS_URL: z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL, e.g. http://prometheus:9090' }).optional(),
  /** Slack (slack.ts): signing secret, users file, bot token, links; and HEAPCAP_PUBLIC_URL. */
  ...SLACK_ENV,
  /** The console's OpenID Connect sign-in and whether API tokens still sign in to it (oidc.ts). */
  ...OIDC_ENV,
});

/** The parsed configuration. */
export interface HeapcapConfig {
  redisUrl: string;
  /** HEAPCAP_* variables left out as Kubernetes service links (a Service named heapcap-*), sorted; the services log them once. */
  serviceLinks: string[];
  /** HEAPCAP_REDIS_PARTITION: the Redis key prefix of this partition (`heapcap-<name>`); undefined: `heapcap`. */
  redisPrefix: string | undefined;
  storage: StorageConfig;
  /** The HEAPCAP_S3_* settings, also for an s3:// URL given elsewhere (`heapcap capture --out`). */
  s3: S3Settings;
  targetsFile: string;
  /** HEAPCAP_TARGETS_FILE was set: then a missing file is a start-up error, not an empty registry file. */
  targetsFileSet: boolean;
  /** HEAPCAP_RULES_FILE: schedules and watch rules declared in a file (undefined: none). */
  rulesFile: string | undefined;
  tokensFile: string | undefined;
  host: string;
  port: number;
  workerConcurrency: number;
  /** HEAPCAP_WORKER_PLACEMENTS: `['*']` or the placements this worker captures. */
  workerPlacements: string[];
  /** API requests per token per minute. */
  rateLimitPerMinute: number;
  /** HEAPCAP_METRICS_AUTH: `token` makes /metrics need a token with captures:read. */
  metricsAuth: 'none' | 'token';
  /** API requests with a missing or invalid token per client address per minute. */
  authFailureLimitPerMinute: number;
  /** Which proxies' X-Forwarded-For to trust (Fastify's trustProxy): false, true, a hop count, or addresses/CIDRs. */
  trustProxy: boolean | number | string[];
  logLevel: z.infer<typeof EnvSchema>['HEAPCAP_LOG_LEVEL'];
  memoryCeilingBytes: number;
  spillDir: string | undefined;
  /** Largest strings in each summary (HEAPCAP_SUMMARY_LARGEST_STRINGS; 0: none). */
  summaryLargestStrings: number;
  /** Largest snapshot the analysis job loads (HEAPCAP_ANALYSIS_MAX_BYTES). */
  analysisMaxBytes: number;
  /** Analysis jobs at a time per worker process (HEAPCAP_ANALYSIS_CONCURRENCY; 0: none). */
  analysisConcurrency: number;
  /** How snapshot bytes travel (HEAPCAP_SNAPSHOT_TRANSPORT). */
  snapshotTransport: 'auto' | 'cdp' | 'pipe';
  /** Redaction when neither the request nor the target chooses (HEAPCAP_REDACT). */
  redact: RedactMode;
  /** Nice value the capturing processes lower themselves to (0: unchanged). */
  nice: number;
  pipeDir: string | undefined;
  /** The API base URL for the client commands. */
  apiUrl: string;
  /** The client commands' bearer token. */
  token: string | undefined;
  /** The API's base URL as engineers reach it (links in Slack messages). */
  publicUrl: string;
  /** Slack settings; `slack.signingSecret` set means the API mounts the Slack endpoints. */
  slack: SlackConfig;
  /** How people sign in to the console: OIDC (HEAPCAP_OIDC_*) and/or API tokens (HEAPCAP_CONSOLE_TOKEN_SIGNIN). */
  consoleAuth: ConsoleAuthConfig;
  /** Schedules and retention (HEAPCAP_SCHEDULE_MIN_INTERVAL, HEAPCAP_RETENTION_*, HEAPCAP_RECORD_TTL_DAYS). */
  schedules: ScheduleSettings;
  /** Watch rules (HEAPCAP_WATCH_*). */
  watch: WatchSettings;
}

/** Settings of the watcher. */
export interface WatchSettings {
  /** Sample every watched target this often. */
  intervalMs: number;
  /** Sample every other registered target this often (HEAPCAP_SAMPLE_INTERVAL; 0: not at all). */
  sampleIntervalMs: number;
  /** Keep each target's samples this long. */
  retentionMs: number;
  /** Length of the sampling profile taken when the gate refuses a rule's snapshot. */
  samplingMs: number;
  /** The service default of continuous allocation profiles (HEAPCAP_PROFILE_*; everyMs 0: off). */
  profile: { everyMs: number; samplingIntervalBytes: number };
  /** HEAPCAP_PROMETHEUS_URL without a trailing slash: where ranges longer than retentionMs are read (null: not set). */
  prometheusUrl: string | null;
}

/** Settings of schedules, the retention janitor and record expiry. */
export interface ScheduleSettings {
  /** Shortest `every` (and cron gap) the API accepts. */
  minIntervalMs: number;
  /** Default `retention.keepLast` of a schedule. */
  keepLast: number;
  /** Default artifact age limit in days; 0 = none. */
  maxAgeDays: number;
  /** Janitor run interval. */
  retentionIntervalMs: number;
  /** How long a record without an artifact stays. */
  recordTtlMs: number;
}

/** A configuration error naming every bad variable. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  readonly code = 'invalid_config';
  readonly issues: { variable: string; message: string }[];
  constructor(issues: { variable: string; message: string }[]) {
    super(`invalid configuration:\n${issues.map((i) => `  ${i.variable}: ${i.message}`).join('\n')}`);
    this.issues = issues;
  }
}

/** Parse the HEAPCAP_* variables of `env` (only those; unknown HEAPCAP_* names are errors, to catch typos). */
export function parseConfig(env: Record<string, string | undefined>): HeapcapConfig {
  const set = Object.entries(env).filter((e): e is [string, string] => e[0].startsWith('HEAPCAP_') && e[1] !== undefined && e[1] !== '');
  // Kubernetes' variables for a Service named heapcap-* are not settings (service-links.ts): left out, not refused.
  const serviceLinks = set.filter(([k, v]) => isServiceLink(k, v)).map(([k]) => k).sort();
  const picked = Object.fromEntries(set.filter(([k, v]) => !isServiceLink(k, v)));
  const known = new Set(Object.keys(EnvSchema.shape));
  const unknown = Object.keys(picked).filter((k) => !known.has(k) && !k.startsWith('HEAPCAP_TEST_'));
  const parsed = EnvSchema.safeParse(picked);
  const issues = [
    ...unknown.map((variable) => {
      // Compared without the shared prefix, so that it does not make every short name look close.
      const tail = closest(variable.slice('HEAPCAP_'.length), [...known].map((k) => k.slice('HEAPCAP_'.length)));
      const near = tail === undefined ? undefined : `HEAPCAP_${tail}`;
      return { variable, message: near === undefined ? 'unknown setting (check the spelling; see docs/configuration.md)' : `unknown setting (did you mean ${near}?)` };
    }),
    ...(parsed.success ? [] : parsed.error.issues.map((i) => ({ variable: String(i.path[0] ?? '?'), message: i.message }))),
  ];
  if (!parsed.success || issues.length > 0) throw new ConfigError(issues);
  const e = parsed.data;
  // SSE settings that contradict each other name the variable to fix (a key id without
  // aws:kms would otherwise be ignored, and the objects stored unencrypted).
  if (e.HEAPCAP_S3_SSE === 'aws:kms' && e.HEAPCAP_S3_KMS_KEY_ID === undefined) {
    throw new ConfigError([{ variable: 'HEAPCAP_S3_KMS_KEY_ID', message: 'required when HEAPCAP_S3_SSE=aws:kms (the KMS key id or ARN)' }]);
  }
  if (e.HEAPCAP_S3_KMS_KEY_ID !== undefined && e.HEAPCAP_S3_SSE !== 'aws:kms') {
    throw new ConfigError([{ variable: 'HEAPCAP_S3_KMS_KEY_ID', message: 'only used with HEAPCAP_S3_SSE=aws:kms; set that too, or unset this' }]);
  }
  const oidc = oidcProblems(e);
  if (oidc.length > 0) throw new ConfigError(oidc);
  const s3: S3Settings = {
    endpoint: e.HEAPCAP_S3_ENDPOINT,
    region: e.HEAPCAP_S3_REGION,
    forcePathStyle: e.HEAPCAP_S3_FORCE_PATH_STYLE,
    sse: e.HEAPCAP_S3_SSE,
    kmsKeyId: e.HEAPCAP_S3_KMS_KEY_ID,
    storageClass: e.HEAPCAP_S3_STORAGE_CLASS,
    partSizeBytes: e.HEAPCAP_S3_PART_SIZE_MB * 1024 * 1024,
    queueSize: e.HEAPCAP_S3_QUEUE_SIZE,
  };
  let storage: StorageConfig;
  try {
    storage = parseStorageUrl(e.HEAPCAP_STORAGE, s3);
  } catch (err) {
    throw new ConfigError([{ variable: 'HEAPCAP_STORAGE', message: (err as Error).message }]);
  }
  return {
    redisUrl: e.HEAPCAP_REDIS_URL,
    serviceLinks,
    redisPrefix: e.HEAPCAP_REDIS_PARTITION === undefined ? undefined : `heapcap-${e.HEAPCAP_REDIS_PARTITION}`,
    storage,
    s3,
    targetsFile: e.HEAPCAP_TARGETS_FILE,
    targetsFileSet: picked['HEAPCAP_TARGETS_FILE'] !== undefined,
    rulesFile: e.HEAPCAP_RULES_FILE,
    tokensFile: e.HEAPCAP_TOKENS_FILE,
    host: e.HEAPCAP_HOST,
    port: e.HEAPCAP_PORT,
    workerConcurrency: e.HEAPCAP_WORKER_CONCURRENCY,
    workerPlacements: e.HEAPCAP_WORKER_PLACEMENTS.split(','),
    rateLimitPerMinute: e.HEAPCAP_RATE_LIMIT,
    metricsAuth: e.HEAPCAP_METRICS_AUTH,
    authFailureLimitPerMinute: e.HEAPCAP_AUTH_FAILURE_LIMIT,
    trustProxy: parseTrustProxy(e.HEAPCAP_TRUST_PROXY),
    logLevel: e.HEAPCAP_LOG_LEVEL,
    memoryCeilingBytes: e.HEAPCAP_MEMORY_CEILING_MB * 1024 * 1024,
    spillDir: e.HEAPCAP_SPILL_DIR,
    summaryLargestStrings: e.HEAPCAP_SUMMARY_LARGEST_STRINGS,
    analysisMaxBytes: e.HEAPCAP_ANALYSIS_MAX_BYTES,
    analysisConcurrency: e.HEAPCAP_ANALYSIS_CONCURRENCY,
    snapshotTransport: e.HEAPCAP_SNAPSHOT_TRANSPORT,
    redact: e.HEAPCAP_REDACT,
    nice: e.HEAPCAP_NICE,
    pipeDir: e.HEAPCAP_PIPE_DIR,
    apiUrl: e.HEAPCAP_API_URL,
    token: e.HEAPCAP_TOKEN,
    schedules: {
      minIntervalMs: e.HEAPCAP_SCHEDULE_MIN_INTERVAL,
      keepLast: e.HEAPCAP_RETENTION_KEEP_LAST,
      maxAgeDays: e.HEAPCAP_RETENTION_MAX_AGE_DAYS,
      retentionIntervalMs: e.HEAPCAP_RETENTION_INTERVAL,
      recordTtlMs: Math.round(e.HEAPCAP_RECORD_TTL_DAYS * 86_400_000),
    },
    watch: { intervalMs: e.HEAPCAP_WATCH_INTERVAL, sampleIntervalMs: e.HEAPCAP_SAMPLE_INTERVAL, retentionMs: e.HEAPCAP_WATCH_RETENTION, samplingMs: e.HEAPCAP_WATCH_SAMPLING_DURATION, profile: { everyMs: e.HEAPCAP_PROFILE_EVERY, samplingIntervalBytes: e.HEAPCAP_PROFILE_SAMPLING_INTERVAL }, prometheusUrl: e.HEAPCAP_PROMETHEUS_URL?.replace(/\/+$/, '') ?? null },
    publicUrl: publicUrlOf(e.HEAPCAP_PUBLIC_URL, e.HEAPCAP_HOST, e.HEAPCAP_PORT),
    slack: slackConfigOf(e),
    consoleAuth: consoleAuthConfigOf(e),
  };
}

function parseTrustProxy(v: string): boolean | number | string[] {
  if (v === 'false') return false;
  if (v === 'true') return true;
  if (/^\d+$/.test(v)) return Number(v);
  return v.split(',');
}

/**
 * Parse at a process entry point: the configuration, or undefined after
 * writing every problem (each names its variable) through `write`.
 */
export function parseConfigAtEntry(env: Record<string, string | undefined>, write: (text: string) => void): HeapcapConfig | undefined {
  try {
    return parseConfig(env);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    write(`invalid_config: ${err.message}\n  check: docs/configuration.md lists every HEAPCAP_* variable\n`);
    return undefined;
  }
}
