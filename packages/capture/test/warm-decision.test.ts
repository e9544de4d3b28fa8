/** decideWarm and the V8 version helpers it stands on (the versions are the ones met on real targets). */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { compareVersions, decideWarm, needsLineEndsWarm, parseV8Version } from '../src/index.ts';

void describe('parseV8Version / compareVersions', () => {
  void test('parses Node and Chromium V8 versions, dropping suffixes', () => {
    assert.deepEqual(parseV8Version('11.3.244.8-node.38'), [11, 3, 244, 8]);
    assert.deepEqual(parseV8Version('12.4.254.21-node.33'), [12, 4, 254, 21]);
    assert.deepEqual(parseV8Version('15.6.75.27'), [15, 6, 75, 27]);
    assert.deepEqual(parseV8Version(' 10.2.154 '), [10, 2, 154, 0]);
    assert.equal(parseV8Version('node.js/v20'), undefined);
    assert.equal(parseV8Version(''), undefined);
    assert.equal(parseV8Version('11.3'), undefined);
  });

  void test('compares numerically, part by part', () => {
    assert.ok(compareVersions([11, 3, 244, 8], [11, 5, 130]) < 0);
    assert.ok(compareVersions([11, 10, 0], [11, 5, 130]) > 0, '10 > 5 as numbers, not strings');
    assert.equal(compareVersions([11, 5, 130, 0], [11, 5, 130]), 0);
    assert.ok(compareVersions([11, 5, 129, 99], [11, 5, 130]) < 0);
  });
});

void describe('decideWarm', () => {
  void test('auto warms before V8 11.5.130 (Node 20, Node 18) and says why', () => {
    for (const v of ['11.3.244.8-node.38', '10.2.154.26-node.36', '11.5.129.9']) {
      const d = decideWarm('auto', v);
      assert.equal(d.warm, true, v);
      assert.match(d.reason, new RegExp(`V8 ${v.replace(/\./g, '\\.')} < 11\\.5\\.130`));
    }
  });

  void test('auto skips from V8 11.5.130 on (Node 22, Chromium) and says why', () => {
    for (const v of ['11.5.130', '12.4.254.21-node.33', '15.6.75.27']) {
      const d = decideWarm('auto', v);
      assert.equal(d.warm, false, v);
      assert.match(d.reason, />= 11\.5\.130/);
    }
  });

  void test('auto warms when the version is unknown: a wasted warm costs little, a cold snapshot can cost minutes', () => {
    for (const v of [undefined, 'unknown']) {
      const d = decideWarm('auto', v);
      assert.equal(d.warm, true);
      assert.match(d.reason, /unknown/);
    }
    assert.equal(needsLineEndsWarm(undefined), undefined);
  });

  void test('always and never override the version', () => {
    assert.deepEqual(decideWarm('always', '15.6.75.27'), { warm: true, reason: 'warm: always was requested' });
    assert.deepEqual(decideWarm('never', '11.3.244.8-node.38'), { warm: false, reason: 'warm: never was requested' });
  });
});
