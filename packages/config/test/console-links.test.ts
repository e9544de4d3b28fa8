/** Console deep links: one shape for every page, ids encoded, any trailing slash of the public URL dropped. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { consoleLinks, consoleUrl } from '../src/index.ts';

void test('console links: capture, compare, hunt, target and watch rules under the public URL', () => {
  const u = 'https://heapcap.example';
  assert.equal(consoleLinks.capture(u, '01J7ZHH716228KMD1V49A92AEZ'), 'https://heapcap.example/ui/#/captures/01J7ZHH716228KMD1V49A92AEZ');
  assert.equal(consoleLinks.compare(`${u}/`, 'A1', 'B2'), 'https://heapcap.example/ui/#/compare?base=A1&head=B2');
  assert.equal(consoleLinks.hunt(u, 'H1'), 'https://heapcap.example/ui/#/hunts/H1');
  assert.equal(consoleLinks.target('http://127.0.0.1:8080', 'checkout api'), 'http://127.0.0.1:8080/ui/#/targets/checkout%20api');
  assert.equal(consoleLinks.watchRules(u), 'https://heapcap.example/ui/#/watch-rules');
  assert.equal(consoleLinks.captures(u, { status: 'failed' }), 'https://heapcap.example/ui/#/captures?status=failed');
  assert.equal(consoleUrl('https://h.example/heapcap', ['captures']), 'https://h.example/heapcap/ui/#/captures');
});
