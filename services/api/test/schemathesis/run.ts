/** Where the schemathesis CLI (`st`) is: installed by scripts/test-deps.sh into a venv under the cache dir. */
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The pinned version (keep in step with scripts/test-deps.sh). */
export const SCHEMATHESIS_VERSION = '4.32.5';

/** The settings file of the contract test. */
export const SCHEMATHESIS_CONFIG = fileURLToPath(new URL('./schemathesis.toml', import.meta.url));

/** Path of `st`: HEAPCAP_SCHEMATHESIS, else the venv test-deps.sh made; throws saying how to install it. */
export function schemathesisBinary(env: NodeJS.ProcessEnv = process.env): string {
  const cache = env['XDG_CACHE_HOME'] ?? join(homedir(), '.cache');
  const st = env['HEAPCAP_SCHEMATHESIS'] ?? join(cache, 'heapcap', `schemathesis-${SCHEMATHESIS_VERSION}`, 'bin', 'st');
  if (!existsSync(st)) throw new Error(`schemathesis not found at ${st}: run \`bash scripts/test-deps.sh\` (npm test does) or set HEAPCAP_SCHEMATHESIS`);
  return st;
}
