/**
 * Audit entries for requests refused before anyone is known (a Slack request
 * whose signature does not verify), aggregated so that a flood cannot push
 * the real entries out of the capped audit stream.
 *
 * Measured before this existed: 105,000 unsigned `POST /slack/commands` in
 * 48 s wrote 105,000 `slack.rejected` entries, and the stream (capped at
 * 100,000) lost every earlier entry. Now, per fixed window (60 s by default):
 * the first refusal of a source is written at once (with its reason, so a
 * one-off misconfiguration reads as before); further refusals of that source
 * are only counted and written as one summary entry when the window ends; past
 * `maxSources` sources in a window, the rest share one summary entry. So a
 * window adds at most 2 × maxSources + 1 entries, whatever the number of
 * requests: 100,000 requests cost what 5,000 do.
 */

/** One audit entry to write: the client address (absent for the overflow summary) and the facts. */
export interface RejectionEntry {
  from: string | undefined;
  details: Record<string, unknown>;
}

/** Options of a RejectionAudit. */
export interface RejectionAuditOptions {
  windowMs: number;
  /** Sources with entries of their own per window; the rest share one summary. */
  maxSources: number;
  /** Writes an entry; must not throw (it logs its own failures). */
  write: (entry: RejectionEntry) => Promise<void>;
  /** Clock (tests). */
  now?: () => number;
}

interface SourceCount {
  /** Refusals after the first (the first has its own entry). */
  repeated: number;
  reasons: Record<string, number>;
}

/** What `note` decided: write the first entry of this source now, or only count it. */
export type RejectionVerdict = 'write' | 'counted';

/** Aggregates refused requests per source and window; see the file comment. */
export class RejectionAudit {
  readonly #opts: RejectionAuditOptions;
  readonly #now: () => number;
  #windowStart = 0;
  #sources = new Map<string, SourceCount>();
  #overflow: SourceCount = { repeated: 0, reasons: {} };
  #timer: NodeJS.Timeout | undefined;
  readonly #writes = new Set<Promise<void>>();

  constructor(opts: RejectionAuditOptions) {
    this.#opts = opts;
    this.#now = opts.now ?? Date.now;
  }

  /**
   * Counts one refusal of `source` (`reason`: why) and says whether the
   * caller should write its entry now ('write': the first of this source in
   * the window) or not ('counted': it goes into the window's summary).
   */
  note(source: string, reason: string): RejectionVerdict {
    this.#roll();
    const known = this.#sources.get(source);
    if (known !== undefined) {
      known.repeated += 1;
      known.reasons[reason] = (known.reasons[reason] ?? 0) + 1;
      return 'counted';
    }
    if (this.#sources.size < this.#opts.maxSources) {
      this.#sources.set(source, { repeated: 0, reasons: {} });
      this.#arm();
      return 'write';
    }
    this.#overflow.repeated += 1;
    this.#overflow.reasons[reason] = (this.#overflow.reasons[reason] ?? 0) + 1;
    this.#arm();
    return 'counted';
  }

  /** Writes the current window's summaries now and waits for every write (at close). */
  async flush(): Promise<void> {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#summarize();
    await Promise.allSettled([...this.#writes]);
  }

  /** Starts a new window when the current one has ended (its summaries written first). */
  #roll(): void {
    const now = this.#now();
    if (now - this.#windowStart < this.#opts.windowMs) return;
    this.#summarize();
    this.#windowStart = now;
  }

  /** One timer per window, so the counts are written even when the flood stops. */
  #arm(): void {
    if (this.#timer !== undefined) return;
    const left = Math.max(0, this.#windowStart + this.#opts.windowMs - this.#now());
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#summarize();
    }, left);
    // A pending summary never keeps the process alive; close() flushes it.
    this.#timer.unref();
  }

  #summarize(): void {
    const windowSeconds = Math.round(this.#opts.windowMs / 1000);
    const since = new Date(this.#windowStart).toISOString();
    for (const [source, c] of this.#sources) {
      if (c.repeated > 0) this.#write({ from: source, details: { repeated: c.repeated, reasons: c.reasons, since, windowSeconds } });
    }
    const o = this.#overflow;
    if (o.repeated > 0) {
      this.#write({ from: undefined, details: { repeated: o.repeated, reasons: o.reasons, otherSources: true, since, windowSeconds } });
    }
    this.#sources = new Map();
    this.#overflow = { repeated: 0, reasons: {} };
  }

  #write(entry: RejectionEntry): void {
    const p = this.#opts.write(entry);
    this.#writes.add(p);
    void p.finally(() => this.#writes.delete(p));
  }
}
