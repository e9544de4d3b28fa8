/**
 * Per-request retries bounded by time, for the AWS SDK's retry middleware.
 *
 * Why not the SDK's StandardRetryStrategy / ConfiguredRetryStrategy: they
 * bound attempts, not time, and share a client-wide retry-token bucket
 * (500 tokens, 14 per retry in @smithy/core 3.41) that four parts retrying
 * together through a one-minute outage drain in seconds, so the "outage longer
 * than the budget" rule would really be "about 35 retries". This strategy
 * gives each request its own clock: retry transient errors with exponential
 * backoff (jitter) until `maxAttempts` or `budgetMs` since the first attempt.
 */

/** The SDK's classification of a failed attempt (@smithy/types RetryErrorType). */
type RetryErrorType = 'TRANSIENT' | 'THROTTLING' | 'SERVER_ERROR' | 'CLIENT_ERROR';

/** Structural copy of @smithy/types RetryErrorInfo (the parts used here). */
interface RetryErrorInfo {
  errorType: RetryErrorType;
  retryAfterHint?: Date;
}

/** Retry limits for one S3 request. */
export interface RetryLimits {
  maxAttempts: number;
  baseDelayMs: number;
  maxDelayMs: number;
  budgetMs: number;
}

class BudgetRetryToken {
  readonly startedAt: number;
  readonly retries: number;
  readonly delayMs: number;

  constructor(startedAt: number, retries: number, delayMs: number) {
    this.startedAt = startedAt;
    this.retries = retries;
    this.delayMs = delayMs;
  }

  getRetryCount(): number {
    return this.retries;
  }

  getRetryDelay(): number {
    return this.delayMs;
  }
}

/**
 * RetryStrategyV2 for S3Client: the SDK classifies the error (5xx, throttling,
 * ECONNREFUSED/ECONNRESET/EPIPE/ETIMEDOUT, DNS, TimeoutError are TRANSIENT or
 * THROTTLING); this decides whether and when to try again.
 */
export class BudgetRetryStrategy {
  readonly mode = 'standard';
  readonly #limits: RetryLimits;

  constructor(limits: RetryLimits) {
    this.#limits = limits;
  }

  async acquireInitialRetryToken(_scope: string): Promise<BudgetRetryToken> {
    return new BudgetRetryToken(performance.now(), 0, 0);
  }

  async refreshRetryTokenForRetry(token: BudgetRetryToken, info: RetryErrorInfo): Promise<BudgetRetryToken> {
    const { maxAttempts, baseDelayMs, maxDelayMs, budgetMs } = this.#limits;
    // The middleware rethrows the request's own error when this throws.
    if (info.errorType !== 'TRANSIENT' && info.errorType !== 'THROTTLING') throw new Error('not retryable');
    const retries = token.retries + 1;
    if (retries >= maxAttempts) throw new Error('retry attempts exhausted');
    const ceiling = Math.min(maxDelayMs, baseDelayMs * 2 ** token.retries);
    // "Equal jitter": never less than half the ceiling, so a dead store is not hammered.
    let delay = ceiling / 2 + Math.random() * (ceiling / 2);
    if (info.retryAfterHint !== undefined) {
      delay = Math.max(delay, Math.min(info.retryAfterHint.getTime() - Date.now(), maxDelayMs));
    }
    const elapsed = performance.now() - token.startedAt;
    if (elapsed + delay > budgetMs) throw new Error('retry budget exhausted');
    return new BudgetRetryToken(token.startedAt, retries, Math.round(delay));
  }

  recordSuccess(_token: BudgetRetryToken): void {
    // No shared state: each request has its own budget.
  }
}
