/** The demo target: examples/demo-target/leaky-service.cjs with its inspector on a free loopback port. */
import { startChild, waitForLine, type DemoChild } from './demo-procs.ts';

/** A running demo target and its inspector port. */
export interface DemoTarget {
  child: DemoChild;
  inspectPort: number;
}

/** Start the leaky service with --inspect=127.0.0.1:0; resolves once its inspector and HTTP server are up (10 s each). */
export async function startDemoTarget(signal: AbortSignal): Promise<DemoTarget> {
  const child = startChild('demo target', process.execPath, ['--inspect=127.0.0.1:0', 'examples/demo-target/leaky-service.cjs'], { stdio: ['ignore', 'pipe', 'pipe'] });
  const opts = { proc: child.proc, ms: 10_000, signal };
  // Node prints the port it picked on stderr (INSPECTOR-FACTS.md); both streams are read to the end so the target never blocks on a full pipe.
  const inspector = waitForLine(child.proc.stderr!, /Debugger listening on ws:\/\/127\.0\.0\.1:(\d+)\//, 'the demo target did not start its inspector', opts);
  let ready = false;
  const up = waitForLine(child.proc.stdout!, /^READY$/, 'the demo target did not start', {
    ...opts,
    onLine: (line) => {
      if (line === 'READY') ready = true;
      else if (!ready) console.log(`  ${line}`);
    },
  });
  const [m] = await Promise.all([inspector, up]);
  return { child, inspectPort: Number(m[1]) };
}
