// Packs the `heapcap` npm package: deploy/npm (package.json and the bin script)
// plus the esbuild bundle (scripts/build.mjs --out, a fresh build of its own),
// versioned with the bundle's own `heapcap --version` so the package and the
// command never disagree.
//   node scripts/pack-npm.mjs [--out DIR]   → prints the tarball's path
// The bundle carries every dependency, so the package declares none: installed
// with `npm install <tarball>` it needs nothing else from a registry.
import { execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const { values } = parseArgs({ options: { out: { type: 'string' } } });
const out = resolve(values.out ?? process.cwd());

const stage = mkdtempSync(join(tmpdir(), 'heapcap-npm-'));
try {
  execFileSync(process.execPath, [join(ROOT, 'scripts/build.mjs'), '--out', join(stage, 'dist')], { stdio: ['ignore', 'ignore', 'inherit'] });
  const version = execFileSync(process.execPath, [join(stage, 'dist/heapcap.mjs'), '--version'], { encoding: 'utf8' }).trim();
  if (!/^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/.test(version)) throw new Error(`heapcap --version printed '${version}', not a semver version`);
  const manifest = JSON.parse(readFileSync(join(ROOT, 'deploy/npm/package.json'), 'utf8'));
  writeFileSync(join(stage, 'package.json'), `${JSON.stringify({ name: manifest.name, version, ...manifest }, null, 2)}\n`);
  cpSync(join(ROOT, 'deploy/npm/bin'), join(stage, 'bin'), { recursive: true });
  cpSync(join(ROOT, 'README.md'), join(stage, 'README.md'));
  // The command's messages and the README point at docs/*.md ("see docs/configuration.md"): ship them, so those
  // paths exist in the installed package (node_modules/heapcap/docs/). Text only; the screenshots stay out.
  cpSync(join(ROOT, 'docs'), join(stage, 'docs'), { recursive: true, filter: (src) => !/\.(png|jpe?g|gif|webp)$/i.test(src) });
  const packed = JSON.parse(execFileSync('npm', ['pack', '--json', '--pack-destination', out], { cwd: stage, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }));
  console.log(join(out, packed[0].filename));
} finally {
  rmSync(stage, { recursive: true, force: true });
}
