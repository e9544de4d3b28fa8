/**
 * A redacted capture's page URL (issue 41): scheme, host and path stay;
 * query, fragment and userinfo go; what is not a URL shows nothing of itself.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { redactPageUrl, redactUrlsInText } from '../src/index.ts';

void test('query, fragment and userinfo are dropped; scheme, host, port and path stay', () => {
  assert.equal(redactPageUrl('https://alice:s3cret@shop.example:8443/cart/42?token=abc&x=1#frag'), 'https://shop.example:8443/cart/42');
  assert.equal(redactPageUrl('http://127.0.0.1:9000/secrets?token=t'), 'http://127.0.0.1:9000/secrets');
  assert.equal(redactPageUrl('file:///home/u/page.html?q=1'), 'file:///home/u/page.html');
  assert.equal(redactPageUrl('about:blank'), 'about:blank');
  assert.equal(redactPageUrl('data:text/html,<p>secret</p>'), 'data:…', "a data: URL's payload is content");
  assert.equal(redactPageUrl('not a url secret'), 'the page URL');
  assert.equal(redactPageUrl(''), '');
});

void test('URLs in a message: those with a query, fragment or userinfo shortened, the rest as written', () => {
  assert.equal(
    redactUrlsInText('targets seen: page "shop" https://shop.example/cart?token=abc; page "x" http://127.0.0.1:9/a#f; ws://127.0.0.1:9229/…'),
    'targets seen: page "shop" https://shop.example/cart; page "x" http://127.0.0.1:9/a; ws://127.0.0.1:9229/…',
  );
});
