/**
 * Runs the benches of this workspace in sequence, or the ones named:
 *
 *   node --import tsx bench/run.ts [warm|safety|rss|gzip-level|s3|throughput|capturer-cpu|cli-cpu|loaded|api|headroom-model|summary|redis-footprint|watch-session|sampling|profiles|continuous-profile|scale|suspects|redact|soak|console|capture-floor|hunt-tracking ...] [--name=value ...]
 *
 * `--name=value` arguments are left for the benches to read (bench/scale.ts: --targets=10000 …).
 *
 * Exits non-zero when any bench check failed (each failure is printed as
 * `FAIL [bench] ...` and summarised at the end) or a bench crashed.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Check } from './lib/report.ts';

type Bench = () => Promise<Check[]>;

/** gzip-level.ts is a standalone measurement script (no checks): it runs as a child process. */
function script(file: string): Bench {
  return () =>
    new Promise((resolve, reject) => {
      const path = fileURLToPath(new URL(file, import.meta.url));
      if (!existsSync(path)) return reject(new Error(`${path} does not exist`));
      const child = spawn(process.execPath, ['--import', 'tsx', path], { stdio: 'inherit' });
      child.once('error', reject);
      child.once('exit', (code, signal) => resolve([{ bench: file, what: 'script exits 0', ok: code === 0, detail: `exit ${code ?? signal}` }]));
    });
}

const BENCHES: Record<string, () => Promise<Bench>> = {
  warm: async () => (await import('./warm.ts')).warmBench,
  safety: async () => (await import('./safety.ts')).safetyBench,
  rss: async () => (await import('./rss.ts')).rssBench,
  'gzip-level': async () => script('./gzip-level.ts'),
  s3: async () => (await import('./s3.ts')).s3Bench,
  throughput: async () => (await import('./throughput.ts')).throughputBench,
  'capturer-cpu': async () => (await import('./capturer-cpu.ts')).capturerCpuBench,
  'cli-cpu': async () => (await import('./cli-cpu.ts')).cliCpuBench,
  loaded: async () => (await import('./loaded.ts')).loadedBench,
  api: async () => (await import('./api.ts')).apiBench,
  'headroom-model': async () => (await import('./headroom-model.ts')).headroomModelBench,
  summary: async () => (await import('./summary.ts')).summaryBench,
  'redis-footprint': async () => (await import('./redis-footprint.ts')).redisFootprintBench,
  'watch-session': async () => (await import('./watch-session.ts')).watchSessionBench,
  sampling: async () => (await import('./sampling.ts')).samplingBench,
  profiles: async () => (await import('./profiles.ts')).profilesBench,
  'continuous-profile': async () => (await import('./continuous-profile.ts')).continuousProfileBench,
  scale: async () => (await import('./scale.ts')).scaleBench,
  suspects: async () => (await import('./suspects.ts')).suspectsBench,
  redact: async () => (await import('./redact.ts')).redactBench,
  soak: async () => (await import('./soak.ts')).soakBench,
  console: async () => (await import('./console.ts')).consoleBench,
  'capture-floor': async () => (await import('./capture-floor.ts')).captureFloorBench,
  'hunt-tracking': async () => (await import('./hunt-tracking.ts')).huntTrackingBench,
};

// Ctrl-C / SIGTERM: exit through process.exit so the test kit's exit hook kills every target we started.
for (const sig of ['SIGINT', 'SIGTERM'] as const) process.once(sig, () => process.exit(130));

const names = process.argv.slice(2).filter((a) => !a.startsWith('--'));
for (const n of names) {
  if (!(n in BENCHES)) {
    console.error(`unknown bench "${n}"; known: ${Object.keys(BENCHES).join(', ')}`);
    process.exit(2);
  }
}

const failed: Check[] = [];
let crashed = false;
for (const name of names.length > 0 ? names : Object.keys(BENCHES)) {
  const t0 = performance.now();
  console.log(`\n=== bench ${name} ===`);
  try {
    const bench = await (BENCHES[name] as () => Promise<Bench>)();
    failed.push(...(await bench()).filter((c) => !c.ok));
  } catch (err) {
    crashed = true;
    console.error(`bench ${name} crashed:`, err);
  }
  console.log(`=== bench ${name} done in ${((performance.now() - t0) / 1000).toFixed(0)} s ===`);
}

if (failed.length > 0 || crashed) {
  console.log(`\nbenches FAILED:${crashed ? ' (a bench crashed, see above)' : ''}`);
  for (const c of failed) console.log(`  FAIL [${c.bench}] ${c.what} (${c.detail})`);
  process.exitCode = 1;
} else {
  console.log('\nall bench checks passed');
}
