/**
 * Progress while a capture runs (`heapcap capture`, `heapcap trigger --wait`):
 * the phase, seconds in it and in all, and bytes with bytes/s once chunks flow.
 * The longest phase (`generate`, the target paused) sends no events, so the
 * display runs on its own timer rather than on the engine's events:
 * - on a terminal, one line redrawn every 250 ms (and on events, at most every 100 ms);
 * - off a terminal (a CI log, a pipe), plain lines: none in the first 5 s (a quick
 *   capture's stderr is only its errors), then one at that point, one at each
 *   phase change and one every 5 s within a long phase.
 */
import { formatMiB, MIB, type CaptureProgress, type SamplingProgress } from '@heapcap/capture';

/** Where the capture is, in this process's clock (ms since the epoch). */
export interface ProgressState {
  phase: string;
  /** When the phase began. */
  phaseStartedAt: number;
  /** Snapshot bytes received in this phase so far, and when that count was taken (undefined: it is live, now). */
  bytes?: { count: number; at?: number; spilled?: number };
  /** Generation progress in percent, when the engine reports it. */
  percent?: number;
  /** A note after the phase name when there is nothing to count (e.g. the target is paused). */
  note?: string;
  /** Something that happened (a failed attempt): off a terminal, each new one prints a line at once, in the quiet first seconds too. */
  event?: string;
}

const TTY_REDRAW_MS = 250;
const EVENT_REDRAW_MS = 100;
const PLAIN_QUIET_MS = 5_000;
const PLAIN_EVERY_MS = 5_000;

/** What `generate` says when the engine counts nothing (it asks V8 for no progress events by default). */
const GENERATE_NOTE = 'the target is building its snapshot (its main thread is paused)';

/** The text of one progress line at `now`. */
export function progressText(s: ProgressState, startedAt: number, now: number): string {
  const inPhase = Math.max(0, now - s.phaseStartedAt) / 1000;
  const total = Math.max(0, now - startedAt) / 1000;
  let text = `${s.phase.padEnd(10)} ${inPhase.toFixed(1).padStart(5)} s (total ${total.toFixed(1)} s)`;
  if (s.bytes !== undefined && s.bytes.count > 0) {
    // Live bytes over the time to now: a stalled stream shows its falling average.
    const secs = ((s.bytes.at ?? now) - s.phaseStartedAt) / 1000;
    // Under a fifth of a second the rate is noise (the first chunk over no time).
    const rate = secs >= 0.2 ? `  at ${(s.bytes.count / MIB / secs).toFixed(1)} MiB/s` : '';
    text += `  ${formatMiB(s.bytes.count)}${rate}${s.bytes.spilled !== undefined && s.bytes.spilled > 0 ? `  (spilled ${formatMiB(s.bytes.spilled)})` : ''}`;
  } else if (s.percent !== undefined) {
    text += `  ${bar(s.percent)} ${String(s.percent).padStart(3)}%`;
  } else if (s.note !== undefined) {
    text += `  ${s.note}…`;
  } else if (s.phase === 'generate') {
    text += `  ${GENERATE_NOTE}…`;
  }
  return text;
}

function bar(pct: number): string {
  const n = Math.round(pct / 5);
  return `[${'#'.repeat(n)}${'-'.repeat(20 - n)}]`;
}

/** Draws {@link ProgressState}s on a stream; `stop()` before printing anything else. */
export class ProgressDisplay {
  readonly #out: NodeJS.WritableStream;
  readonly #tty: boolean;
  readonly #startedAt: number;
  #state: ProgressState | undefined;
  #timer: NodeJS.Timeout | undefined;
  #lastDraw = 0;
  #lastPlain = 0;
  #plainPhase: string | undefined;
  #plainEvent: string | undefined;
  #stopped = false;

  /** `tty`: redraw one line; else plain lines. `startedAt`: the total's start (default now). */
  constructor(out: NodeJS.WritableStream, tty: boolean, startedAt = Date.now()) {
    this.#out = out;
    this.#tty = tty;
    this.#startedAt = startedAt;
  }

  /** The capture is now at `s`; the display follows it until stop(). */
  set(s: ProgressState): void {
    if (this.#stopped) return;
    const changed = this.#state?.phase !== s.phase;
    this.#state = s;
    if (this.#timer === undefined) {
      this.#timer = setInterval(() => this.#tick(false), this.#tty ? TTY_REDRAW_MS : 1000);
      // The timer never keeps the process alive on its own.
      this.#timer.unref();
    }
    this.#tick(changed);
  }

  /** Stop drawing; on a terminal, clear the line. Idempotent. */
  stop(): void {
    if (this.#stopped) return;
    this.#stopped = true;
    if (this.#timer !== undefined) clearInterval(this.#timer);
    if (this.#tty && this.#state !== undefined) this.#out.write('\r\x1b[2K');
  }

  #tick(changed: boolean): void {
    const s = this.#state;
    if (s === undefined || this.#stopped) return;
    const now = Date.now();
    if (this.#tty) {
      if (!changed && now - this.#lastDraw < EVENT_REDRAW_MS) return;
      this.#lastDraw = now;
      this.#out.write(`\r\x1b[2K${progressText(s, this.#startedAt, now)}`);
      return;
    }
    const newEvent = s.event !== undefined && s.event !== this.#plainEvent;
    if (now - this.#startedAt < PLAIN_QUIET_MS && !newEvent) return;
    const phaseChanged = this.#plainPhase !== s.phase;
    if (!phaseChanged && !newEvent && now - this.#lastPlain < PLAIN_EVERY_MS) return;
    this.#plainEvent = s.event;
    this.#plainPhase = s.phase;
    this.#lastPlain = now;
    this.#out.write(`${progressText(s, this.#startedAt, now)}\n`);
  }
}

/** What {@link RecordProgress} reads of a capture record (GET /v1/captures/:id). */
export interface RecordProgressView {
  status: string;
  phase?: string | null;
  progress?: { phase: string; phaseStartedAt: string; at: string; bytes: number };
  failedAttempts?: { attempt: number; of: number; code: string; message: string; failedAt: string; nextAttemptAt: string | null }[];
}

/**
 * The live state of a capture record in this process's clock. The record's
 * times are the worker's clock; only their differences are used (phase start
 * to write), placed at the moment this process first saw the write, so a skew
 * between the two clocks never shows. The earliest such placement of a phase
 * is kept: seconds in a phase never go backwards between two polls.
 */
export class RecordProgress {
  #phaseKey = '';
  #phaseStartedAt = 0;
  #seenAt = '';
  #seenLocal = 0;
  #failureKey = '';
  #failureSeenLocal = 0;

  /** The state to show for `r` seen now (undefined: the record says nothing about a phase). */
  state(r: RecordProgressView, now = Date.now()): ProgressState | undefined {
    if (r.status === 'queued') return this.#phase('queued', 'queued', now, now, this.#waiting(r, now));
    const p = r.progress;
    if (p === undefined) return r.phase === undefined || r.phase === null ? undefined : this.#phase(r.phase, r.phase, now, now, {});
    if (p.at !== this.#seenAt) {
      this.#seenAt = p.at;
      this.#seenLocal = now;
    }
    const inPhaseMs = Math.max(0, Date.parse(p.at) - Date.parse(p.phaseStartedAt));
    const started = this.#phase(p.phase, `${p.phase}@${p.phaseStartedAt}`, this.#seenLocal - inPhaseMs, now, {});
    // The rate over the worker's own interval: bytes between the phase start and the write.
    return p.bytes > 0 ? { ...started, bytes: { count: p.bytes, at: started.phaseStartedAt + inPhaseMs } } : started;
  }

  /**
   * What a queued capture waits for: a worker, or the retry of a failed attempt (its error, and the seconds to the
   * retry: the worker's delay from the failure, counted from when this process first saw it, so clock skew never shows).
   */
  #waiting(r: RecordProgressView, now: number): Pick<ProgressState, 'note' | 'event'> {
    const last = r.failedAttempts?.at(-1);
    if (last?.nextAttemptAt === undefined || last.nextAttemptAt === null) return { note: 'waiting for a worker' };
    const key = `${last.attempt}@${last.failedAt}`;
    if (key !== this.#failureKey) {
      this.#failureKey = key;
      this.#failureSeenLocal = now;
    }
    const dueIn = this.#failureSeenLocal + Math.max(0, Date.parse(last.nextAttemptAt) - Date.parse(last.failedAt)) - now;
    const when = dueIn > 0 ? `retrying in ${Math.ceil(dueIn / 1000)} s` : 'retrying now';
    return { note: `${failedAttemptText(last)}; ${when}`, event: key };
  }

  #phase(phase: string, key: string, startedAt: number, now: number, extra: Pick<ProgressState, 'note' | 'event'>): ProgressState {
    if (key !== this.#phaseKey) {
      this.#phaseKey = key;
      this.#phaseStartedAt = Math.min(startedAt, now);
    } else {
      this.#phaseStartedAt = Math.min(this.#phaseStartedAt, startedAt);
    }
    return { phase, phaseStartedAt: this.#phaseStartedAt, ...extra };
  }
}

/** One failed attempt: `attempt 1 of 3 failed: target_unreachable (connect ECONNREFUSED 127.0.0.1:9)`. */
export function failedAttemptText(f: { attempt: number; of: number; code: string; message: string }): string {
  return `attempt ${f.attempt} of ${f.of} failed: ${f.code} (${f.message})`;
}

/** Follows the engine's progress events of a capture run in this process. */
export function engineProgress(display: ProgressDisplay): (p: CaptureProgress | SamplingProgress) => void {
  let phase = '';
  let startedAt = 0;
  return (p) => {
    const now = Date.now();
    if (p.phase !== phase) {
      phase = p.phase;
      startedAt = now;
    }
    const state: ProgressState = { phase, phaseStartedAt: startedAt };
    if ('bytes' in p) state.bytes = { count: p.bytes, spilled: p.spilledBytes };
    if ('total' in p && p.total > 0) state.percent = Math.floor((100 * p.done) / p.total);
    display.set(state);
  };
}
