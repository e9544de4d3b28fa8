/**
 * Issue 25, defect 10: `wss://` against a real TLS server (a `ws` 8 server
 * over https, with a self-signed certificate made by `openssl` for this run).
 * The client trusts what it is told to (`ca`) or what the process trusts
 * (Node's roots plus NODE_EXTRA_CA_CERTS, the deployment's way), and refuses
 * the rest with the TLS error's code kept.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { WebSocketServer } from 'ws';
import { childEnv, REPO_ROOT, tmpDir, type TmpDir } from '@heapcap/testkit';
import { WsClient, WsError } from '../src/ws-client.ts';

const WS_CLIENT = join(REPO_ROOT, 'packages/capture/src/ws-client.ts');

void describe('issue 25 defect 10: wss:// against a ws 8 server over TLS', { timeout: 60_000 }, () => {
  let dir: TmpDir;
  let server: Server;
  let wss: WebSocketServer;
  let port: number;
  let caFile: string;
  let ca: Buffer;

  before(async () => {
    dir = await tmpDir('ws-tls');
    caFile = join(dir.path, 'cert.pem');
    const keyFile = join(dir.path, 'key.pem');
    // A P-256 key: generated in milliseconds, unlike RSA.
    execFileSync('openssl', [
      'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
      '-keyout', keyFile, '-out', caFile, '-days', '1', '-subj', '/CN=localhost',
      '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1',
    ], { stdio: 'pipe' });
    ca = readFileSync(caFile);
    server = createServer({ key: readFileSync(keyFile), cert: ca });
    wss = new WebSocketServer({ server });
    // Echoes each message with a prefix, so a reply proves both directions went through TLS.
    wss.on('connection', (ws) => ws.on('message', (d: Buffer) => ws.send(`echo:${d.toString()}`)));
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    port = (server.address() as AddressInfo).port;
  });

  after(async () => {
    for (const c of wss.clients) c.terminate();
    wss.close();
    server.close();
    await dir.cleanup();
  });

  async function roundTrip(url: string): Promise<string> {
    const client = await WsClient.open(url, { maxPayload: 1 << 20, ca });
    try {
      const reply = new Promise<string>((resolve) => client.listen((data) => resolve(data.toString()), () => undefined));
      client.send('x'.repeat(70_000));
      return await reply;
    } finally {
      client.terminate();
    }
  }

  void test('defect 10: with the CA given, a wss:// connection to an IP and to a host name carries messages both ways', async () => {
    assert.equal(await roundTrip(`wss://127.0.0.1:${port}/`), `echo:${'x'.repeat(70_000)}`);
    assert.equal(await roundTrip(`wss://localhost:${port}/devtools`), `echo:${'x'.repeat(70_000)}`);
  });

  void test('defect 10: an untrusted certificate rejects open() with the TLS code kept, in the WsError and its message', async () => {
    const err = await WsClient.open(`wss://127.0.0.1:${port}/`, { maxPayload: 1024 }).then(
      () => assert.fail('opened'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof WsError);
    assert.equal(err.code, 'DEPTH_ZERO_SELF_SIGNED_CERT');
    assert.match(err.message, /DEPTH_ZERO_SELF_SIGNED_CERT/);
    assert.ok(err.cause instanceof Error);
  });

  void test('defect 10: NODE_EXTRA_CA_CERTS is honoured (how a deployment trusts its own CA)', async () => {
    // Node reads NODE_EXTRA_CA_CERTS once at start: a process of its own.
    const script = `
      const { WsClient } = await import(${JSON.stringify(pathToFileURL(WS_CLIENT).href)});
      const c = await WsClient.open('wss://localhost:${port}/', { maxPayload: 1024 });
      const reply = await new Promise((resolve) => c.listen((d) => resolve(d.toString()), () => undefined), c.send('hi'));
      console.log(reply);
      c.terminate();
    `;
    const trusted = await runNode(script, { NODE_EXTRA_CA_CERTS: caFile });
    assert.equal(trusted.status, 0, trusted.stderr);
    assert.equal(trusted.stdout.trim(), 'echo:hi');
    // And without it the same script is refused: the variable is what made the difference.
    const untrusted = await runNode(script, {});
    assert.notEqual(untrusted.status, 0);
    assert.match(untrusted.stderr, /DEPTH_ZERO_SELF_SIGNED_CERT/);
  });
});

/** Runs an ES module script on this Node (TypeScript through tsx), asynchronously: the servers above live in this process. */
async function runNode(script: string, env: Record<string, string>): Promise<{ status: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: REPO_ROOT, env: { ...childEnv(), ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const [status] = (await once(child, 'exit')) as [number | null];
  return { status, stdout, stderr };
}
