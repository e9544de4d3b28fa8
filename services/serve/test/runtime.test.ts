/**
 * The service is tested on the runtime its image ships: scripts/run-tests.mjs
 * runs this file (and every service test) on the Node major of
 * deploy/Dockerfile's FROM lines, with that Node first on PATH, so
 * `bin/heapcap serve` (which execs `node`) runs on it too. On it, the AWS SDK
 * has no runtime warning to print; on the machine's Node 20 it does (the
 * control, so the check can fail).
 */
import assert from 'node:assert/strict';
import { readFileSync, readlinkSync, realpathSync } from 'node:fs';
import { delimiter, dirname } from 'node:path';
import { after, before, test } from 'node:test';
import { FREE_PORT, freePort, REPO_ROOT, startHeapcap, startRedis, systemNode, type RedisServer } from '@heapcap/testkit';
import { execFileSync } from 'node:child_process';

const majorOf = (version: string): number => Number(/^v?(\d+)\./.exec(version)?.[1]);
/** The Node major of the image's runtime stage (the last FROM). */
const IMAGE_MAJOR = (() => {
  const froms = [...readFileSync(`${REPO_ROOT}/deploy/Dockerfile`, 'utf8').matchAll(/^FROM node:(\d+)-/gm)];
  return Number(froms.at(-1)?.[1]);
})();
const WARNING = /NodeVersionSupportWarning/;

let redis: RedisServer;
before(async () => {
  redis = await startRedis();
});
after(async () => {
  await redis?.stop();
});

/** `heapcap serve --dev` with S3 storage (the SDK's client is built at start; no bucket needed for that), on the `node` PATH finds. */
async function serveOn(extraEnv: Record<string, string>): Promise<{ exe: string; stderr: string }> {
  const serve = await startHeapcap(['serve', '--dev'], {
    env: {
      HEAPCAP_REDIS_URL: redis.url,
      HEAPCAP_PORT: FREE_PORT,
      HEAPCAP_STORAGE: 's3://heapcap/captures',
      HEAPCAP_S3_ENDPOINT: `http://127.0.0.1:${await freePort()}`,
      AWS_ACCESS_KEY_ID: 'test',
      AWS_SECRET_ACCESS_KEY: 'test-secret',
      // run-tests sets it for the CLI's files; it must not hide the warning here.
      AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: '',
      ...extraEnv,
    },
  });
  try {
    // bin/heapcap execs node: the pid is node's.
    const exe = readlinkSync(`/proc/${serve.pid}/exe`);
    // The SDK emits its warning when the client is built, before serve listens; one request more for good measure.
    assert.equal((await fetch(`${serve.url}/healthz`)).status, 200);
    return { exe, stderr: serve.stderr.text() };
  } finally {
    await serve.stop();
  }
}

void test("the service's tests run on the image's Node major", () => {
  assert.ok(IMAGE_MAJOR >= 22, `deploy/Dockerfile runs Node ${IMAGE_MAJOR}`);
  assert.equal(majorOf(process.version), IMAGE_MAJOR, `this test runs on Node ${process.version}, the image on Node ${IMAGE_MAJOR}: run it through scripts/run-tests.mjs (or with HEAPCAP_TEST_NODE22's Node)`);
});

void test("bin/heapcap serve runs on the image's Node, and the AWS SDK prints no runtime warning", { timeout: 120_000 }, async () => {
  const { exe, stderr } = await serveOn({});
  assert.equal(exe, realpathSync(process.execPath), 'serve runs on the Node this test runs on');
  assert.doesNotMatch(stderr, WARNING, stderr);
});

void test('control: the same serve on the machine\'s Node 20 prints the AWS SDK warning', { timeout: 120_000 }, async (t) => {
  const node = systemNode();
  const version = execFileSync(node, ['--version'], { encoding: 'utf8' }).trim();
  if (majorOf(version) >= 22) {
    t.skip(`the machine's Node is ${version}: nothing for the SDK to warn about`);
    return;
  }
  const { exe, stderr } = await serveOn({ PATH: `${dirname(node)}${delimiter}${process.env.PATH ?? ''}` });
  assert.equal(exe, realpathSync(node));
  assert.match(stderr, WARNING);
  assert.match(stderr, new RegExp(`You are running node ${version.replaceAll('.', '\\.')}`));
});
