import { heapHolderTarget } from './lib/targets.ts';
const node = (process.argv[2] ?? 'system') as 'system' | '22';
const mbs = Number(process.argv[3] ?? 300);
const t = await heapHolderTarget(node, mbs);
console.log(`READY ${t.inspect} pid ${t.target.pid}`);
process.on('SIGTERM', () => { void t.target.kill('SIGKILL').then(() => process.exit(0)); });
setInterval(() => {}, 1 << 30);
