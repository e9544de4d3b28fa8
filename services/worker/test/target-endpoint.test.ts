/** A registered target on its way to the capture engine. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { TargetSchema } from '@heapcap/state';
import { targetToEndpoint } from '../src/target-endpoint.ts';

void test('a registered chromium target keeps select.pick on its way to the engine', () => {
  const target = TargetSchema.parse({ id: 'shop', kind: 'chromium', browser: '127.0.0.1:9222', select: { urlPattern: 'shop', pick: 'first' } });
  assert.deepEqual(targetToEndpoint(target), { kind: 'chromium', browser: '127.0.0.1:9222', select: { urlPattern: 'shop', pick: 'first' } });
  assert.equal(TargetSchema.safeParse({ id: 'shop', kind: 'chromium', browser: '127.0.0.1:9222', select: { pick: 'any' } }).success, false);
});
