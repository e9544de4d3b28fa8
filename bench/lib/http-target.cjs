'use strict';
// Bench target for the sampling-profile bench: an HTTP server whose every
// request allocates like a small JSON API (200 order objects built, then
// serialized, ~40 KB answered), with keep-alive. Prints `HTTP_PORT <n>`, then
// READY. Also takes the fixtures' stdin commands (the event-loop pause probe).
const http = require('node:http');
const { listenForCommands } = require('../../packages/testkit/fixtures/commands.cjs');

function buildOrders(seed) {
  const orders = [];
  for (let i = 0; i < 200; i++) {
    orders.push({ id: seed * 1000 + i, customer: `customer-${(seed + i) % 997}`, lines: [{ sku: `sku-${i % 50}`, qty: (i % 7) + 1 }], total: (seed + i) * 1.5 });
  }
  return orders;
}

let served = 0;
const server = http.createServer((req, res) => {
  const body = JSON.stringify({ orders: buildOrders(served++) });
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
});
server.keepAliveTimeout = 60_000;
listenForCommands();
server.listen(0, '127.0.0.1', () => {
  console.log(`HTTP_PORT ${server.address().port}`);
  console.log('READY');
});
