/** HEAPCAP_REDIS_URL: one Redis or a cluster's seed nodes, and errors that say what is wrong. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError, parseConfig, parseRedisUrl } from '../src/index.ts';

void test('a redis+cluster:// URL names the seed nodes, credentials and TLS', () => {
  assert.deepEqual(parseRedisUrl('redis://127.0.0.1:6379/2'), { kind: 'single', url: 'redis://127.0.0.1:6379/2' });
  assert.deepEqual(parseRedisUrl('redis+cluster://10.0.0.1:7000,redis-b:7001'), {
    kind: 'cluster',
    nodes: [{ host: '10.0.0.1', port: 7000 }, { host: 'redis-b', port: 7001 }],
    tls: false,
  });
  assert.deepEqual(parseRedisUrl('rediss+cluster://app:p%40ss@h:6380/'), {
    kind: 'cluster',
    nodes: [{ host: 'h', port: 6380 }],
    tls: true,
    username: 'app',
    password: 'p@ss',
  });
  assert.equal(parseConfig({ HEAPCAP_REDIS_URL: 'redis+cluster://127.0.0.1:7000,127.0.0.1:7001' }).redisUrl, 'redis+cluster://127.0.0.1:7000,127.0.0.1:7001');
});

void test('a malformed cluster URL is refused by name, with the expected form', () => {
  for (const [url, says] of [
    ['redis+cluster://127.0.0.1', /"127\.0\.0\.1" is not HOST:PORT/],
    ['redis+cluster://h:7000,h:99999', /"h:99999" is not HOST:PORT/],
    ['redis+cluster://h:7000/3', /no database number/],
    ['http://h:7000', /redis\+cluster:\/\//],
  ] as const) {
    assert.throws(
      () => parseConfig({ HEAPCAP_REDIS_URL: url }),
      (err: unknown) => err instanceof ConfigError && err.message.includes('HEAPCAP_REDIS_URL') && says.test(err.message),
      url,
    );
  }
});
