/**
 * The console's one way to the API: same-origin fetch with the session cookie,
 * the CSRF token on every write, and errors as the API's stable codes. The
 * types are the parts of the API's responses the views read (the OpenAPI
 * document at /openapi.json has all of them).
 */

export type Scope = 'captures:read' | 'captures:write' | 'artifacts:read' | 'targets:admin';

export interface SessionView {
  signedIn: boolean;
  mode: 'tokens' | 'oidc' | 'dev';
  name: string | null;
  scopes: Scope[];
  csrfToken: string | null;
  expiresAt: string | null;
  /** How this deployment signs people in: an API token, and/or the OpenID provider (button label, start URL). */
  signIn: { token: boolean; oidc: { name: string; url: string } | null };
}

export interface Target {
  id: string;
  kind: string;
  labels?: Record<string, string>;
  placement?: string;
}

export interface Sample {
  t: number;
  heapUsedBytes: number;
  heapTotalBytes: number;
  heapLimitBytes: number | null;
  rssBytes: number | null;
}

/** Why a target's last sample failed (the API's `down`; docs/watch.md). */
export interface TargetDown {
  since: number;
  at: number;
  reason: string;
  code: string;
  message: string;
}

export interface Samples {
  targetId: string;
  sampler: string | null;
  down: TargetDown | null;
  /** redis: every sample of the retention; prometheus: a longer range, one point per step. */
  source: 'redis' | 'prometheus';
  items: Sample[];
}

export type CaptureStatus = 'queued' | 'running' | 'succeeded' | 'failed' | 'cancelled' | 'expired';

export interface CaptureRecord {
  id: string;
  targetId: string;
  labels: Record<string, string>;
  trigger: {
    kind: string;
    who: string;
    reason?: string;
    from?: string;
    scheduleId?: string;
    ruleId?: string;
    /** A continuous profile's read (`kind: profile`): since when the held sampler ran, and the time none ran before it. */
    profile?: { since: string; samplingIntervalBytes: number; gap?: { from: string; to: string; reason: string } };
    /** The snapshot this profile was stored beside. */
    besideOf?: string;
  };
  options: { kind?: string; gc?: boolean };
  status: CaptureStatus;
  phase: string | null;
  error: { code: string; message: string; hint?: string; phase?: string } | null;
  timings: Record<string, number> | null;
  artifact: { bytesUncompressed: number; bytesStored: number; sha256: string; gzip: boolean; kind?: string; summaryKey?: string; summaryError?: string } | null;
  attempts: number;
  /** Once an attempt was retried: each failed attempt and when its retry was due (null: none followed). */
  failedAttempts?: FailedAttempt[];
  /** A snapshot of a target with a continuous profile: the profile stored beside it. */
  profileCaptureId?: string;
  pinned: { by: string; at: string; reason?: string } | null;
  analysis?: { status: string };
  /** The mode the snapshot was stored with (effective: a target's `strings` over a request's `none`), and its counts. */
  redaction?: { mode: string; redactedStrings?: number; rewrittenNames?: number };
  /** Scheduled captures: what grew since the target's previous finished capture. */
  growth?: Growth;
  worker?: string;
  createdAt: string;
  startedAt: string | null;
  finishedAt: string | null;
}

/** One failed attempt of a retried capture (docs/api.md, `failedAttempts`). */
export interface FailedAttempt {
  attempt: number;
  of: number;
  code: string;
  message: string;
  phase?: string;
  startedAt: string;
  failedAt: string;
  nextAttemptAt: string | null;
}

/** A capture record's `growth` (packages/state analysis-schema.ts). */
export interface Growth {
  since: string | null;
  suspects?: { mode: 'graph' | 'summary'; note?: string; items: { rank: number; class: string; countDelta: number; selfSizeDelta: number; retainedSizeDelta?: number; reason: string; allocated?: string }[] };
  classes: { name: string; countDelta: number; selfSizeDelta: number; retainedSizeDelta?: number }[];
}

export interface ClassRow {
  name: string;
  count: number;
  selfSize: number;
}

export interface DiffSide {
  count: number;
  selfSize: number;
  retainedSize?: number;
}

export interface ClassDelta {
  name: string;
  status: string;
  base: DiffSide | null;
  head: DiffSide | null;
  countDelta: number;
  selfSizeDelta: number;
  retainedSizeDelta?: number;
}

export interface PathStep {
  edge: string;
  edgeType: string;
  id: number;
  class: string;
  name?: string;
}

export interface Suspect {
  rank: number;
  class: string;
  kind: string;
  holder: { class: string; edge: string | null; via: string | null } | null;
  countDelta: number;
  selfSizeDelta: number;
  retainedSizeDelta?: number;
  path: PathStep[] | null;
  /** The path in the application's own names; the whole path is `path`, one click away. */
  shortPath?: string;
  /** One suspect per leak: what its holder gained, what came with it, the holder's own growth. */
  parts?: { role: 'gained' | 'brought' | 'holder'; class: string; countDelta: number; retainedSizeDelta: number }[];
  /** Hunts that tracked allocations: `allocated at src/session.js:44 createSession ← …`. */
  allocated?: string;
  reason: string;
}

/** Growth below the significance rule: `and N small changes (X in all)`. */
export interface SmallChanges {
  count: number;
  bytes: number;
}

/** One capture of a diff and its analysis (`none` when never asked for; `error` when it failed). */
export interface DiffSideRef {
  captureId: string;
  createdAt: string;
  analysis: { status: string; error?: string };
}

/** One allocation site's growth between two sampling profiles. */
export interface SiteDelta {
  functionName: string;
  url: string;
  line: number;
  column: number;
  baseBytes: number;
  headBytes: number;
  bytesDelta: number;
}

export interface DiffView {
  base: DiffSideRef;
  head: DiffSideRef;
  omittedClasses: number;
  /** Null when both captures are allocation sampling profiles (`allocations` then). */
  diff: {
    suspects: { mode: 'graph' | 'summary'; note?: string; suspects: Suspect[]; small?: SmallChanges };
    totalSelfSizeDelta: number;
    nodeCountDelta: number;
    retained: boolean;
    classes: ClassDelta[];
  } | null;
  allocations: { totalBytesDelta: number; grown: SiteDelta[] } | null;
}

/** A diff of two heap snapshots. */
export type SnapshotDiffView = DiffView & { diff: NonNullable<DiffView['diff']> };

/** A schedule as GET /v1/schedules shows it: the stored schedule, its state and its next runs. */
export interface ScheduleView {
  schedule: { id: string; target?: string; selector?: Record<string, string>; every?: string; cron?: string; timezone?: string; owner: string; reason?: string };
  state: 'active' | 'paused';
  matches: number;
  nextRunAt: string[];
  lastCapture: { id: string; status: CaptureStatus | null } | null;
}

/** The last firing of a rule for one target (GET /v1/watch-rules). */
export interface WatchFiring {
  at: string;
  outcome: 'captured' | 'refused_headroom' | 'sampled' | 'suppressed_cooldown' | 'suppressed_cap' | 'failed';
  captureId?: string;
  samplingCaptureId?: string;
  value: number;
  message?: string;
}

/** A watch rule as GET /v1/watch-rules shows it: the rule, its state, and its state for each target it watches now. */
export interface WatchRuleView {
  rule: {
    id: string;
    target?: string;
    selector?: Record<string, string>;
    when: { metric: string; above: number; forSeconds: number; windowSeconds?: number };
    cooldownSeconds: number;
    maxPerDay: number;
    owner: string;
    reason?: string;
  };
  state: 'active' | 'paused';
  matches: number;
  targets: { targetId: string; state: 'ok' | 'pending' | 'firing' | 'cooling'; since: number; value: number | null; lastSampleAt: number | null; lastFiring: WatchFiring | null; sampler: string | null; down: TargetDown | null }[];
  lastFiring: (WatchFiring & { targetId: string }) | null;
}

export type HuntStatus = 'queued' | 'running' | 'succeeded' | 'failed';

/** A leak hunt's record (GET /v1/leak-hunts, and `hunt` of GET /v1/leak-hunts/:id). */
export interface LeakHuntRecord {
  id: string;
  targetId: string;
  intervalMs: number;
  reason?: string;
  drive?: { kind: 'http'; method: string; url: string; count: number } | { kind: 'evaluate'; chars: number };
  requestedBy: string;
  /** Whether the worker tracked allocations (the suspects' `allocated`); absent on hunts from before tracking existed. */
  allocations?: boolean;
  worker?: string;
  status: HuntStatus;
  /** lock, baseline, drive, wait, target, wait-final, final, report (null once it ended). */
  phase: string | null;
  snapshots: { name: 'baseline' | 'target' | 'final'; at: string; bytes: number }[];
  classes?: { name: string; count: number; selfSize: number }[];
  error?: { code: string; message: string; hint?: string };
  createdAt: string;
  startedAt?: string;
  finishedAt?: string;
}

/** A hunt's report: what was created between baseline and target and still lives in final. */
export interface LeakHuntReport {
  suspects?: { mode: 'graph' | 'summary'; note?: string; suspects: Suspect[]; small?: SmallChanges };
  /** Rounds of the drive (null: no drive; then `note` says a replaced buffer cannot be told from a leak). */
  rounds?: number | null;
  note?: string;
  createdCount: number;
  survivingCount: number;
  survivingSelfSize: number;
  classes: { name: string; count: number; selfSize: number; representative: { id: number; retainedSize: number; path: PathStep[] | null } }[];
}

/** One bad input field of a `validation_failed` answer (`path` as in the request body: "every", "selector"). */
export interface FieldIssue {
  in: string;
  path: string;
  message: string;
}

/** An answer other than 2xx: the API's stable code (match on it, never on the message). */
export class ApiFailure extends Error {
  override readonly name = 'ApiFailure';
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    /** `validation_failed`: each bad field, so a form can show it at the field. */
    readonly fields: FieldIssue[] = [],
  ) {
    super(message);
  }
}

/** Any rejection as an ApiFailure: fetch's own errors (offline, reset) become `network`. */
export function asFailure(err: unknown): ApiFailure {
  return err instanceof ApiFailure ? err : new ApiFailure(0, 'network', String(err));
}

let csrfToken: string | null = null;

/** Remembers the session's CSRF token (from GET/POST /v1/session) for the writes that follow. */
export function useCsrf(token: string | null): void {
  csrfToken = token;
}

/** One API call. `body` is sent as JSON; writes carry the CSRF header. */
export async function api<T>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<T> {
  const h: Record<string, string> = { accept: 'application/json', ...headers };
  if (body !== undefined) h['content-type'] = 'application/json';
  if (method !== 'GET' && csrfToken !== null) h['x-heapcap-csrf'] = csrfToken;
  const res = await fetch(path, { method, headers: h, credentials: 'same-origin', body: body === undefined ? null : JSON.stringify(body) });
  if (res.status === 204) return null as T;
  const text = await res.text();
  const json: unknown = text === '' ? null : JSON.parse(text);
  if (!res.ok) {
    const err = (json as { error?: { code?: string; message?: string; details?: { fields?: FieldIssue[] } } } | null)?.error;
    throw new ApiFailure(res.status, err?.code ?? 'internal', err?.message ?? `HTTP ${res.status}`, err?.details?.fields ?? []);
  }
  return json as T;
}

/** A query string from the defined values of `q`. */
export function query(q: Record<string, string | number | undefined>): string {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(q)) if (v !== undefined && v !== '') p.set(k, String(v));
  const s = p.toString();
  return s === '' ? '' : `?${s}`;
}
