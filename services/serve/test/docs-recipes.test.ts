/**
 * What new users copy from the docs works as written (issue 40): the README's token-hash recipe prints the hash
 * alone (it printed "hash  -"), the docs call the token one name ($TOKEN), and docs/configuration.md's
 * HEAPCAP_API_URL row names every command that reads it (each is run against an address nobody listens on, and
 * names that address in its error).
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { freePort, REPO_ROOT, runCommand, runHeapcap } from '@heapcap/testkit';

const readme = (): Promise<string> => readFile(join(REPO_ROOT, 'README.md'), 'utf8');

void test("the README's sha256sum recipe prints only the hash, the one the tokens file wants", async () => {
  const line = (await readme()).split('\n').find((l) => l.includes('| sha256sum'));
  assert.ok(line !== undefined, 'the README has the recipe');
  const command = line.replace(/\s+#.*$/, '');
  const token = 'a-token-for-the-recipe';
  const run = await runCommand('bash', ['-c', command], { env: { TOKEN: token } });
  assert.equal(run.code, 0, run.stderr);
  assert.equal(run.stdout, `${createHash('sha256').update(token).digest('hex')}\n`, `${command} printed ${JSON.stringify(run.stdout)}`);
});

void test('the docs call the bearer token $TOKEN everywhere (no $ADMIN_TOKEN beside it), and the README does not say hunts have no view', async () => {
  const files = ['README.md', ...(await readdir(join(REPO_ROOT, 'docs'))).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
  for (const f of files) {
    const text = await readFile(join(REPO_ROOT, f), 'utf8');
    assert.doesNotMatch(text, /\$(?:HEAPCAP_)?ADMIN_TOKEN\b/, f);
  }
  assert.doesNotMatch(await readme(), /hunts have no\s+view/);
});

void test('docs/configuration.md names every command that reads HEAPCAP_API_URL, and each one does', async () => {
  const config = await readFile(join(REPO_ROOT, 'docs/configuration.md'), 'utf8');
  const row = config.split('\n').find((l) => l.startsWith('| `HEAPCAP_API_URL`'))!;
  const url = `http://127.0.0.1:${await freePort()}`;
  const commands: [string, string[]][] = [
    ['trigger', ['trigger', 'x']],
    ['status', ['status', '01JZ0000000000000000000000']],
    ['captures', ['captures', 'list']],
    ['targets', ['targets', 'list']],
    ['schedules', ['schedules', 'list']],
    ['watch', ['watch', 'list']],
    ['hunt', ['hunt', 'show', '01JZ0000000000000000000000']],
    ['diff', ['diff', '01JZ0000000000000000000000', '01JZ0000000000000000000001']],
  ];
  for (const [name, args] of commands) {
    assert.match(row, new RegExp(`\`(?:heapcap )?${name}\``), `the row names ${name}: ${row}`);
    const run = await runHeapcap(args, { env: { HEAPCAP_API_URL: url, HEAPCAP_TOKEN: 'docs-recipes-token-0000' }, timeoutMs: 60_000 });
    assert.notEqual(run.code, 0, `${args.join(' ')}: ${run.stdout}`);
    assert.ok(run.stderr.includes(url.replace('http://', '')), `heapcap ${args.join(' ')} names ${url}: ${run.stderr}`);
  }
});
