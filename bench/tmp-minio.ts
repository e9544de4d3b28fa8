import { startMinio } from '@heapcap/testkit';
const m = await startMinio();
await m.createBucket('bench');
console.log(`READY ${m.endpoint} ${m.accessKey} ${m.secretKey} ${m.region} pid ${m.pid()}`);
process.on('SIGTERM', () => { void m.stop().then(() => process.exit(0)); });
setInterval(() => {}, 1 << 30);
