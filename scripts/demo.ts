/**
 * `npm run demo`, the README's quick start: start the leaky demo service with
 * its inspector on a free loopback port, register it in a temporary targets
 * file, make sure a Redis answers (the configured one, else a private
 * redis-server, installed with apt-get first when missing and allowed), start
 * `bin/heapcap serve --dev`, trigger a capture with the runbook's one curl and
 * show the record and the artifact on disk. Then keep the service up until
 * Ctrl-C, or stop at once with --once (also when CI=true or stdin is not a
 * terminal). Only where no Redis can be had does it fall back to `heapcap
 * capture` straight at the target, saying why.
 *
 * The target and the private Redis are the test kit's processes (killed with
 * the demo, whatever ends it); the service runs in its own process group and is
 * stopped first, in order (scripts/demo-procs.ts).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { curlCommand, haveCurl, post, shq } from './demo-curl.ts';
import { startNodeTarget, startRedis, type NodeTarget, type RedisServer } from '@heapcap/testkit';
import { alive, exited, startChild, stopAll } from './demo-procs.ts';
import { haveRedisServer, installRedisServer, portFree, probeRedis } from './demo-redis.ts';
import { fileSize, formatResponse, mib, shortPath, type CaptureResponse } from './demo-report.ts';
import { startService, waitReady, type RunningService } from './demo-serve.ts';

const USAGE = `npm run demo [-- --once | --serve]

Starts a Node.js service that leaks on purpose, heapcap serve --dev with that
service registered as "demo-leaky-service", triggers a capture with curl and
shows where the heap snapshot landed (./data/captures). Then keeps the service
running until Ctrl-C and prints the console's URL (signed in: --dev).

  --once   stop everything after the capture and exit (default when CI=true or stdin is not a terminal)
  --serve  keep running after the capture even without a terminal (under nohup, a process manager, a test)
`;

const TARGET_ID = 'demo-leaky-service';
const DEFAULT_REDIS = 'redis://127.0.0.1:6379';
const DEFAULT_API = 'http://127.0.0.1:8080';
const WAIT_S = 60;
const LOG_DIR = 'data/demo';

const argv = process.argv.slice(2);
if (argv.includes('--help') || argv.includes('-h')) {
  process.stdout.write(USAGE);
  process.exit(0);
}
const unknown = argv.filter((a) => a !== '--once' && a !== '--serve');
if (unknown.length > 0 || (argv.includes('--once') && argv.includes('--serve'))) {
  process.stderr.write(`${unknown.length > 0 ? `unknown argument ${unknown.join(' ')}` : '--once and --serve contradict each other'}\n\n${USAGE}`);
  process.exit(2);
}
const once = !argv.includes('--serve') && (argv.includes('--once') || process.env['CI'] === 'true' || !process.stdin.isTTY);

// Ctrl-C, SIGTERM or a closed terminal: every wait below gives up and `finally` stops the children.
const stopper = new AbortController();
const signal = stopper.signal;
for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.on(sig, () => {
    // A terminal's Ctrl-C may arrive twice (npm forwards it too): stop once.
    if (signal.aborted) return;
    console.log(`\n${sig}: stopping…`);
    stopper.abort();
  });
}

const say = (s = ''): void => console.log(s);
const step = (s: string): void => say(`\n▸ ${s}`);
/** A Redis URL without its password, for printing. */
const safeUrl = (u: string): string => u.replace(/\/\/([^:@/]*):[^@/]*@/, '//$1:***@');

/** Started by the demo, stopped at its end (after the service). */
const owned: { redis?: RedisServer; target?: NodeTarget } = {};

/** Find a Redis for the service: the configured one if it answers, else a private redis-server (installed first if need be), else null. */
async function findRedis(): Promise<string | null> {
  const configured = process.env['HEAPCAP_REDIS_URL'] ?? DEFAULT_REDIS;
  const probe = await probeRedis(configured);
  if (probe.ok) {
    // Note: the service syncs the demo's targets file into this Redis's registry (other file-registered targets there are replaced).
    say(`  using the Redis that answers at ${safeUrl(configured)}${process.env['HEAPCAP_REDIS_URL'] === undefined ? ' (the default HEAPCAP_REDIS_URL)' : ' (HEAPCAP_REDIS_URL)'}`);
    return configured;
  }
  if (!haveRedisServer()) {
    say(`  no Redis at ${safeUrl(configured)} (${probe.why}) and redis-server is not installed: installing it (apt-get install redis-server)…`);
    const got = installRedisServer();
    if (!got.installed) {
      say(`  could not install redis-server: ${got.why}`);
      return null;
    }
    say(`  redis-server ${got.why}`);
  }
  const redis = await startRedis();
  owned.redis = redis;
  say(`  no Redis at ${safeUrl(configured)} (${probe.why}): started a private redis-server at ${redis.url} (no persistence, removed at exit)`);
  return redis.url;
}

/** No Redis anywhere: capture the target directly so the one command still produces a real snapshot. */
async function directCapture(target: NodeTarget): Promise<number> {
  say(
    [
      '',
      '  The service cannot start without Redis: it keeps its queue, capture records and target',
      '  locks there. To run it, install Redis:',
      '      apt-get install redis-server        (Debian/Ubuntu; brew install redis on macOS)',
      '  or  docker compose up -d redis           (the docker-compose.yml in this repository)',
      '  or  point HEAPCAP_REDIS_URL at one, then run npm run demo again.',
      '',
      '  Meanwhile, the same capture without the service: heapcap capture straight at the target.',
    ].join('\n'),
  );
  const args = ['capture', '--node', `127.0.0.1:${target.port}`, '--target-id', TARGET_ID, '--reason', 'README demo'];
  say(`\n$ heapcap ${args.map(shq).join(' ')}`);
  const cli = startChild('heapcap capture', 'bin/heapcap', args, { stdio: 'inherit' }, 10_000);
  while (!(await exited(cli.proc, 1_000)) && !signal.aborted);
  if (signal.aborted) return 130;
  return cli.proc.exitCode ?? 1;
}

/** Trigger the capture with curl (or fetch), print the result; its id when it succeeded and the artifact is on disk, else null. */
async function triggerWithCurl(service: RunningService): Promise<string | null> {
  const req = { url: `${service.url}/v1/captures?wait=${WAIT_S}`, body: JSON.stringify({ target: TARGET_ID, reason: 'README demo' }), maxTimeS: WAIT_S + 30 };
  const useCurl = haveCurl();
  if (!useCurl) say('  (curl is not installed: sending the same request with fetch)');
  say(`\n$ ${curlCommand(req)}`);
  const res = await post(req, useCurl, signal);
  let body: CaptureResponse;
  try {
    body = JSON.parse(res.body) as CaptureResponse;
  } catch {
    say(`HTTP ${res.status}: ${res.body.slice(0, 500)}`);
    return null;
  }
  writeFileSync(join(LOG_DIR, 'capture-response.json'), `${JSON.stringify(body, null, 2)}\n`);
  for (const line of formatResponse(res.status, body)) say(line);
  say(`  (the whole JSON response: ${LOG_DIR}/capture-response.json)`);
  const a = body.capture?.artifact;
  if (res.status !== 200 || body.capture?.status !== 'succeeded' || a == null) return null;
  const size = fileSize(a.location);
  if (size === null) {
    say(`  but ${a.location} is not on disk`);
    return null;
  }
  say(
    [
      '',
      `On disk: ${shortPath(a.location)} (${mib(size)}); gunzip it and load it in Chrome DevTools → Memory.`,
      'Or fetch it through the API (decompressed on the fly):',
      `$ curl -sS -o demo.heapsnapshot ${shq(`${service.url}${body.links?.artifact ?? `/v1/captures/${body.capture.id}/artifact`}`)}`,
    ].join('\n'),
  );
  return body.capture.id;
}

/**
 * The console's page for the demo target. No sign-in link: --dev turns
 * authentication off (and only listens on loopback), so the console is signed
 * in as `dev` for whoever opens it; a link carrying a session would grant
 * nothing more and would be one more secret to leak. Asked of the service
 * first, so the line never promises a console that would show a sign-in form.
 */
async function consoleUrl(service: RunningService): Promise<string> {
  const res = await fetch(`${service.url}/v1/session`, { signal: AbortSignal.timeout(10_000) });
  const session = (await res.json()) as { signedIn?: boolean; name?: string };
  if (!res.ok || session.signedIn !== true) throw new Error(`the console would not be signed in: GET /v1/session answered ${res.status} ${JSON.stringify(session)}`);
  return `${service.url}/ui/#/targets/${TARGET_ID}`;
}

/** Keep the service up until Ctrl-C (0) or until it or the target exits on its own (1). */
async function serveUntilStopped(service: RunningService, target: NodeTarget, captureId: string): Promise<number> {
  const env = service.url === DEFAULT_API ? '' : `HEAPCAP_API_URL=${service.url} `;
  say(
    [
      '',
      `heapcap is running (no auth: --dev, loopback only). Service logs: ${LOG_DIR}/serve.log`,
      `  API          ${service.url}/v1/captures`,
      `  API docs     ${service.url}/docs   (OpenAPI: ${service.url}/openapi.json)`,
      `  metrics      ${service.url}/metrics`,
      `  health       ${service.url}/readyz`,
      'Try, from another terminal:',
      `  ${env}npm run heapcap -- trigger ${TARGET_ID} --wait 60 --force`,
      `  ${env}npm run heapcap -- status ${captureId}`,
      `  curl -sS ${shq(`${service.url}/v1/captures?target=${TARGET_ID}`)}`,
      'Ctrl-C stops the service, the demo target and everything else this demo started.',
      '',
      `Console (signed in as dev): ${await consoleUrl(service)}`,
    ].join('\n'),
  );
  const ended = (what: string, proc: RunningService['child']['proc'] | NodeTarget['child']): Promise<string> =>
    new Promise((resolve) => (alive(proc) ? proc.once('exit', (code, sig) => resolve(`${what} exited (${sig ?? code})`)) : resolve(`${what} is not running`)));
  const stoppedByUser = new Promise<null>((resolve) => (signal.aborted ? resolve(null) : signal.addEventListener('abort', () => resolve(null), { once: true })));
  const why = await Promise.race([stoppedByUser, ended('heapcap serve', service.child.proc), ended('the demo target', target.child)]);
  if (why === null) return 0;
  say(`\n${why}; stopping the rest`);
  return 1;
}

async function run(tmp: string): Promise<number> {
  say('heapcap demo: a Node.js service that leaks on purpose, heapcap serve, and one curl');
  mkdirSync(LOG_DIR, { recursive: true });

  step('Starting the demo target (examples/demo-target/leaky-service.cjs)');
  // The demo target prints READY once it listens; its inspector port is read back from its stderr.
  const target = await startNodeTarget({ script: resolve('examples/demo-target/leaky-service.cjs'), readyTimeoutMs: 20_000 });
  owned.target = target;
  say(`  pid ${target.pid}, inspector on 127.0.0.1:${target.port}`);

  step('Redis (queue, capture records, target locks)');
  const redisUrl = await findRedis();
  if (redisUrl === null) return directCapture(target);

  step(`Registering the target as "${TARGET_ID}"`);
  const targetsFile = join(tmp, 'heapcap.targets.yaml');
  const targetsYaml = [
    '# Written by npm run demo; removed when it stops.',
    'targets:',
    `  - id: ${TARGET_ID}`,
    '    kind: node',
    `    inspect: 127.0.0.1:${target.port}`,
    '    labels: { service: demo-leaky-service, env: local, owner: you }',
    '',
  ].join('\n');
  writeFileSync(targetsFile, targetsYaml);
  say(`  ${targetsFile}:`);
  say(targetsYaml.trimEnd().replace(/^/gm, '    '));

  // 8080 (what `heapcap trigger` assumes) unless taken; then any free port.
  const port = process.env['HEAPCAP_PORT'] !== undefined ? Number(process.env['HEAPCAP_PORT']) : (await portFree(8080)) ? 8080 : 0;
  const storage = `file://${resolve('data/captures')}`;
  step('Starting heapcap serve --dev');
  say(`$ HEAPCAP_REDIS_URL=${safeUrl(redisUrl)} HEAPCAP_TARGETS_FILE=${targetsFile} HEAPCAP_STORAGE=${shq(storage)} HEAPCAP_PORT=${port} heapcap serve --dev`);
  const t0 = Date.now();
  const service = await startService({ redisUrl, targetsFile, storage, port, logFile: join(LOG_DIR, 'serve.log'), signal });
  await waitReady(service.url, signal);
  say(`  ${service.url}/readyz answered 200 after ${((Date.now() - t0) / 1000).toFixed(1)} s`);

  step(`Triggering a capture with curl (?wait=${WAIT_S}: the response is the final record)`);
  const captureId = await triggerWithCurl(service);
  if (captureId === null) {
    say(`\nThe capture did not succeed; the service log is ${LOG_DIR}/serve.log`);
    return 1;
  }
  if (once) {
    say('\n--once: stopping.');
    return 0;
  }
  return serveUntilStopped(service, target, captureId);
}

async function main(): Promise<number> {
  const tmp = mkdtempSync(join(tmpdir(), 'heapcap-demo-'));
  let code: number;
  try {
    code = await run(tmp);
  } catch (err) {
    if (signal.aborted) code = 130;
    else {
      process.stderr.write(`\ndemo failed: ${(err as Error).message}\n`);
      code = 1;
    }
  } finally {
    // The service first: it must not see its Redis vanish mid-shutdown.
    const stopped = await stopAll();
    if (owned.target !== undefined) {
      await owned.target.kill();
      stopped.push('demo target');
    }
    if (owned.redis !== undefined) {
      await owned.redis.stop();
      stopped.push('redis');
    }
    rmSync(tmp, { recursive: true, force: true });
    if (stopped.length > 0) say(`stopped: ${stopped.join(', ')}`);
  }
  return code;
}

process.exitCode = await main();
