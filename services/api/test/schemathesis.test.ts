/**
 * The OpenAPI document against the running service: schemathesis (`st`) with
 * every check and every phase (examples, coverage, fuzzing, stateful) against
 * a real `heapcap serve` with a real Redis and a real Node target registered.
 * Zero failures: no server error, and no response that disagrees with the
 * document, except the accepted deviations in schemathesis/schemathesis.toml
 * (listed in docs/api.md).
 */
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { fixturePath, freePort, runCommand, startHeapcap, startNodeTarget, startRedis, tmpDir, type NodeTarget, type RedisServer, type RunningHeapcap, type TmpDir } from '@heapcap/testkit';
import { hashToken } from '../src/index.ts';
import { SCHEMATHESIS_CONFIG, schemathesisBinary } from './schemathesis/run.ts';

// Test cases per operation in the generating phases (the coverage phase's cases do not depend on it).
// Measured in one sitting (load average 5-6 on 2 cores): 25 sent 3,624 cases for 66 CPU-s, 15 sends
// 3,233 for 53. Every operation keeps all of its coverage-phase cases and 15 of each generating phase.
const MAX_EXAMPLES = 15;
const SEED = 4711;
const TOKEN = 'st-token-3b9f1c7e5d2a4068';
/** The registered target; schemathesis.toml names it too. */
const TARGET_ID = 'st-node';

/** schemathesis 4.32's checks (`st run --help`). */
const ALL_CHECKS = [
  'not_a_server_error', 'status_code_conformance', 'content_type_conformance', 'response_headers_conformance', 'response_schema_conformance',
  'negative_data_rejection', 'positive_data_acceptance', 'missing_required_header', 'unsupported_method', 'allow_header_conformance',
  'use_after_free', 'ensure_resource_availability', 'ignored_auth', 'object_level_authorization',
];

let redis: RedisServer;
let dir: TmpDir;
let target: NodeTarget;
let serve: RunningHeapcap | undefined;

before(async () => {
  redis = await startRedis();
  dir = await tmpDir('heapcap-schemathesis');
  target = await startNodeTarget({ script: fixturePath('heap-holder.cjs'), env: { HEAP_MB: '2' } });
});
after(async () => {
  await serve?.stop('SIGKILL');
  await target?.kill();
  await redis?.stop();
  await dir?.cleanup();
});

void test(`schemathesis, all checks and phases (${MAX_EXAMPLES} examples per operation): no failures`, { timeout: 560_000 }, async () => {
  const st = schemathesisBinary();
  const tokensFile = join(dir.path, 'tokens.yaml');
  const targetsFile = join(dir.path, 'targets.yaml');
  await writeFile(tokensFile, `tokens:\n  - name: contract\n    sha256: "${hashToken(TOKEN)}"\n    scopes: [captures:read, captures:write, artifacts:read, targets:admin]\n`);
  await writeFile(targetsFile, `targets:\n  - id: ${TARGET_ID}\n    kind: node\n    inspect: 127.0.0.1:${target.port}\n    labels: { service: contract }\n`);
  const port = await freePort();
  // The command users type; it says where it serves once it listens.
  serve = await startHeapcap(['serve'], {
    env: {
      HEAPCAP_REDIS_URL: redis.url,
      HEAPCAP_PORT: String(port),
      HEAPCAP_TOKENS_FILE: tokensFile,
      HEAPCAP_TARGETS_FILE: targetsFile,
      HEAPCAP_STORAGE: `file://${join(dir.path, 'captures')}`,
      // One token and one address send every request: the limits must not turn the run into 429s.
      HEAPCAP_RATE_LIMIT: '1000000',
      HEAPCAP_AUTH_FAILURE_LIMIT: '1000000',
    },
  });
  const url = serve.url;
  const serveOutput = (): string => `${serve?.stdout.text() ?? ''}${serve?.stderr.text() ?? ''}`;

  const reportPath = join(dir.path, 'report.ndjson');
  const contract = await runCommand(
    st,
    ['--config-file', SCHEMATHESIS_CONFIG, 'run', `${url}/openapi.json`, '--max-examples', String(MAX_EXAMPLES), '--seed', String(SEED), '--no-color', '--report', 'ndjson', '--report-ndjson-path', reportPath],
    // The run is seeded and fixed in size; its time is CPU: ~60 s alone on a quiet 2-core machine, 165 s
    // beside two busy loops and another test file (past the 160 s this allowed before). A deadline that only
    // a stuck run reaches.
    { env: { HEAPCAP_ST_TOKEN: TOKEN, NO_COLOR: '1' }, cwd: dir.path, timeoutMs: 540_000 },
  );
  const code = contract.code;
  const output = contract.stdout + contract.stderr;
  assert.equal(code, 0, `st failed (exit ${code}):\n${output.slice(-12_000)}`);
  // Every phase ran, the stateful one included, and many cases were sent.
  for (const phase of ['Examples', 'Coverage', 'Fuzzing', 'Stateful']) assert.match(output, new RegExp(`${phase}`), output.slice(-3000));
  const generated = Number(/(\d+) generated/.exec(output)?.[1] ?? 0);
  assert.ok(generated > 500, `only ${generated} test cases generated:\n${output.slice(-3000)}`);
  assert.match(output, /Scenarios:\s+\d+/);
  // No server error was logged either (a 5xx is logged at error level with its cause).
  assert.doesNotMatch(serveOutput(), /"level":50/, serveOutput().slice(-5000));
  // Captures really ran against the target (the trigger dictionary names it).
  // Every check ran (the settings file enables them all, with the accepted exceptions per operation).
  const report = await readFile(reportPath, 'utf8');
  for (const check of ALL_CHECKS) assert.ok(report.includes(`"${check}"`), `check ${check} never ran`);
  const captures = (await (await fetch(`${url}/v1/captures?target=${TARGET_ID}&limit=100`, { headers: { authorization: `Bearer ${TOKEN}` } })).json()) as { items: unknown[] };
  assert.ok(captures.items.length > 0, 'no capture of the real target was triggered');

  assert.equal(await serve.stop(), 0, serveOutput().slice(-3000));
});
