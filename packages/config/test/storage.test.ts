/** parseStorageUrl: file and s3 URLs, as used by HEAPCAP_STORAGE and `heapcap capture --out`. */
import assert from 'node:assert/strict';
import { resolve } from 'node:path';
import { test } from 'node:test';
import { parseStorageUrl } from '../src/index.ts';

void test('file URLs and plain paths become absolute directories', () => {
  assert.deepEqual(parseStorageUrl('file://./data/captures'), { kind: 'file', dir: resolve('data/captures') });
  assert.deepEqual(parseStorageUrl('file:///var/lib/heapcap'), { kind: 'file', dir: '/var/lib/heapcap' });
  assert.deepEqual(parseStorageUrl('/srv/snapshots'), { kind: 'file', dir: '/srv/snapshots' });
  assert.deepEqual(parseStorageUrl('relative/dir'), { kind: 'file', dir: resolve('relative/dir') });
});

void test('s3 URLs: bucket, prefix without outer slashes, settings passed through', () => {
  const c = parseStorageUrl('s3://my.bucket-1//a/b/', { endpoint: 'http://127.0.0.1:9000', partSizeBytes: 5 * 1024 * 1024 });
  assert.equal(c.kind, 's3');
  if (c.kind !== 's3') return;
  assert.equal(c.bucket, 'my.bucket-1');
  assert.equal(c.prefix, 'a/b');
  assert.equal(c.endpoint, 'http://127.0.0.1:9000');
  assert.equal(c.region, 'us-east-1');
  assert.equal(c.forcePathStyle, true);
  assert.equal(c.partSizeBytes, 5 * 1024 * 1024);
  // Derived from the part size: 4 buffers of 5 MiB stay within 24 MiB.
  assert.equal(c.queueSize, 3);
  const bare = parseStorageUrl('s3://bucket');
  assert.equal(bare.kind === 's3' && bare.prefix, '');
});

void test('errors say how to fix the URL', () => {
  assert.throws(() => parseStorageUrl('s3://Bad/x'), /not a valid bucket name in s3:\/\/Bad\/x .*use s3:\/\/BUCKET\/PREFIX/);
  assert.throws(() => parseStorageUrl('https://bucket.s3.amazonaws.com/x'), /use file:\/\/DIR or s3:\/\/BUCKET\/PREFIX/);
  assert.throws(() => parseStorageUrl('s3://bucket/x', { sse: 'aws:kms' }), /HEAPCAP_S3_KMS_KEY_ID/);
  assert.throws(() => parseStorageUrl('s3://bucket/./x'), /"\." or "\.\." segment/);
});
