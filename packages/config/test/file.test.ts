/** loadConfigFile / parseConfigText: one error shape for every YAML/JSON configuration file, on real files. */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { z } from 'zod';
import { assertUniqueNames, ConfigFileError, loadConfigFile, parseConfigText } from '../src/index.ts';

const Schema = z.strictObject({ items: z.array(z.strictObject({ name: z.string(), port: z.number().int().min(1).max(65535) })).default([]) });

let dir: string;
before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'heapcap-config-file-'));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** The ConfigFileError `fn` throws. */
async function failure(fn: () => unknown): Promise<ConfigFileError> {
  try {
    await fn();
  } catch (err) {
    assert.ok(err instanceof ConfigFileError, String(err));
    assert.equal(err.code, 'invalid_config');
    return err;
  }
  assert.fail('did not throw');
}

void test('YAML and JSON files parse and validate; an empty file is an empty document', async () => {
  const yaml = join(dir, 'ok.yaml');
  await writeFile(yaml, 'items:\n  - { name: a, port: 1 }\n');
  assert.deepEqual(await loadConfigFile(yaml, Schema, { what: 'items file' }), { items: [{ name: 'a', port: 1 }] });
  const json = join(dir, 'ok.json');
  await writeFile(json, JSON.stringify({ items: [{ name: 'b', port: 2 }] }));
  assert.deepEqual(await loadConfigFile(json, Schema, { what: 'items file' }), { items: [{ name: 'b', port: 2 }] });
  assert.deepEqual(parseConfigText('', Schema, 'empty.yaml'), { items: [] });
});

void test('a syntax error names the file, the line and the column', async () => {
  const file = join(dir, 'syntax.yaml');
  await writeFile(file, 'items:\n  - { name: a, port: 1 }\nitems: []\n');
  const err = await failure(() => loadConfigFile(file, Schema, { what: 'items file' }));
  assert.equal(err.problem, 'syntax');
  assert.equal(err.file, file);
  assert.deepEqual([err.line, err.column], [3, 1]);
  assert.equal(err.message, `${file}:3:1: not YAML or JSON: Map keys must be unique`);
});

void test('a schema error names the file and the path of every refused field', async () => {
  const err = await failure(() => parseConfigText('items:\n  - { name: a, port: 0 }\n  - { name: b, port: 1, extra: 1 }\n', Schema, '/etc/x.yaml'));
  assert.equal(err.problem, 'schema');
  assert.deepEqual(err.issues.map((i) => i.path), ['items.0.port', 'items.1']);
  assert.match(err.message, /^\/etc\/x\.yaml: items\.0\.port: .*; items\.1: .*extra/);
  const top = await failure(() => parseConfigText('[1, 2]', Schema, 'top.yaml'));
  assert.match(top.message, /^top\.yaml: \(top level\): /);
});

void test('a missing file is unreadable, or the given default', async () => {
  const missing = join(dir, 'missing.yaml');
  const err = await failure(() => loadConfigFile(missing, Schema, { what: 'items file' }));
  assert.equal(err.problem, 'unreadable');
  assert.equal(err.message, `cannot read the items file ${missing}: ENOENT`);
  assert.deepEqual(await loadConfigFile(missing, Schema, { what: 'items file', ifMissing: { items: [] } }), { items: [] });
  // A directory is not "missing": the default does not hide it.
  const isDir = await failure(() => loadConfigFile(dir, Schema, { what: 'items file', ifMissing: { items: [] } }));
  assert.equal(isDir.problem, 'unreadable');
});

void test('a name that appears twice is refused with the file', async () => {
  assertUniqueNames('f.yaml', 'item name', ['a', 'b']);
  const err = await failure(() => assertUniqueNames('f.yaml', 'item name', ['a', 'b', 'a']));
  assert.equal(err.message, 'f.yaml: item name "a" appears twice');
});
