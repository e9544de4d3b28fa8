/** parseConfig: the HEAPCAP_* contract, defaults, and errors that name the variable to fix. */
import assert from 'node:assert/strict';
import { resolve } from 'node:path';
import { test } from 'node:test';
import { ConfigError, parseConfig } from '../src/index.ts';

const MiB = 1024 * 1024;

/** Parses `env`, expects a ConfigError, and returns its issues. */
function issuesOf(env: Record<string, string | undefined>): { variable: string; message: string }[] {
  try {
    parseConfig(env);
  } catch (err) {
    assert.ok(err instanceof ConfigError, `not a ConfigError: ${String(err)}`);
    assert.equal(err.code, 'invalid_config');
    // Every issue's variable appears in the printed message, beside its reason.
    for (const i of err.issues) assert.ok(err.message.includes(`${i.variable}: ${i.message}`), err.message);
    return err.issues;
  }
  assert.fail(`parseConfig accepted ${JSON.stringify(env)}`);
}

/** Expects exactly one issue, on `variable`, whose message matches `pattern`. */
function rejects(env: Record<string, string | undefined>, variable: string, pattern: RegExp): void {
  const issues = issuesOf(env);
  assert.deepEqual(issues.map((i) => i.variable), [variable], JSON.stringify(issues));
  assert.match(issues[0]?.message ?? '', pattern);
}

void test('empty environment: the laptop defaults', () => {
  const c = parseConfig({});
  assert.equal(c.redisUrl, 'redis://127.0.0.1:6379');
  assert.deepEqual(c.storage, { kind: 'file', dir: resolve('./data/captures') });
  assert.equal(c.targetsFile, './heapcap.targets.yaml');
  assert.equal(c.tokensFile, undefined);
  assert.equal(c.host, '127.0.0.1');
  assert.equal(c.port, 8080);
  assert.equal(c.workerConcurrency, 2);
  assert.equal(c.logLevel, 'info');
  assert.equal(c.memoryCeilingBytes, 16 * MiB);
  assert.equal(c.spillDir, undefined);
});

void test('other variables are ignored; empty HEAPCAP_ values count as unset', () => {
  const c = parseConfig({ PATH: '/usr/bin', AWS_REGION: 'eu-west-1', HEAPCAP_PORT: '', HEAPCAP_TEST_ANYTHING: 'x' });
  assert.equal(c.port, 8080);
});

void test('S3 for MinIO: every HEAPCAP_S3_* variable lands in the storage config', () => {
  const c = parseConfig({
    HEAPCAP_STORAGE: 's3://heapcap-captures/team/prod/',
    HEAPCAP_S3_ENDPOINT: 'http://127.0.0.1:9000',
    HEAPCAP_S3_REGION: 'eu-central-1',
    HEAPCAP_S3_FORCE_PATH_STYLE: 'false',
    HEAPCAP_S3_SSE: 'aws:kms',
    HEAPCAP_S3_KMS_KEY_ID: 'heapcap-key',
    HEAPCAP_S3_STORAGE_CLASS: 'STANDARD_IA',
    HEAPCAP_S3_PART_SIZE_MB: '16',
    HEAPCAP_S3_QUEUE_SIZE: '2',
    HEAPCAP_PORT: '9090',
    HEAPCAP_LOG_LEVEL: 'debug',
  });
  assert.deepEqual(c.storage, {
    kind: 's3',
    bucket: 'heapcap-captures',
    prefix: 'team/prod',
    endpoint: 'http://127.0.0.1:9000',
    region: 'eu-central-1',
    forcePathStyle: false,
    sse: { kind: 'aws:kms', kmsKeyId: 'heapcap-key' },
    storageClass: 'STANDARD_IA',
    partSizeBytes: 16 * MiB,
    queueSize: 2,
  });
  assert.equal(c.port, 9090);
  assert.equal(c.logLevel, 'debug');
});

void test('S3 defaults: path style and us-east-1 with an endpoint; AWS chain decides the region without one', () => {
  const minio = parseConfig({ HEAPCAP_STORAGE: 's3://captures', HEAPCAP_S3_ENDPOINT: 'https://minio.internal:9000' });
  assert.equal(minio.storage.kind, 's3');
  if (minio.storage.kind !== 's3') return;
  assert.equal(minio.storage.prefix, '');
  assert.equal(minio.storage.region, 'us-east-1');
  assert.equal(minio.storage.forcePathStyle, true);
  assert.equal(minio.storage.sse, undefined);
  assert.equal(minio.storage.partSizeBytes, 8 * MiB);
  // Unset: derived from the part size (part buffers within 24 MiB).
  assert.equal(minio.storage.queueSize, 2);

  // A bucket in eu-west-1 with AWS_REGION=eu-west-1: a hard-coded us-east-1 here would send it to the wrong region.
  const aws = parseConfig({ HEAPCAP_STORAGE: 's3://captures/p', HEAPCAP_S3_SSE: 'AES256' });
  assert.equal(aws.storage.kind, 's3');
  if (aws.storage.kind !== 's3') return;
  assert.equal(aws.storage.region, undefined);
  assert.equal(aws.storage.forcePathStyle, false);
  assert.deepEqual(aws.storage.sse, { kind: 'AES256' });
});

void test('booleans and numbers are parsed from their string forms', () => {
  for (const [text, value] of [['true', true], ['1', true], ['yes', true], ['false', false], ['0', false], ['no', false]] as const) {
    const c = parseConfig({ HEAPCAP_STORAGE: 's3://captures', HEAPCAP_S3_FORCE_PATH_STYLE: text });
    assert.equal(c.storage.kind === 's3' && c.storage.forcePathStyle, value, text);
  }
  assert.equal(parseConfig({ HEAPCAP_MEMORY_CEILING_MB: '64' }).memoryCeilingBytes, 64 * MiB);
});

void test('bad endpoint URL names HEAPCAP_S3_ENDPOINT', () => {
  for (const bad of ['not a url', 'ftp://127.0.0.1:9000', '127.0.0.1:9000']) {
    rejects({ HEAPCAP_STORAGE: 's3://captures', HEAPCAP_S3_ENDPOINT: bad }, 'HEAPCAP_S3_ENDPOINT', /http:\/\/ or https:\/\/ URL/);
  }
});

void test('bad bucket names HEAPCAP_STORAGE and says why', () => {
  const cases: [string, RegExp][] = [
    ['s3://Upper_Case/x', /"Upper_Case" is not a valid bucket name/],
    ['s3://ab', /"ab" is not a valid bucket name/],
    ['s3://', /"" is not a valid bucket name/],
    ['s3://-leading-hyphen/x', /not a valid bucket name/],
    ['s3://two..dots', /two dots in a row/],
    ['s3://192.168.1.10/x', /IP address/],
    [`s3://${'a'.repeat(64)}`, /not a valid bucket name/],
  ];
  for (const [url, pattern] of cases) rejects({ HEAPCAP_STORAGE: url }, 'HEAPCAP_STORAGE', pattern);
});

void test('bad key prefix and unsupported schemes name HEAPCAP_STORAGE', () => {
  rejects({ HEAPCAP_STORAGE: 's3://captures/a//b' }, 'HEAPCAP_STORAGE', /empty, "\." or "\.\." segment/);
  rejects({ HEAPCAP_STORAGE: 's3://captures/a/../b' }, 'HEAPCAP_STORAGE', /empty, "\." or "\.\." segment/);
  rejects({ HEAPCAP_STORAGE: 'gs://captures/x' }, 'HEAPCAP_STORAGE', /unsupported storage URL "gs:\/\/captures\/x"/);
  rejects({ HEAPCAP_STORAGE: 'file://' }, 'HEAPCAP_STORAGE', /needs a directory/);
});

void test('unknown HEAPCAP_ variable is an error (a typo must not silently fall back to a default)', () => {
  rejects({ HEAPCAP_S3_ENDPIONT: 'http://127.0.0.1:9000' }, 'HEAPCAP_S3_ENDPIONT', /unknown setting/);
  // Unknown names are reported together with the other problems.
  const issues = issuesOf({ HEAPCAP_STORGE: 's3://captures', HEAPCAP_PORT: 'eighty' });
  assert.deepEqual(issues.map((i) => i.variable).sort(), ['HEAPCAP_PORT', 'HEAPCAP_STORGE']);
});

void test('aws:kms without a key id names HEAPCAP_S3_KMS_KEY_ID; a key id without aws:kms too', () => {
  rejects({ HEAPCAP_STORAGE: 's3://captures', HEAPCAP_S3_SSE: 'aws:kms' }, 'HEAPCAP_S3_KMS_KEY_ID', /required when HEAPCAP_S3_SSE=aws:kms/);
  // Otherwise the key id would be ignored and the artifacts stored without the intended encryption.
  rejects({ HEAPCAP_STORAGE: 's3://captures', HEAPCAP_S3_KMS_KEY_ID: 'k' }, 'HEAPCAP_S3_KMS_KEY_ID', /only used with HEAPCAP_S3_SSE=aws:kms/);
  rejects({ HEAPCAP_STORAGE: 's3://captures', HEAPCAP_S3_SSE: 'AES256', HEAPCAP_S3_KMS_KEY_ID: 'k' }, 'HEAPCAP_S3_KMS_KEY_ID', /only used with/);
  rejects({ HEAPCAP_STORAGE: 's3://captures', HEAPCAP_S3_SSE: 'kms' }, 'HEAPCAP_S3_SSE', /AES256|aws:kms/);
});

void test('port out of range names HEAPCAP_PORT', () => {
  for (const bad of ['65536', '70000', '-1', '80.5', 'http']) rejects({ HEAPCAP_PORT: bad }, 'HEAPCAP_PORT', /./);
  assert.equal(parseConfig({ HEAPCAP_PORT: '65535' }).port, 65535);
});

void test('other bad values each name their variable', () => {
  const cases: [string, string][] = [
    ['HEAPCAP_REDIS_URL', 'http://127.0.0.1:6379'],
    ['HEAPCAP_S3_FORCE_PATH_STYLE', 'maybe'],
    ['HEAPCAP_S3_STORAGE_CLASS', 'DEEP_ARCHIVE'],
    ['HEAPCAP_S3_PART_SIZE_MB', '4'],
    ['HEAPCAP_S3_PART_SIZE_MB', 'eight'],
    ['HEAPCAP_S3_QUEUE_SIZE', '0'],
    ['HEAPCAP_WORKER_CONCURRENCY', '0'],
    ['HEAPCAP_LOG_LEVEL', 'verbose'],
    ['HEAPCAP_MEMORY_CEILING_MB', '0'],
  ];
  for (const [variable, value] of cases) {
    const issues = issuesOf({ HEAPCAP_STORAGE: 's3://captures', [variable]: value });
    assert.deepEqual(issues.map((i) => i.variable), [variable], `${variable}=${value}: ${JSON.stringify(issues)}`);
  }
});

void test('several bad variables are all named at once', () => {
  const issues = issuesOf({ HEAPCAP_PORT: '99999', HEAPCAP_S3_ENDPOINT: 'nope', HEAPCAP_LOG_LEVEL: 'loud' });
  assert.deepEqual(issues.map((i) => i.variable).sort(), ['HEAPCAP_LOG_LEVEL', 'HEAPCAP_PORT', 'HEAPCAP_S3_ENDPOINT']);
});

void test('schedules and retention: defaults, durations, and the variable named when bad', () => {
  assert.deepEqual(parseConfig({}).schedules, { minIntervalMs: 60_000, keepLast: 48, maxAgeDays: 30, retentionIntervalMs: 600_000, recordTtlMs: 7 * 86_400_000 });
  const c = parseConfig({ HEAPCAP_SCHEDULE_MIN_INTERVAL: '1s', HEAPCAP_RETENTION_KEEP_LAST: '3', HEAPCAP_RETENTION_MAX_AGE_DAYS: '0', HEAPCAP_RETENTION_INTERVAL: '1h30m', HEAPCAP_RECORD_TTL_DAYS: '0.5' });
  assert.deepEqual(c.schedules, { minIntervalMs: 1_000, keepLast: 3, maxAgeDays: 0, retentionIntervalMs: 5_400_000, recordTtlMs: 43_200_000 });
  rejects({ HEAPCAP_SCHEDULE_MIN_INTERVAL: '1 minute' }, 'HEAPCAP_SCHEDULE_MIN_INTERVAL', /a duration such as "90s"/);
  rejects({ HEAPCAP_RETENTION_INTERVAL: '0s' }, 'HEAPCAP_RETENTION_INTERVAL', /a duration/);
  rejects({ HEAPCAP_RETENTION_KEEP_LAST: '0' }, 'HEAPCAP_RETENTION_KEEP_LAST', />=1|too small/i);
  rejects({ HEAPCAP_RETENTION_MAX_AGE_DAYS: '-1' }, 'HEAPCAP_RETENTION_MAX_AGE_DAYS', />=0|too small/i);
  rejects({ HEAPCAP_RECORD_TTL_DAYS: '0' }, 'HEAPCAP_RECORD_TTL_DAYS', />0|too small/i);
});

void test('API limits and trusted proxies: defaults, the forms HEAPCAP_TRUST_PROXY takes, and errors', () => {
  const d = parseConfig({});
  assert.deepEqual([d.rateLimitPerMinute, d.authFailureLimitPerMinute, d.trustProxy], [600, 30, false]);
  const c = parseConfig({ HEAPCAP_RATE_LIMIT: '100', HEAPCAP_AUTH_FAILURE_LIMIT: '5', HEAPCAP_TRUST_PROXY: '10.0.0.1,10.0.1.0/24' });
  assert.deepEqual([c.rateLimitPerMinute, c.authFailureLimitPerMinute, c.trustProxy], [100, 5, ['10.0.0.1', '10.0.1.0/24']]);
  assert.equal(parseConfig({ HEAPCAP_TRUST_PROXY: '1' }).trustProxy, 1);
  assert.equal(parseConfig({ HEAPCAP_TRUST_PROXY: 'true' }).trustProxy, true);
  rejects({ HEAPCAP_TRUST_PROXY: 'my-proxy' }, 'HEAPCAP_TRUST_PROXY', /hop count/);
  rejects({ HEAPCAP_AUTH_FAILURE_LIMIT: '0' }, 'HEAPCAP_AUTH_FAILURE_LIMIT', /./);
});

void test('Kubernetes service links (Services heapcap-api, heapcap-redis, heapcap) are left out, listed in serviceLinks; a misspelt setting is still refused', () => {
  // As the kubelet writes them (the serve test adds whole sets from @heapcap/testkit's serviceLinkEnv).
  const links = {
    HEAPCAP_API_SERVICE_HOST: '10.96.0.12',
    HEAPCAP_API_SERVICE_PORT: '80',
    HEAPCAP_API_SERVICE_PORT_HTTP: '80',
    HEAPCAP_API_PORT: 'tcp://10.96.0.12:80',
    HEAPCAP_API_PORT_80_TCP: 'tcp://10.96.0.12:80',
    HEAPCAP_API_PORT_80_TCP_PROTO: 'tcp',
    HEAPCAP_API_PORT_80_TCP_PORT: '80',
    HEAPCAP_API_PORT_80_TCP_ADDR: '10.96.0.12',
    HEAPCAP_REDIS_SERVICE_HOST: 'fd00::5',
    HEAPCAP_REDIS_PORT: 'tcp://[fd00::5]:6379',
    HEAPCAP_REDIS_PORT_6379_TCP_ADDR: 'fd00::5',
    HEAPCAP_PORT: 'tcp://10.96.0.13:8080',
    HEAPCAP_PORT_8080_UDP: 'udp://10.96.0.13:8080',
  };
  const config = parseConfig({ ...links, HEAPCAP_REDIS_URL: 'redis://redis:6379' });
  assert.deepEqual(config.serviceLinks, Object.keys(links).sort());
  // HEAPCAP_PORT=tcp://… (a Service named heapcap) is a link, not the listen port.
  assert.equal(config.port, 8080);
  assert.equal(parseConfig({ ...links, HEAPCAP_PORT: '9090' }).port, 9090);
  rejects({ ...links, HEAPCAP_REDIS_ULR: 'redis://redis:6379' }, 'HEAPCAP_REDIS_ULR', /did you mean HEAPCAP_REDIS_URL/);
  // The name alone is not enough: a value without the kubelet's shape is an unknown setting.
  rejects({ HEAPCAP_API_SERVICE_HOST: 'api.example.com' }, 'HEAPCAP_API_SERVICE_HOST', /unknown setting/);
  rejects({ HEAPCAP_REDIS_PORT: '6379' }, 'HEAPCAP_REDIS_PORT', /unknown setting/);
  rejects({ HEAPCAP_API_PORT: 'tcp://10.0.0.1:99999' }, 'HEAPCAP_API_PORT', /unknown setting/);
  rejects({ HEAPCAP_API_PORT_80_TCP_PROTO: 'http' }, 'HEAPCAP_API_PORT_80_TCP_PROTO', /unknown setting/);
  rejects({ HEAPCAP_PORT: 'tcp://api:80' }, 'HEAPCAP_PORT', /./);
  assert.deepEqual(parseConfig({}).serviceLinks, []);
});

void test('continuous allocation profiles: off by default, 512 KiB; an interval out of range or a bad every is refused naming the variable and the range', () => {
  assert.deepEqual(parseConfig({}).watch.profile, { everyMs: 0, samplingIntervalBytes: 512 * 1024 });
  assert.deepEqual(parseConfig({ HEAPCAP_PROFILE_EVERY: '10m', HEAPCAP_PROFILE_SAMPLING_INTERVAL: '65536' }).watch.profile, { everyMs: 600_000, samplingIntervalBytes: 65_536 });
  rejects({ HEAPCAP_PROFILE_SAMPLING_INTERVAL: '1024' }, 'HEAPCAP_PROFILE_SAMPLING_INTERVAL', /^profile_interval_out_of_range: .*between 16384 \(16 KiB\) and 16777216 \(16 MiB\)/);
  rejects({ HEAPCAP_PROFILE_SAMPLING_INTERVAL: '32MiB' }, 'HEAPCAP_PROFILE_SAMPLING_INTERVAL', /profile_interval_out_of_range/);
  rejects({ HEAPCAP_PROFILE_EVERY: '1s' }, 'HEAPCAP_PROFILE_EVERY', /0 \(off\) or between 5s and 1d/);
});
