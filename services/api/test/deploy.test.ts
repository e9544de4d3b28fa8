/**
 * The deployment files held against the code, since no container engine runs
 * here: docker-compose.yml, deploy/Dockerfile and the Kubernetes manifests
 * (built by kustomize) set only HEAPCAP_* variables that parseConfig accepts
 * and parses (a misspelt name fails it), the API's ports and probe paths are
 * the ones it serves, and every command they run is one bin/heapcap knows.
 * kubernetes-validate checks the manifests against the Kubernetes schemas,
 * promtool the alert rules, and every metric name the rules and the Grafana
 * dashboard use is one a real /metrics serves.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parseAllDocuments, parse as parseYaml } from 'yaml';
import { consoleLinks, parseConfig } from '@heapcap/config';
import { startRedis, tmpDir, type RedisServer, type TmpDir } from '@heapcap/testkit';
import { pino } from 'pino';
import { createQueue, Keys, loadTargetsFile } from '@heapcap/state';
import { CaptureWorker } from '@heapcap/worker';
import { startHarness, type Harness } from './harness.ts';
import { helmBinary, helmTemplate, kubernetesValidate, kustomizeBuild } from './deploy-tools.ts';

const ROOT = join(import.meta.dirname, '..', '..', '..');
const at = (p: string): string => join(ROOT, p);
/** The HTTP paths the API serves for probes. */
const PROBE_PATHS = new Set(['/healthz', '/readyz']);
const DEFAULT_PORT = parseConfig({}).port;

/** bin/heapcap knows `command` (its --help answers and names it). */
function assertCommand(command: string | undefined, where: string): void {
  assert.ok(command !== undefined, `${where}: no command`);
  const res = spawnSync(at('bin/heapcap'), [command, '--help'], { encoding: 'utf8', timeout: 120_000 });
  assert.equal(res.status, 0, `${where}: bin/heapcap ${command} --help failed: ${res.stdout}${res.stderr}`);
  assert.match(res.stdout, new RegExp(`^heapcap ${command}\\b`), `${where}: bin/heapcap ${command}`);
}

/** parseConfig accepts `env` (every HEAPCAP_* name known, every value parses). */
function assertConfig(env: Record<string, string>, where: string): ReturnType<typeof parseConfig> {
  try {
    return parseConfig(env);
  } catch (err) {
    assert.fail(`${where}: ${(err as Error).message}`);
  }
}

type Container = {
  name: string;
  args?: string[];
  env?: { name: string; value?: string; valueFrom?: unknown }[];
  envFrom?: { configMapRef?: { name: string }; secretRef?: { name: string } }[];
  ports?: { name?: string; containerPort: number }[];
  readinessProbe?: { httpGet?: { path: string; port: string | number } };
  livenessProbe?: { httpGet?: { path: string; port: string | number } };
  volumeMounts?: { name?: string; mountPath: string }[];
  securityContext?: { readOnlyRootFilesystem?: boolean; allowPrivilegeEscalation?: boolean; capabilities?: { drop?: string[] } };
};
type Doc = { kind: string; metadata: { name: string }; data?: Record<string, string>; spec?: { template?: { spec: { containers: Container[] } } } };

void describe('deployment files', () => {
  let redis: RedisServer;
  let h: Harness;
  let dir: TmpDir;

  before(async () => {
    redis = await startRedis();
    h = await startHarness({ redisUrl: redis.url });
    dir = await tmpDir('heapcap-deploy');
  });
  after(async () => {
    await h?.close();
    await redis?.stop();
    await dir?.cleanup();
  });

  void it('docker-compose.yml: the api and worker settings parse, ports, health checks and commands match the service', () => {
    const compose = parseYaml(readFileSync(at('docker-compose.yml'), 'utf8'), { merge: true }) as { services: Record<string, { command?: string[]; environment?: Record<string, string>; ports?: string[]; healthcheck?: { test: string[] }; volumes?: string[] }> };
    for (const name of ['api', 'worker']) {
      const svc = compose.services[name];
      assert.ok(svc !== undefined, `compose service ${name}`);
      const env = Object.fromEntries(Object.entries(svc.environment ?? {}).map(([k, v]) => [k, String(v)]));
      const config = assertConfig(env, `docker-compose.yml ${name}`);
      assertCommand(svc.command?.[0], `docker-compose.yml ${name}`);
      const mounts = (svc.volumes ?? []).map((v) => v.split(':')[1]);
      assert.ok(mounts.includes(config.targetsFile), `${name} mounts HEAPCAP_TARGETS_FILE ${config.targetsFile}`);
      if (name === 'api') {
        assert.ok(config.tokensFile !== undefined && mounts.includes(config.tokensFile), 'the api mounts its tokens file');
        assert.ok(svc.ports?.some((p) => p.endsWith(`:${config.port}`)), `api publishes HEAPCAP_PORT ${config.port}`);
        const probe = svc.healthcheck?.test.join(' ') ?? '';
        const url = /http:\/\/127\.0\.0\.1:(\d+)(\/[a-z]+)/.exec(probe);
        assert.ok(url !== null, `api health check ${probe}`);
        assert.equal(Number(url[1]), config.port);
        assert.ok(PROBE_PATHS.has(url[2]!), `api health check path ${url[2]}`);
      }
    }
  });

  void it('docker-compose.yml: Redis with AOF, MinIO and its bucket, api, worker and two demo targets; health checks and depends_on conditions; the targets file names the demo targets', async () => {
    type Svc = { image?: string; build?: unknown; command?: string[]; environment?: Record<string, string>; healthcheck?: { test: string[] }; depends_on?: Record<string, { condition?: string }>; restart?: string; networks?: string[] | Record<string, { ipv4_address?: string } | null>; volumes?: string[] };
    const compose = parseYaml(readFileSync(at('docker-compose.yml'), 'utf8'), { merge: true }) as { services: Record<string, Svc> };
    const svcs = compose.services;
    for (const name of ['redis', 'minio', 'minio-init', 'api', 'worker', 'demo-target', 'demo-page']) assert.ok(svcs[name] !== undefined, `compose service ${name}`);
    const oneShot = new Set(Object.entries(svcs).filter(([, s]) => s.restart === 'no').map(([n]) => n));
    assert.deepEqual([...oneShot], ['minio-init']);
    for (const [name, svc] of Object.entries(svcs)) {
      if (!oneShot.has(name)) assert.ok((svc.healthcheck?.test.length ?? 0) > 1, `${name} has a health check`);
      for (const [dep, { condition } = {}] of Object.entries(svc.depends_on ?? {})) {
        assert.ok(svcs[dep] !== undefined, `${name} depends on ${dep}, which is not a service`);
        assert.equal(condition, oneShot.has(dep) ? 'service_completed_successfully' : 'service_healthy', `${name} depends_on ${dep}`);
      }
    }
    // Redis: AOF, so queued captures and records survive a restart (docs/operations.md).
    assert.ok(svcs['redis']!.command!.join(' ').includes('--appendonly yes'), 'redis runs with --appendonly yes');
    // The bucket minio-init creates is HEAPCAP_STORAGE's, and the services wait for it.
    const workerEnv = Object.fromEntries(Object.entries(svcs['worker']!.environment ?? {}).map(([k, v]) => [k, String(v)]));
    const config = assertConfig(workerEnv, 'docker-compose.yml worker');
    assert.equal(config.storage.kind, 's3');
    const bucket = config.storage.kind === 's3' ? config.storage.bucket : '';
    assert.match(svcs['minio-init']!.command!.join(' '), new RegExp(`mc mb --ignore-existing local/${bucket}(\\s|$)`));
    for (const name of ['api', 'worker']) {
      assert.deepEqual(Object.keys(svcs[name]!.depends_on ?? {}).sort(), ['minio-init', 'redis'], `${name} waits for Redis and the bucket`);
    }

    // Every target of the compose targets file is a compose service on the worker's targets network, at its fixed address and port.
    const targets = await loadTargetsFile(at('deploy/heapcap.targets.yaml'));
    assert.deepEqual(targets.map((t) => [t.id, t.kind]).sort(), [['demo-leaky-service', 'node'], ['demo-page', 'chromium']]);
    const workerNetworks = Array.isArray(svcs['worker']!.networks) ? svcs['worker']!.networks : Object.keys(svcs['worker']!.networks ?? {});
    assert.ok(workerNetworks.includes('targets'), 'the worker is on the targets network');
    const onTargets = (name: string): string | undefined => {
      const nets = svcs[name]!.networks;
      return Array.isArray(nets) || nets === undefined ? undefined : (nets['targets'] ?? undefined)?.ipv4_address;
    };
    const node = targets.find((t) => t.kind === 'node');
    const page = targets.find((t) => t.kind === 'chromium');
    assert.ok(node?.kind === 'node' && page?.kind === 'chromium');
    assert.equal(node.inspect, `${onTargets('demo-target')}:9229`);
    assert.ok(svcs['demo-target']!.command!.includes('--inspect=0.0.0.0:9229'), 'demo-target inspector on 9229');
    assert.equal(page.browser, `${onTargets('demo-page')}:9222`);
    const pageCommand = svcs['demo-page']!.command!.join(' ');
    assert.match(pageCommand, /socat TCP-LISTEN:9222,\S* TCP:127\.0\.0\.1:(\d+) & exec chromium .*--remote-debugging-port=\1 /);
    const url = /\s(file:\/\/\S+)$/.exec(pageCommand)?.[1] ?? '';
    assert.match(url, new RegExp(page.select?.urlPattern ?? '^$'), `the page the demo opens (${url}) matches the target's urlPattern`);
    assert.ok(svcs['demo-page']!.volumes?.some((v) => v.startsWith('./examples/demo-page:/demo:')), 'the demo page is mounted');
    assert.ok(svcs['demo-page']!.healthcheck!.test.join(' ').includes('http://127.0.0.1:9222/json/version'), 'demo-page health check goes through the forwarded port');
    assert.ok(svcs['demo-target']!.healthcheck!.test.join(' ').includes(`http://127.0.0.1:${svcs['demo-target']!.environment?.['PORT']}/`), 'demo-target health check on its PORT');
  });

  void it("docker-compose.yml: the worker's health check passes exactly while a worker of its host beats in Redis", async () => {
    const compose = parseYaml(readFileSync(at('docker-compose.yml'), 'utf8'), { merge: true }) as { services: Record<string, { healthcheck?: { test: string[] }; environment?: Record<string, string> }> };
    const [cmd, ...args] = compose.services['worker']!.healthcheck!.test.slice(1);
    assert.equal(cmd, 'node');
    const script = args.at(-1)!;
    // The key pattern is the worker's heartbeat key under the default prefix (compose sets none).
    assert.ok(script.includes(`"KEYS ${new Keys('heapcap').worker('')}"`), `the check reads ${new Keys('heapcap').worker('')}<host>-*`);
    const check = (): number | null => spawnSync(cmd!, args, { env: { ...process.env, HEAPCAP_REDIS_URL: redis.url }, timeout: 10_000 }).status;
    const queue = createQueue({ redisUrl: redis.url });
    try {
      assert.equal(check(), 1, 'no worker: unhealthy');
      // Another host's worker does not make this one healthy.
      await queue.workers.beat({ id: 'elsewhere-1-abcdef', placements: ['*'], version: 'test', host: 'elsewhere', pid: 1, inFlight: 0, startedAt: new Date().toISOString(), lastSeenAt: new Date().toISOString() }, 10_000);
      assert.equal(check(), 1, "another host's worker: unhealthy");
      // The id a worker gives itself (CaptureWorker: <hostname>-<pid>-<random>).
      const worker = new CaptureWorker({ queue, sink: h.sink, log: pino({ level: 'silent' }), tuning: { concurrency: 1 } });
      await worker.start();
      try {
        assert.equal(check(), 0, 'a live worker on this host: healthy');
      } finally {
        await worker.close(2_000);
      }
    } finally {
      await queue.close();
    }
  });

  void it('deploy/Dockerfile: Node 22 runtime, the entry point is bin/heapcap, its command, port and health check match', () => {
    const text = readFileSync(at('deploy/Dockerfile'), 'utf8');
    const froms = [...text.matchAll(/^FROM (\S+)/gm)].map((m) => m[1]);
    assert.ok(froms.length >= 2 && froms.every((f) => /^node:(22|24)-/.test(f ?? '')), `FROM ${froms.join(', ')}`);
    const json = (instr: string): string[] => JSON.parse(new RegExp(`^${instr} (\\[.*\\])$`, 'm').exec(text)?.[1] ?? 'null') as string[];
    assert.deepEqual(json('ENTRYPOINT'), ['bin/heapcap']);
    assert.match(text, /^COPY bin\/heapcap bin\/heapcap$/m);
    assertCommand(json('CMD')[0], 'Dockerfile CMD');
    assert.match(text, new RegExp(`^EXPOSE ${DEFAULT_PORT}$`, 'm'));
    const health = /^HEALTHCHECK .*'(\/[a-z]+)'/m.exec(text);
    assert.ok(health !== null && PROBE_PATHS.has(health[1]!), 'HEALTHCHECK probes /healthz or /readyz');
    assert.match(text, /^USER node$/m);
    // The image must not hide the AWS SDK's runtime warning (services/serve/test/runtime.test.ts: none on Node 22).
    assert.doesNotMatch(text, /^[^#]*AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED/m);
  });

  /**
   * Rendered manifests (kustomize's or helm's): kubernetes-validate passes, every heapcap container's settings parse,
   * its command is one bin/heapcap knows, mounts, ports, probes and security context match; returns the documents.
   */
  function checkManifests(built: string, where: string, layout: 'node-workers' | 'sidecar'): Doc[] {
    const file = join(dir.path, `${where.replace(/[^\w.-]+/g, '_')}.yaml`);
    writeFileSync(file, built);
    const kv = spawnSync(kubernetesValidate(), ['--strict', '--quiet', file], { encoding: 'utf8' });
    assert.equal(kv.status, 0, `kubernetes-validate: ${kv.stdout}${kv.stderr}`);
    const docs = parseAllDocuments(built).map((d) => d.toJS() as Doc);
    const configMaps = new Map(docs.filter((d) => d.kind === 'ConfigMap').map((d) => [d.metadata.name, d.data ?? {}]));
    const workloads = docs.filter((d) => d.kind === 'Deployment' || d.kind === 'DaemonSet');
    let heapcapContainers = 0;
    for (const w of workloads) {
      for (const c of w.spec?.template?.spec.containers ?? []) {
        const cw = `${where} ${w.kind}/${w.metadata.name} container ${c.name}`;
        const fromMaps = (c.envFrom ?? []).map((e) => (e.configMapRef === undefined ? {} : configMaps.get(e.configMapRef.name)));
        if (fromMaps.some((m) => m === undefined)) assert.fail(`${cw}: envFrom names a ConfigMap that is not in the output`);
        if (!(c.envFrom ?? []).some((e) => e.configMapRef?.name === 'heapcap-env')) continue; // the app, not heapcap
        heapcapContainers += 1;
        // A value from the downward API stands for a node name.
        const own = Object.fromEntries((c.env ?? []).map((e) => [e.name, e.value ?? 'node-1']));
        const config = assertConfig(Object.assign({}, ...fromMaps, own) as Record<string, string>, cw);
        assertCommand(c.args?.[0], cw);
        assert.ok(c.volumeMounts?.some((m) => config.targetsFile.startsWith(`${m.mountPath}/`)), `${cw}: mounts HEAPCAP_TARGETS_FILE`);
        assert.equal(c.securityContext?.allowPrivilegeEscalation, false, `${cw}: allowPrivilegeEscalation`);
        assert.deepEqual(c.securityContext?.capabilities?.drop, ['ALL'], `${cw}: drops capabilities`);
        assert.equal(c.securityContext?.readOnlyRootFilesystem, true, `${cw}: read-only root`);
        if (c.args?.[0] === 'api') {
          assert.ok(config.tokensFile !== undefined && c.volumeMounts?.some((m) => config.tokensFile!.startsWith(`${m.mountPath}/`)), `${cw}: mounts its tokens file`);
          const http = c.ports?.find((p) => p.name === 'http');
          assert.equal(http?.containerPort, config.port, `${cw}: port http is HEAPCAP_PORT`);
          for (const probe of [c.readinessProbe, c.livenessProbe]) {
            assert.ok(probe?.httpGet !== undefined && PROBE_PATHS.has(probe.httpGet.path), `${cw}: probe ${probe?.httpGet?.path}`);
            assert.equal(probe.httpGet.port, 'http');
          }
        }
      }
    }
    assert.ok(heapcapContainers >= 2, `${where}: the api and a worker`);
    if (layout === 'node-workers') {
      const ds = workloads.find((w) => w.kind === 'DaemonSet');
      const placement = ds?.spec?.template?.spec.containers[0]?.env?.find((e) => e.name === 'HEAPCAP_WORKER_PLACEMENTS');
      assert.deepEqual(placement?.valueFrom, { fieldRef: { fieldPath: 'spec.nodeName' } }, 'the DaemonSet worker\'s placement is its node name');
      assert.ok(docs.some((d) => d.kind === 'NetworkPolicy'), 'the inspector NetworkPolicy');
    }
    if (layout === 'sidecar') {
      // The pipe transport needs the FIFO's directory at the same path in both containers (one volume).
      const pod = workloads.find((w) => (w.spec?.template?.spec.containers.length ?? 0) > 1)?.spec?.template?.spec.containers ?? [];
      const worker = pod.find((c) => c.args?.[0] === 'worker');
      const pipeDir = worker?.env?.find((e) => e.name === 'HEAPCAP_PIPE_DIR')?.value;
      const mounted = (c: Container | undefined): { name?: string; mountPath: string } | undefined => c?.volumeMounts?.find((m) => m.mountPath === pipeDir);
      const app = pod.find((c) => c !== worker);
      assert.ok(pipeDir !== undefined && mounted(worker) !== undefined, `${where}: the sidecar worker's HEAPCAP_PIPE_DIR is a mount`);
      assert.equal(mounted(app)?.name, mounted(worker)?.name, `${where}: the app mounts the worker's HEAPCAP_PIPE_DIR volume at ${pipeDir}`);
    }
    return docs;
  }

  const LAYOUTS = [
    ['deploy/k8s', 'node-workers'],
    ['deploy/k8s/overlays/sidecar', 'sidecar'],
  ] as const;
  for (const [overlay, layout] of LAYOUTS) {
    void it(`${overlay}: kustomize output validates, settings parse, commands, ports and probes match`, () => {
      checkManifests(kustomizeBuild(at(overlay)), overlay, layout);
    });
  }

  /** The objects without Helm's bookkeeping labels (app.kubernetes.io/instance, managed-by, helm.sh/chart), sorted by kind and name. */
  const comparable = (docs: Doc[]): Doc[] =>
    docs
      .map((d) => {
        const copy = structuredClone(d) as Doc & { metadata: { labels?: Record<string, string> } };
        const labels = Object.fromEntries(Object.entries(copy.metadata.labels ?? {}).filter(([k]) => !['app.kubernetes.io/instance', 'app.kubernetes.io/managed-by', 'helm.sh/chart'].includes(k)));
        if (Object.keys(labels).length > 0) copy.metadata.labels = labels;
        else delete copy.metadata.labels;
        return copy;
      })
      .sort((a, b) => `${a.kind}/${a.metadata.name}`.localeCompare(`${b.kind}/${b.metadata.name}`));

  const CHART = at('deploy/helm/heapcap');
  for (const [values, overlay, layout] of [
    [[], 'deploy/k8s', 'node-workers'],
    [['--set', 'workers.layout=node-workers'], 'deploy/k8s/overlays/node-workers', 'node-workers'],
    [['--set', 'workers.layout=sidecar'], 'deploy/k8s/overlays/sidecar', 'sidecar'],
  ] as const) {
    const name = values.length === 0 ? 'default values' : values.join(' ');
    void it(`deploy/helm/heapcap (${name}): helm template validates, settings parse, and the objects are kustomize's ${overlay}`, () => {
      const docs = checkManifests(helmTemplate('heapcap', CHART, [...values]), `helm ${name}`, layout);
      assert.deepEqual(comparable(docs), comparable(parseAllDocuments(kustomizeBuild(at(overlay))).map((d) => d.toJS() as Doc)));
    });
  }

  void it('every pod template (kustomize base and overlays, helm with each layout) has enableServiceLinks: false', () => {
    // Otherwise each pod gets HEAPCAP_API_SERVICE_HOST, HEAPCAP_API_PORT=tcp://… for the Service heapcap-api.
    const renders: [string, string][] = [
      ...['deploy/k8s/base', 'deploy/k8s', 'deploy/k8s/overlays/node-workers', 'deploy/k8s/overlays/sidecar'].map((o): [string, string] => [`kustomize ${o}`, kustomizeBuild(at(o))]),
      ...['node-workers', 'sidecar'].map((layout): [string, string] => [`helm workers.layout=${layout}`, helmTemplate('heapcap', CHART, ['--set', `workers.layout=${layout}`])]),
      ['helm default values', helmTemplate('heapcap', CHART)],
    ];
    for (const [where, built] of renders) {
      const pods = parseAllDocuments(built)
        .map((d) => d.toJS() as Doc & { spec?: { template?: { spec: { enableServiceLinks?: boolean } } } })
        .filter((d) => d.spec?.template !== undefined);
      assert.ok(pods.length >= 1, `${where}: no workloads`);
      for (const w of pods) assert.equal(w.spec?.template?.spec.enableServiceLinks, false, `${where} ${w.kind}/${w.metadata.name}`);
    }
  });

  void it('deploy/helm/heapcap: image.repository and tag name the image; an unknown workers.layout is refused with why; s3Credentials=null (workload identity) drops the Secret', () => {
    const docs = checkManifests(helmTemplate('heapcap', CHART, ['--set', 'image.repository=registry.example.com/heapcap', '--set', 'image.tag=9.9.9', '--set', 's3Credentials=null']), 'helm custom', 'node-workers');
    const images = docs.flatMap((d) => d.spec?.template?.spec.containers ?? []).map((c) => (c as Container & { image: string }).image);
    assert.deepEqual([...new Set(images)], ['registry.example.com/heapcap:9.9.9']);
    assert.ok(!docs.some((d) => d.kind === 'Secret' && d.metadata.name === 'heapcap-s3'), 'no S3 Secret');
    const bad = spawnSync(helmBinary(), ['template', 'heapcap', CHART, '--set', 'workers.layout=daemonset'], { encoding: 'utf8' });
    assert.notEqual(bad.status, 0);
    assert.match(bad.stderr, /workers\.layout is "daemonset": it must be node-workers or sidecar/);
  });

  void it('prometheus rules pass promtool; rules and dashboard use only metric names /metrics serves', async () => {
    const rules = at('deploy/prometheus/heapcap-alerts.yaml');
    const check = spawnSync('promtool', ['check', 'rules', rules], { encoding: 'utf8' });
    assert.equal(check.status, 0, `promtool: ${check.stdout}${check.stderr}`);
    const res = await h.app.inject({ method: 'GET', url: '/metrics' });
    assert.equal(res.statusCode, 200);
    const served = new Set<string>();
    for (const [, name, type] of res.body.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
      served.add(name!);
      if (type === 'histogram') for (const s of ['_bucket', '_sum', '_count']) served.add(`${name!}${s}`);
    }
    const dashboard = readFileSync(at('deploy/grafana/heapcap-dashboard.json'), 'utf8');
    JSON.parse(dashboard);
    for (const [file, text] of [['rules', readFileSync(rules, 'utf8')], ['dashboard', dashboard]] as const) {
      const used = new Set([...text.matchAll(/\bheapcap_[a-z_]+\b/g)].map((m) => m[0]));
      assert.ok(used.size >= 5, `${file} uses heapcap metrics`);
      for (const name of used) assert.ok(served.has(name), `${file} uses ${name}, which /metrics does not serve (it serves ${[...served].filter((n) => n.startsWith('heapcap_')).join(', ')})`);
    }
    execFileSync('promtool', ['--version'], { stdio: 'ignore' });
  });

  void it('alert annotations and the dashboard link to console pages, each a route consoleLinks builds', () => {
    const rules = parseYaml(readFileSync(at('deploy/prometheus/heapcap-alerts.yaml'), 'utf8')) as { groups: { rules: { alert: string; annotations: Record<string, string> }[] }[] };
    const site = 'https://heapcap.example';
    const consoles = Object.fromEntries(rules.groups.flatMap((g) => g.rules).flatMap((r) => (r.annotations['console'] === undefined ? [] : [[r.alert, r.annotations['console']]])));
    assert.deepEqual(consoles, {
      HeapcapCapturesFailing: consoleLinks.captures(site, { status: 'failed' }),
      HeapcapQueueStuck: consoleLinks.captures(site, { status: 'queued' }),
      HeapcapWatchFiringFailed: consoleLinks.watchRules(site),
    });
    // Grafana fills ${console_url} (a textbox variable: HEAPCAP_PUBLIC_URL) and the series' labels in; the rest is consoleLinks' shape.
    type Panel = { title: string; targets?: unknown[]; fieldConfig?: { defaults: { links?: { url: string }[] } } };
    const d = JSON.parse(readFileSync(at('deploy/grafana/heapcap-dashboard.json'), 'utf8')) as { links: { url: string }[]; annotations: { list: { textFormat: string }[] }; panels: Panel[]; templating: { list: { name: string }[] } };
    const g = '${console_url}';
    assert.ok(d.templating.list.some((v) => v.name === 'console_url'));
    assert.deepEqual(d.links.map((l) => l.url), [consoleLinks.captures(g)]);
    assert.ok(d.annotations.list[0]!.textFormat.endsWith(consoleLinks.captures(g, { status: 'STATUS' }).replace('STATUS', '{{status}}')), d.annotations.list[0]!.textFormat);
    const targetPanels = d.panels.filter((p) => JSON.stringify(p.targets ?? []).includes('heapcap_target_'));
    assert.equal(targetPanels.length, 4);
    for (const p of targetPanels) assert.deepEqual(p.fieldConfig?.defaults.links?.map((l) => l.url), [consoleLinks.target(g, 'TARGET').replace('TARGET', '${__field.labels.target}')], p.title);
  });
});
