/**
 * The README's one-command demo: start the leaky demo service with
 * --inspect on a free port, let it leak for a moment, and capture a heap
 * snapshot of it with `heapcap capture` into ./data/captures.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';

const target = spawn(process.execPath, ['--inspect=127.0.0.1:0', 'examples/demo-target/leaky-service.cjs'], { stdio: ['ignore', 'pipe', 'pipe'] });
const stop = (): void => {
  if (target.exitCode === null) target.kill('SIGTERM');
};
process.on('exit', stop);

const port = await new Promise<number>((resolve, reject) => {
  const timer = setTimeout(() => reject(new Error('the demo target did not start its inspector within 10 s')), 10_000);
  createInterface({ input: target.stderr }).on('line', (line) => {
    const m = /Debugger listening on ws:\/\/127\.0\.0\.1:(\d+)\//.exec(line);
    if (m?.[1] !== undefined) {
      clearTimeout(timer);
      resolve(Number(m[1]));
    }
  });
  target.once('exit', (code) => reject(new Error(`the demo target exited (${code})`)));
});
await new Promise<void>((resolve) => {
  createInterface({ input: target.stdout }).on('line', (line) => {
    if (line === 'READY') resolve();
    else console.log(line);
  });
});
console.log(`demo target pid ${target.pid}, inspector on 127.0.0.1:${port}; letting it leak for 2 s…`);
await new Promise((r) => setTimeout(r, 2000));

const args = ['--import', 'tsx', 'packages/cli/src/main.ts', 'capture', '--node', `127.0.0.1:${port}`, '--target-id', 'demo-leaky-service', '--reason', 'README demo', ...process.argv.slice(2)];
console.log(`$ heapcap ${args.slice(3).join(' ')}`);
const cli = spawn(process.execPath, args, { stdio: 'inherit' });
const [code] = (await once(cli, 'exit')) as [number | null];
stop();
process.exitCode = code ?? 1;
