import { describe, expect, it } from '@jest/globals';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { parse, parseAllDocuments } from 'yaml';
import { buildConfig, type AppConfig } from '../../src/config';

const ROOT = process.cwd();
const COMPOSE_DIR = join(ROOT, 'deploy/compose');
const K8S_DIR = join(ROOT, 'deploy/kubernetes');

type Obj = Record<string, unknown>;
const yamlFile = (path: string): Obj => parse(readFileSync(path, 'utf8')) as Obj;
const routerConfig = (text: string): AppConfig => buildConfig(parse(text) as Record<string, unknown>);
/** A script of the image, as its compiled path dist/X.js, exists as src/X.ts. */
const scriptExists = (distPath: string): boolean => existsSync(join(ROOT, distPath.replace(/^dist\//, 'src/').replace(/\.js$/, '.ts')));

describe('deploy/compose/compose.yaml', () => {
  const compose = yamlFile(join(COMPOSE_DIR, 'compose.yaml'));
  const services = compose.services as Record<string, Obj>;

  it('has the router, two context and two generation workers, etcd, Prometheus and Grafana', () => {
    expect(Object.keys(services).sort()).toEqual(['ctx-0', 'ctx-1', 'etcd', 'gen-0', 'gen-1', 'grafana', 'prometheus', 'router']);
    const build = services.router.build as { context: string; dockerfile: string };
    expect(existsSync(join(COMPOSE_DIR, build.context, build.dockerfile))).toBe(true);
  });

  it('mounts only files that exist', () => {
    for (const [name, service] of Object.entries(services)) {
      for (const volume of (service.volumes as string[] | undefined) ?? []) {
        const source = volume.split(':')[0];
        if (!source.startsWith('.')) continue; // a named volume
        expect({ name, source, exists: existsSync(join(COMPOSE_DIR, source)) }).toEqual({ name, source, exists: true });
      }
    }
  });

  it('runs workers that register the URL they listen on, with the etcd the router watches', () => {
    const config = routerConfig(readFileSync(join(COMPOSE_DIR, 'router.yaml'), 'utf8'));
    expect(config.metadata_server_config?.hostname).toBe('etcd');
    const etcdPort = config.metadata_server_config!.port;
    for (const name of ['ctx-0', 'ctx-1', 'gen-0', 'gen-1']) {
      const script = (services[name].command as string[]).join(' ');
      const role = name.startsWith('ctx') ? 'context' : 'generation';
      const listen = /dist\/simulator\/cli\.js --role (\w+) --host 0\.0\.0\.0 --port (\d+)/.exec(script);
      const register = /dist\/discovery\/register-cli\.js --etcd ([\w.-]+):(\d+) --url http:\/\/([\w-]+):(\d+) --role (\w+)/.exec(script);
      expect(listen?.[1]).toBe(role);
      expect(register?.slice(1)).toEqual(['etcd', String(etcdPort), name, listen?.[2], role]);
      for (const js of script.match(/dist\/[\w/-]+\.js/g) ?? []) expect({ js, exists: scriptExists(js) }).toEqual({ js, exists: true });
    }
    expect((services.etcd.command as string[]).join(' ')).toContain(`0.0.0.0:${etcdPort}`);
  });

  it('publishes the router port of its config, which Prometheus scrapes', () => {
    const config = routerConfig(readFileSync(join(COMPOSE_DIR, 'router.yaml'), 'utf8'));
    expect(services.router.ports).toEqual([`${config.port}:${config.port}`]);
    const prometheus = yamlFile(join(COMPOSE_DIR, 'prometheus.yml'));
    const job = (prometheus.scrape_configs as Obj[])[0];
    expect(job.metrics_path).toBe('/metrics');
    expect((job.static_configs as { targets: string[] }[])[0].targets).toEqual([`router:${config.port}`]);
    expect(config.metrics.enabled).toBe(true);
  });

  it('provisions Grafana with the Prometheus service and the dashboard file', () => {
    const datasource = (yamlFile(join(COMPOSE_DIR, 'grafana/provisioning/datasources/prometheus.yaml')).datasources as Obj[])[0];
    const promPort = (services.prometheus.ports as string[])[0].split(':')[1];
    expect(datasource.url).toBe(`http://prometheus:${promPort}`);
    const provider = (yamlFile(join(COMPOSE_DIR, 'grafana/provisioning/dashboards/disagg-router.yaml')).providers as Obj[])[0];
    const dashboardMount = (services.grafana.volumes as string[]).find((v) => v.includes('disagg-router.json'))!;
    const [source, target] = dashboardMount.split(':');
    expect(dirname(target)).toBe((provider.options as Obj).path);
    expect(JSON.parse(readFileSync(join(COMPOSE_DIR, source), 'utf8')).uid).toBe('disagg-router');
  });
});

describe('deploy/kubernetes', () => {
  const kustomization = yamlFile(join(K8S_DIR, 'kustomization.yaml'));
  const docs = (kustomization.resources as string[]).flatMap((file) =>
    parseAllDocuments(readFileSync(join(K8S_DIR, file), 'utf8')).map((d) => d.toJS() as Obj),
  );
  const byKind = (kind: string): Obj => docs.find((d) => d.kind === kind)!;
  const deployment = byKind('Deployment');
  const pod = (deployment.spec as Obj).template as Obj;
  const podSpec = pod.spec as Obj;
  const container = (podSpec.containers as Obj[])[0];
  const configMap = byKind('ConfigMap');
  const config = routerConfig((configMap.data as Record<string, string>)['router.yaml']);

  it('lists files that exist, each a Kubernetes object', () => {
    expect(docs.map((d) => d.kind).sort()).toEqual(['ConfigMap', 'Deployment', 'Secret', 'Service']);
  });

  it('mounts the ConfigMap where the container reads its config, and takes the admin token from the Secret', () => {
    const volume = (podSpec.volumes as Obj[]).find((v) => (v.configMap as Obj | undefined)?.name === (configMap.metadata as Obj).name)!;
    const mount = (container.volumeMounts as Obj[]).find((m) => m.name === volume.name)!;
    const args = container.args as string[];
    expect(args[args.indexOf('--config') + 1]).toBe(`${mount.mountPath}/router.yaml`);
    const token = (container.env as Obj[]).find((e) => e.name === 'DISAGG_ADMIN_TOKEN')!;
    const ref = (token.valueFrom as Obj).secretKeyRef as Obj;
    const secret = byKind('Secret');
    expect(ref.name).toBe((secret.metadata as Obj).name);
    expect(String((secret.stringData as Obj)[ref.key as string]).length).toBeGreaterThanOrEqual(16);
  });

  it('probes readiness on /health and liveness on /cluster_info, on the config port', () => {
    const ports = container.ports as { name: string; containerPort: number }[];
    expect(ports).toEqual([{ name: 'http', containerPort: config.port }]);
    const readiness = (container.readinessProbe as Obj).httpGet as Obj;
    const liveness = (container.livenessProbe as Obj).httpGet as Obj;
    expect(readiness).toEqual({ path: '/health', port: 'http' });
    expect(liveness).toEqual({ path: '/cluster_info', port: 'http' });
    const service = byKind('Service');
    expect(((service.spec as Obj).ports as Obj[])[0]).toMatchObject({ port: config.port, targetPort: 'http' });
    expect((service.spec as Obj).selector).toEqual((pod.metadata as Obj).labels);
  });

  it('gives the pod the preStop pause plus shutdown.drain_timeout_s (and a margin) to stop', () => {
    const preStop = ((container.lifecycle as Obj).preStop as Obj).exec as { command: string[] };
    expect(preStop.command[0]).toBe('sleep');
    const pause = Number(preStop.command[1]);
    const grace = podSpec.terminationGracePeriodSeconds as number;
    expect(grace).toBeGreaterThan(pause + config.shutdown.drain_timeout_s);
    expect(grace).toBeLessThanOrEqual(pause + config.shutdown.drain_timeout_s + 15);
  });

  it('runs as a non-root user', () => {
    expect((podSpec.securityContext as Obj).runAsNonRoot).toBe(true);
    expect((podSpec.securityContext as Obj).runAsUser).not.toBe(0);
  });
});
