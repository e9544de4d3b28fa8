import { execFile } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { tmpdir } from 'node:os';
import { promisify } from 'node:util';

const run = promisify(execFile);

/**
 * Node versions the tests run targets on: the system Node (20 here) and npm's `node@22` / `node@24` / `node@18`.
 * 'system' is the Node that started scripts/run-tests.mjs (HEAPCAP_TEST_NODE_SYSTEM), not
 * necessarily the one running the test file: the service's tests run on Node 22, their targets
 * stay where the tests put them.
 */
export type NodeVersion = 'system' | '22' | '24' | '18';

// One lookup per version and process: `npx -y node@22` costs ~1 s when cached
// in ~/.npm/_npx and a download otherwise.
const cache = new Map<NodeVersion, Promise<string>>();

/** Absolute path of a Node binary: HEAPCAP_TEST_NODE_SYSTEM (else process.execPath) for 'system', else via env override or `npx -y node@V`. */
export function nodeBinary(version: NodeVersion): Promise<string> {
  if (version === 'system') return Promise.resolve(systemNode());
  let found = cache.get(version);
  if (!found) {
    found = resolveNpmNode(version);
    // A failed lookup is not cached, so a later call can try again.
    found.catch(() => cache.delete(version));
    cache.set(version, found);
  }
  return found;
}

/** The machine's Node: the one run-tests.mjs runs on (it passes HEAPCAP_TEST_NODE_SYSTEM), else this process's. */
export function systemNode(): string {
  return process.env.HEAPCAP_TEST_NODE_SYSTEM || process.execPath;
}

async function resolveNpmNode(version: Exclude<NodeVersion, 'system'>): Promise<string> {
  const override = process.env[`HEAPCAP_TEST_NODE${version}`];
  if (override) return checkExecutable(override, `HEAPCAP_TEST_NODE${version}`);
  try {
    // cwd outside the workspace so npx does not consult the workspace's package.json.
    const { stdout } = await run('npx', ['-y', `node@${version}`, '-p', 'process.execPath'], {
      cwd: tmpdir(),
      env: childEnv(),
      timeout: 180_000,
    });
    const path = stdout.trim().split('\n').pop() ?? '';
    return checkExecutable(path, `npx -y node@${version}`);
  } catch (err) {
    const stderr = (err as { stderr?: string }).stderr ?? '';
    throw new Error(
      `cannot resolve Node ${version} (run scripts/test-deps.sh, or set HEAPCAP_TEST_NODE${version}): ${String(err)} ${stderr}`,
      { cause: err },
    );
  }
}

function checkExecutable(path: string, from: string): string {
  try {
    accessSync(path, constants.X_OK);
  } catch {
    throw new Error(`${from} gave "${path}", which is not an executable file`);
  }
  return path;
}

/** V8 version of a Node binary, e.g. "11.3.244.8-node.38" (raw `process.versions.v8`). */
export async function v8VersionOf(bin: string): Promise<string> {
  const { stdout } = await run(bin, ['-p', 'process.versions.v8'], {
    env: childEnv(),
    timeout: 30_000,
  });
  return stdout.trim();
}

/**
 * The environment for a child Node process: ours, minus what belongs to the test
 * process only (NODE_OPTIONS may hold `--import tsx`, which Node 18 cannot load;
 * NODE_TEST_CONTEXT makes a child think it is a test-runner subprocess), plus `extra`.
 */
export function childEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env = { ...process.env };
  delete env.NODE_OPTIONS;
  delete env.NODE_TEST_CONTEXT;
  return { ...env, ...extra };
}
