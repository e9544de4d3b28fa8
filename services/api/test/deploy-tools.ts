/** The deploy checks' external tools, as scripts/test-deps.sh installs them. */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

/** Keep in step with scripts/test-deps.sh. */
const KUBERNETES_VALIDATE_VERSION = '1.37.0';

/** kubernetes-validate from HEAPCAP_KUBERNETES_VALIDATE or the cache venv. */
export function kubernetesValidate(): string {
  const explicit = process.env['HEAPCAP_KUBERNETES_VALIDATE'];
  if (explicit !== undefined) return explicit;
  const cache = process.env['XDG_CACHE_HOME'] ?? join(homedir(), '.cache');
  const bin = join(cache, 'heapcap', `kubernetes-validate-${KUBERNETES_VALIDATE_VERSION}`, 'bin', 'kubernetes-validate');
  if (!existsSync(bin)) throw new Error(`kubernetes-validate missing at ${bin}: run bash scripts/test-deps.sh`);
  return bin;
}

const onPath = (cmd: string): boolean => spawnSync('sh', ['-c', `command -v ${cmd}`]).status === 0;

/** `kustomize build DIR` through kubectl's built-in kustomize or a kustomize binary. */
export function kustomizeBuild(dir: string): string {
  if (onPath('kubectl')) return execFileSync('kubectl', ['kustomize', dir], { encoding: 'utf8' });
  const bin = onPath('kustomize') ? 'kustomize' : join(homedir(), 'go', 'bin', 'kustomize');
  return execFileSync(bin, ['build', dir], { encoding: 'utf8' });
}

/** Keep in step with scripts/test-deps.sh. */
const HELM_VERSION = 'v3.22.0';

/** helm from HEAPCAP_HELM, else the one scripts/test-deps.sh builds (cached under the cache dir), else helm on PATH. */
export function helmBinary(): string {
  const explicit = process.env['HEAPCAP_HELM'];
  if (explicit !== undefined) return explicit;
  const cache = process.env['XDG_CACHE_HOME'] ?? join(homedir(), '.cache');
  const bin = join(cache, 'heapcap', `helm-${HELM_VERSION}`, 'helm');
  if (existsSync(bin)) return bin;
  if (onPath('helm')) return 'helm';
  throw new Error(`helm missing at ${bin}: run bash scripts/test-deps.sh`);
}

/** `helm template RELEASE CHART ARGS` (a local render: no cluster). */
export function helmTemplate(release: string, chart: string, args: string[] = []): string {
  return execFileSync(helmBinary(), ['template', release, chart, ...args], { encoding: 'utf8' });
}
