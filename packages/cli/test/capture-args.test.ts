/** `heapcap capture` flag parsing: storage selection keeps the configured S3 settings. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseConfig } from '@heapcap/config';
import { isCaptureError } from '@heapcap/errors';
import { parseCaptureArgs } from '../src/capture-args.ts';

const env = {
  HEAPCAP_S3_SSE: 'aws:kms',
  HEAPCAP_S3_KMS_KEY_ID: 'key-123',
  HEAPCAP_S3_STORAGE_CLASS: 'STANDARD_IA',
  HEAPCAP_S3_PART_SIZE_MB: '16',
  HEAPCAP_S3_REGION: 'eu-west-1',
};

void test('--out s3:// keeps encryption, storage class, part size and region from HEAPCAP_S3_*', () => {
  const config = parseConfig(env);
  const cmd = parseCaptureArgs(['--node', '127.0.0.1:9229', '--out', 's3://bucket/prefix', '--s3-endpoint', 'http://127.0.0.1:9000'], {
    storage: config.storage,
    memoryCeilingBytes: config.memoryCeilingBytes,
    spillDir: config.spillDir,
    s3: config.s3,
  });
  assert.equal(cmd.storage.kind, 's3');
  if (cmd.storage.kind !== 's3') return;
  assert.deepEqual(cmd.storage.sse, { kind: 'aws:kms', kmsKeyId: 'key-123' });
  assert.equal(cmd.storage.storageClass, 'STANDARD_IA');
  assert.equal(cmd.storage.partSizeBytes, 16 * 1024 * 1024);
  assert.equal(cmd.storage.region, 'eu-west-1');
  assert.equal(cmd.storage.endpoint, 'http://127.0.0.1:9000');
  assert.equal(cmd.storage.forcePathStyle, true);
  assert.equal(cmd.storage.bucket, 'bucket');
  assert.equal(cmd.storage.prefix, 'prefix');
});

void test('--out DIR is the filesystem sink; target ids derive from the target', () => {
  const config = parseConfig({});
  const cmd = parseCaptureArgs(['--pid', '4321', '--out', '/tmp/x'], { storage: config.storage, memoryCeilingBytes: config.memoryCeilingBytes, spillDir: undefined, s3: config.s3 });
  assert.deepEqual(cmd.storage, { kind: 'file', dir: '/tmp/x' });
  assert.equal(cmd.targetId, 'pid-4321');
  assert.deepEqual(cmd.endpoint, { kind: 'node-pid', pid: 4321 });
});

void test('--pick first goes with --chromium into the selector; anything else is refused', () => {
  const config = parseConfig({});
  const defaults = { storage: config.storage, memoryCeilingBytes: config.memoryCeilingBytes, spillDir: undefined, s3: config.s3 };
  const cmd = parseCaptureArgs(['--chromium', '127.0.0.1:9222', '--url-pattern', 'shop', '--pick', 'first'], defaults);
  assert.deepEqual(cmd.endpoint, { kind: 'chromium', browser: '127.0.0.1:9222', select: { urlPattern: 'shop', pick: 'first' } });
  assert.throws(() => parseCaptureArgs(['--chromium', '127.0.0.1:9222', '--pick', 'last'], defaults), (err: unknown) => isCaptureError(err, 'invalid_input') && /--pick "last"/.test(err.message));
  assert.throws(() => parseCaptureArgs(['--node', '127.0.0.1:9229', '--pick', 'first'], defaults), (err: unknown) => isCaptureError(err, 'invalid_input') && /go with --chromium/.test(err.message));
});
