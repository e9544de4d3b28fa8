// A small HTTP service that leaks on purpose: every request's session object
// is "cached" in a Map that is never evicted. A timer simulates traffic so the
// heap grows without anyone calling it. Start it with --inspect to capture it.
'use strict';
const http = require('node:http');

const sessions = new Map();
let served = 0;

class Session {
  constructor(id) {
    this.id = id;
    this.createdAt = new Date(1_700_000_000_000 + id * 1000).toISOString();
    this.user = { name: `user-${id % 997}`, roles: ['reader', id % 7 === 0 ? 'admin' : 'member'] };
    // ~2 KB of payload per session: the leak a heap snapshot should point at.
    this.cart = Array.from({ length: 16 }, (_, i) => ({ sku: `SKU-${(id * 31 + i) % 10007}`, qty: (i % 3) + 1, note: 'x'.repeat(64) }));
  }
}

function handle(id) {
  served += 1;
  sessions.set(id, new Session(id)); // the bug: nothing ever deletes
}

const server = http.createServer((req, res) => {
  handle(served);
  res.setHeader('content-type', 'application/json');
  res.end(JSON.stringify({ served, cached: sessions.size, heapUsed: process.memoryUsage().heapUsed }));
});

const rate = Number(process.env.DEMO_SESSIONS_PER_TICK ?? 500);
const start = Number(process.env.DEMO_INITIAL_SESSIONS ?? 4000);
for (let i = 0; i < start; i++) handle(served);
setInterval(() => {
  for (let i = 0; i < rate; i++) handle(served);
}, 1000).unref();

// HOST: 0.0.0.0 in a container (docker-compose.yml); loopback everywhere else.
const host = process.env.HOST ?? '127.0.0.1';
server.listen(Number(process.env.PORT ?? 0), host, () => {
  const { port } = server.address();
  console.log(`leaky-service listening on http://${host}:${port} (${sessions.size} sessions cached)`);
  console.log('READY');
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
