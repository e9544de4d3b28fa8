/**
 * Answers given before any route runs are the error envelope too: bad URL
 * encoding (router), header bytes HTTP forbids and oversized headers (Node's
 * parser), undeclared methods (405), requests that arrive while closing (503).
 * Over a real socket: inject() bypasses Node's HTTP parser.
 */
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { startRedis, waitFor, type RedisServer } from '@heapcap/testkit';
import { TOKENS, nodeTarget, startHarness, type Harness } from './harness.ts';

const TOKEN = `Bearer ${TOKENS.runbook}`;

/** A raw HTTP/1.1 connection: write bytes, read everything the server sends. */
function rawConnection(port: number): { socket: Socket; text: () => string; closed: Promise<void> } {
  const socket = connect(port, '127.0.0.1');
  let text = '';
  socket.on('data', (d: Buffer) => (text += d.toString('utf8')));
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  socket.on('error', () => {});
  return { socket, text: () => text, closed };
}

interface Parsed {
  status: number;
  headers: Record<string, string>;
  body: { error: { code: string; message: string; details: Record<string, unknown> } };
}

/** Parses the `index`th response of `text` (Content-Length framed). */
function parseResponse(text: string, index = 0): Parsed {
  let rest = text;
  for (let i = 0; ; i++) {
    const headEnd = rest.indexOf('\r\n\r\n');
    assert.ok(headEnd > 0, `no complete response ${index} in ${JSON.stringify(text)}`);
    const [statusLine = '', ...lines] = rest.slice(0, headEnd).split('\r\n');
    const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
    const length = Number(headers['content-length']);
    const body = rest.slice(headEnd + 4, headEnd + 4 + length);
    if (i === index) return { status: Number(statusLine.split(' ')[1]), headers, body: JSON.parse(body) as Parsed['body'] };
    rest = rest.slice(headEnd + 4 + length);
  }
}

/** Sends `request` on a new connection and parses the answer once the server closes it. */
async function exchange(port: number, request: string): Promise<Parsed> {
  const c = rawConnection(port);
  c.socket.write(request);
  await waitFor(() => c.text().includes('\r\n\r\n{') && c.text().trimEnd().endsWith('}'), { timeoutMs: 10_000, what: 'a response' });
  c.socket.destroy();
  return parseResponse(c.text());
}

function assertEnvelope(res: Parsed, status: number, code: string): void {
  assert.equal(res.status, status, JSON.stringify(res));
  assert.equal(res.body.error.code, code);
  assert.equal(typeof res.body.error.message, 'string');
  assert.equal(typeof res.body.error.details, 'object');
  assert.match(res.headers['content-type'] ?? '', /^application\/json/);
}

void describe('the error envelope before any route runs', () => {
  let redis: RedisServer;
  let h: Harness;
  let port: number;

  before(async () => {
    redis = await startRedis();
    h = await startHarness({ redisUrl: redis.url, targets: [nodeTarget('app', 9229)] });
    await h.app.listen({ host: '127.0.0.1', port: 0 });
    const addr = h.app.server.address();
    port = typeof addr === 'object' && addr !== null ? addr.port : 0;
  });
  after(async () => {
    await h?.close();
    await redis?.stop();
  });

  void it('a path that is not valid percent-encoding → 400 malformed_request', async () => {
    const res = await exchange(port, `GET /v1/captures/%ff HTTP/1.1\r\nHost: x\r\nAuthorization: ${TOKEN}\r\nConnection: close\r\n\r\n`);
    assertEnvelope(res, 400, 'malformed_request');
  });

  void it('a path parameter longer than the router allows → 400 validation_failed naming params', async () => {
    const res = await exchange(port, `GET /v1/captures/${'a'.repeat(2000)} HTTP/1.1\r\nHost: x\r\nAuthorization: ${TOKEN}\r\nConnection: close\r\n\r\n`);
    assertEnvelope(res, 400, 'validation_failed');
    // Ids up to the schema's 128 characters reach the route (and are not found).
    const ok = await exchange(port, `GET /v1/captures/${'a'.repeat(128)} HTTP/1.1\r\nHost: x\r\nAuthorization: ${TOKEN}\r\nConnection: close\r\n\r\n`);
    assertEnvelope(ok, 404, 'not_found');
  });

  for (const [what, header] of [
    ['a bare CR', 'X-Note: a\rb'],
    ['a bare LF', 'X-Note: a\nb: c'],
    ['a NUL', 'X-Note: a\u0000b'],
  ] as const) {
    void it(`a header value with ${what} → 400 malformed_request, and the connection is closed`, async () => {
      const res = await exchange(port, `GET /v1/captures HTTP/1.1\r\nHost: x\r\nAuthorization: ${TOKEN}\r\n${header}\r\n\r\n`);
      assertEnvelope(res, 400, 'malformed_request');
      assert.equal(res.headers['connection'], 'close');
    });
  }

  void it('headers over 16 KiB → 431 headers_too_large', async () => {
    const res = await exchange(port, `GET /v1/captures HTTP/1.1\r\nHost: x\r\nAuthorization: ${TOKEN}\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
    assertEnvelope(res, 431, 'headers_too_large');
  });

  void it('a method the path does not have → 405 with Allow; without a token still 401', async () => {
    for (const [method, url, allow] of [
      ['TRACE', '/v1/targets', 'GET, POST'],
      ['PATCH', '/v1/captures/01ARZ3NDEKTSV4RRFFQ69G5FAV', 'DELETE, GET'],
      ['HEAD', '/v1/captures/01ARZ3NDEKTSV4RRFFQ69G5FAV/artifact', 'GET'],
      ['QUERY', '/v1/captures', 'GET, POST'],
    ] as const) {
      const res = await h.app.inject({ method: method as 'GET', url, headers: { authorization: TOKEN } });
      assert.equal(res.statusCode, 405, `${method} ${url}: ${res.body}`);
      assert.equal(res.headers['allow'], allow);
      if (method !== 'HEAD') assert.equal(res.json<{ error: { code: string } }>().error.code, 'method_not_allowed');
    }
    assert.equal((await h.app.inject({ method: 'TRACE', url: '/v1/targets' })).statusCode, 401);
    assert.equal((await h.app.inject({ method: 'GET', url: '/v1/nothing', headers: { authorization: TOKEN } })).statusCode, 404);
  });

  // Last: it closes the app.
  void it('a request that arrives while the API is closing → 503 unavailable in the envelope', async () => {
    const c = rawConnection(port);
    // The first request holds the connection busy (no worker: ?wait runs to its deadline).
    const body = '{"target":"app"}';
    c.socket.write(`POST /v1/captures?wait=3 HTTP/1.1\r\nHost: x\r\nAuthorization: ${TOKEN}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
    await waitFor(async () => (await h.queue.depth()).records['queued'] === 1, { timeoutMs: 10_000, what: 'the capture to be queued' });
    const closing = h.app.close();
    c.socket.write(`GET /v1/captures HTTP/1.1\r\nHost: x\r\nAuthorization: ${TOKEN}\r\n\r\n`);
    await closing;
    await waitFor(() => c.text().split('HTTP/1.1 ').length === 3 && c.text().trimEnd().endsWith('}'), { timeoutMs: 15_000, what: 'both responses' });
    c.socket.destroy();
    assert.equal(parseResponse(c.text(), 0).status, 202);
    assertEnvelope(parseResponse(c.text(), 1), 503, 'unavailable');
  });
});
