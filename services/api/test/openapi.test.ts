/** The OpenAPI document says what the server does: media types, target rules, PUT's id rule, new error codes. */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startRedis, type RedisServer } from '@heapcap/testkit';
import { startHarness, type Harness } from './harness.ts';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

void describe('OpenAPI document', () => {
  let redis: RedisServer;
  let h: Harness;
  let doc: Json;

  before(async () => {
    redis = await startRedis();
    h = await startHarness({ redisUrl: redis.url });
    doc = (await h.app.inject({ method: 'GET', url: '/openapi.json' })).json<Json>();
  });
  after(async () => {
    await h?.close();
    await redis?.stop();
  });

  void it('the artifact 200 is application/json or application/gzip', () => {
    const content = doc['paths']['/v1/captures/{id}/artifact']['get']['responses']['200']['content'] as Json;
    assert.deepEqual(Object.keys(content).sort(), ['application/gzip', 'application/json']);
  });

  void it('a target body states the ws scheme, the port range and exactly one of inspect/ws', () => {
    for (const [path, method] of [['/v1/targets', 'post'], ['/v1/targets/{id}', 'put']] as const) {
      const schema = doc['paths'][path][method]['requestBody']['content']['application/json']['schema'] as Json;
      const node = (schema['oneOf'] as Json[]).find((s) => s['properties']['kind']['enum']?.[0] === 'node' || s['properties']['kind']['const'] === 'node') as Json;
      assert.deepEqual(node['oneOf'], [{ required: ['inspect'] }, { required: ['ws'] }]);
      const ws = new RegExp(node['properties']['ws']['pattern'] as string);
      const inspect = new RegExp(node['properties']['inspect']['pattern'] as string);
      assert.ok(ws.test('ws://127.0.0.1:9229/x') && ws.test('wss://h:65535/x'));
      for (const bad of ['https://0.com', 'ws://h:0/x', 'ws://h:99999/x']) assert.ok(!ws.test(bad), bad);
      assert.ok(inspect.test('127.0.0.1:9229'));
      for (const bad of ['127.0.0.1:0', 'h:99999', '[0]:0']) assert.ok(!inspect.test(bad), bad);
    }
    assert.match(doc['paths']['/v1/targets/{id}']['put']['description'] as string, /`id` must equal the `id` in the URL/);
  });

  void it('lists the error codes the server answers with', () => {
    const codes = doc['paths']['/v1/captures']['get']['responses']['400']['content']['application/json']['schema']['properties']['error']['properties']['code']['enum'] as string[];
    for (const c of ['malformed_request', 'method_not_allowed', 'headers_too_large', 'rate_limited']) assert.ok(codes.includes(c), c);
  });

  void it('defect 9: every $ref resolves (WorkerList was referenced and missing)', () => {
    const refs = new Set<string>();
    const walk = (v: unknown): void => {
      if (Array.isArray(v)) v.forEach(walk);
      else if (v !== null && typeof v === 'object') {
        for (const [k, x] of Object.entries(v)) {
          if (k === '$ref' && typeof x === 'string') refs.add(x);
          else walk(x);
        }
      }
    };
    walk(doc);
    const missing = [...refs].filter((r) => {
      const path = r.replace(/^#\//, '').split('/');
      let at: unknown = doc;
      for (const p of path) at = (at as Json | undefined)?.[p];
      return at === undefined;
    });
    assert.deepEqual(missing, []);
  });

  void it('every operation has an operationId, and each is unique (docs/api.md promises them)', () => {
    const ids: string[] = [];
    for (const [path, ops] of Object.entries(doc['paths'] as Json)) {
      for (const [method, op] of Object.entries(ops as Json)) {
        if (!['get', 'post', 'put', 'patch', 'delete'].includes(method)) continue;
        assert.equal(typeof (op as Json)['operationId'], 'string', `${method.toUpperCase()} ${path} has no operationId`);
        ids.push((op as Json)['operationId'] as string);
      }
    }
    assert.equal(new Set(ids).size, ids.length, `duplicated: ${ids.filter((x, i) => ids.indexOf(x) !== i).join(', ')}`);
    assert.equal(doc['paths']['/v1/captures/{id}/pin']['post']['operationId'], 'pinCapture');
    assert.equal(doc['paths']['/v1/captures/{id}/pin']['delete']['operationId'], 'unpinCapture');
  });

  void it('Swagger UI at /docs/ sends a CSP that forbids framing, and X-Frame-Options DENY, on the page and its files', async () => {
    const page = await h.app.inject({ method: 'GET', url: '/docs/' });
    assert.equal(page.statusCode, 200);
    const files = [...page.body.matchAll(/(?:src|href)="\.?\/?([^"]+\.(?:js|css))"/g)].map((m) => m[1]!);
    assert.ok(files.length > 0, page.body);
    for (const res of [page, ...(await Promise.all(files.map((f) => h.app.inject({ method: 'GET', url: `/docs/${f.replace(/^docs\//, '')}` }))))]) {
      const csp = String(res.headers['content-security-policy'] ?? '');
      assert.match(csp, /default-src 'self'/, `${res.raw.req.url}: ${csp}`);
      assert.match(csp, /frame-ancestors 'none'/, `${res.raw.req.url}: ${csp}`);
      assert.doesNotMatch(csp, /upgrade-insecure-requests/);
      assert.equal(res.headers['x-frame-options'], 'DENY', res.raw.req.url);
    }
  });

  void it('defect 9: POST /v1/captures/{id}/pin has an optional body, as the server accepts none', () => {
    const body = doc['paths']['/v1/captures/{id}/pin']['post']['requestBody'] as Json | undefined;
    assert.notEqual(body?.['required'], true, JSON.stringify(body));
  });
  void it('no allOf joins a closed object (additionalProperties: false) with a property it forbids: no response could match', () => {
    const resolve = (v: Json): Json => {
      let at: Json = v;
      for (let i = 0; i < 20 && typeof at['$ref'] === 'string'; i++) {
        let r: unknown = doc;
        for (const p of (at['$ref'] as string).replace(/^#\//, '').split('/')) r = (r as Json)[p];
        at = r as Json;
      }
      return at;
    };
    // The object shapes a member can take: itself, or each object branch of its anyOf/oneOf.
    const shapes = (member: Json): Json[] => {
      const m = resolve(member);
      const branches = (m['anyOf'] ?? m['oneOf']) as Json[] | undefined;
      return branches === undefined ? [m] : branches.map(resolve).filter((b) => b['type'] !== 'null');
    };
    const bad: string[] = [];
    const walk = (v: unknown, at: string): void => {
      if (Array.isArray(v)) v.forEach((x, i) => walk(x, `${at}/${i}`));
      else if (v !== null && typeof v === 'object') {
        const all = (v as Json)['allOf'] as Json[] | undefined;
        if (all !== undefined) {
          const members = all.map(shapes);
          members.forEach((closed, i) => {
            if (closed.length === 0 || !closed.every((s) => s['additionalProperties'] === false)) return;
            const others = members.filter((_, j) => j !== i).flat().flatMap((s) => Object.keys((s['properties'] ?? {}) as Json));
            const forbidden = others.filter((p) => closed.every((s) => !Object.hasOwn((s['properties'] ?? {}) as Json, p)));
            if (forbidden.length > 0) bad.push(`${at}: ${forbidden.join(', ')}`);
          });
        }
        for (const [k, x] of Object.entries(v)) walk(x, `${at}/${k}`);
      }
    };
    walk(doc, '#');
    assert.deepEqual(bad, []);
  });
});
