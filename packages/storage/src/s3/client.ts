/** Builds the S3Client the sink uses: endpoint, credentials, timeouts and the time-bounded retry strategy. */
import { S3Client } from '@aws-sdk/client-s3';
import type { S3SinkConfig } from './config.ts';
import { BudgetRetryStrategy } from './retry.ts';

/** An S3Client for `config` whose requests retry transient failures for at most `budgetMs` each. */
export function createS3Client(config: S3SinkConfig, budgetMs: number): S3Client {
  const { retry, timeouts } = config;
  return new S3Client({
    ...(config.endpoint === undefined ? {} : { endpoint: config.endpoint }),
    ...(config.region === undefined ? {} : { region: config.region }),
    ...(config.credentials === undefined ? {} : { credentials: config.credentials }),
    forcePathStyle: config.forcePathStyle,
    maxAttempts: retry.maxAttempts,
    retryStrategy: new BudgetRetryStrategy({ ...retry, budgetMs }),
    // Passed as options, the SDK builds its NodeHttpHandler from them.
    // connectionTimeout: a black-holed endpoint fails fast and is retried.
    // socketTimeout (idle): a SIGSTOPped or stalled store is waited for this long, then retried.
    // requestTimeout + throwOnRequestTimeout: a hard cap per attempt (without the flag it only logs).
    requestHandler: {
      connectionTimeout: timeouts.connectMs,
      socketTimeout: timeouts.idleMs,
      requestTimeout: timeouts.requestMs,
      throwOnRequestTimeout: true,
    },
  });
}
