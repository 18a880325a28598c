/**
 * Deployment files are checked for shape (no cluster here): every manifest
 * parses, probes point at real endpoints, grace periods outlast the workers'
 * bounded close, the HPA scales the workers on queue depth, and every
 * environment variable is accepted by the same zod schemas the processes use.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { WorkerEnvironmentSchema } from '@durable-a2a/workers';
import { ServerEnvironmentSchema } from '@durable-a2a/producer/server';
import { parseSentinelUrl } from '@durable-a2a/shared';

type Manifest = { apiVersion: string; kind: string; metadata: { name: string }; spec?: any; data?: Record<string, string>; stringData?: Record<string, string> };
const directory = new URL('../deploy/k8s/', import.meta.url);
const manifests: Manifest[] = readdirSync(directory)
  .filter((file) => file.endsWith('.yaml') && file !== 'kustomization.yaml')
  .flatMap((file) => parseAllDocuments(readFileSync(new URL(file, directory), 'utf8')).map((document) => document.toJS() as Manifest));
const find = (kind: string, name: string) => manifests.find((manifest) => manifest.kind === kind && manifest.metadata.name === name)!;
const config = { ...find('ConfigMap', 'durable-a2a-config').data, ...find('Secret', 'durable-a2a-secrets').stringData };

describe('deploy/k8s', () => {
  it('every document has apiVersion, kind and a name; kustomization lists every file', () => {
    for (const manifest of manifests) expect(manifest).toMatchObject({ apiVersion: expect.any(String), kind: expect.any(String), metadata: { name: expect.any(String) } });
    const kustomization = parseAllDocuments(readFileSync(new URL('kustomization.yaml', directory), 'utf8'))[0]!.toJS() as { resources: string[] };
    const files = readdirSync(directory).filter((file) => file.endsWith('.yaml') && file !== 'kustomization.yaml');
    expect([...kustomization.resources].sort()).toEqual(files.sort());
  });

  it('workers: probes on the ops port, grace longer than the bounded close, scrape annotations, config accepted by the worker schema', () => {
    const workers = find('Deployment', 'durable-a2a-workers');
    const pod = workers.spec.template;
    const container = pod.spec.containers[0];
    expect(container.livenessProbe.httpGet.path).toBe('/healthz');
    expect(container.readinessProbe.httpGet.path).toBe('/readyz');
    const environment = WorkerEnvironmentSchema.parse(config);
    expect(container.ports[0].containerPort).toBe(environment.DA2A_METRICS_PORT);
    expect(pod.spec.terminationGracePeriodSeconds * 1000).toBeGreaterThan(environment.DA2A_CLOSE_TIMEOUT_MS);
    expect(pod.metadata.annotations['prometheus.io/scrape']).toBe('true');
    expect(Number(pod.metadata.annotations['prometheus.io/port'])).toBe(environment.DA2A_METRICS_PORT);
    expect(environment.DA2A_STRICT_PERSISTENCE).toBe(true);
  });

  it('HPA scales the workers on the documented queue-depth metric; PDBs select the pods', () => {
    const hpa = find('HorizontalPodAutoscaler', 'durable-a2a-workers');
    expect(hpa.spec.scaleTargetRef).toMatchObject({ kind: 'Deployment', name: 'durable-a2a-workers' });
    expect(hpa.spec.metrics[0].external.metric.name).toBe('durable_a2a_queue_jobs');
    for (const name of ['durable-a2a-workers', 'durable-a2a-api']) {
      const pdb = find('PodDisruptionBudget', name);
      expect(pdb.spec.selector.matchLabels).toEqual(find('Deployment', name).spec.template.metadata.labels);
    }
  });

  it('API: Service targets the container port; config accepted by the API schema', () => {
    const api = find('Deployment', 'durable-a2a-api');
    const container = api.spec.template.spec.containers[0];
    const environment = ServerEnvironmentSchema.parse({ ...config, ...Object.fromEntries(container.env.map((entry: { name: string; value: string }) => [entry.name, entry.value])) });
    expect(container.ports[0].containerPort).toBe(environment.PORT);
    expect(find('Service', 'durable-a2a-api').spec.ports[0].targetPort).toBe(container.ports[0].name);
  });

  it('Redis keeps the journal: AOF on and noeviction', () => {
    const args: string[] = find('StatefulSet', 'redis').spec.template.spec.containers[0].args;
    expect(args.join(' ')).toContain('--appendonly yes');
    expect(args.join(' ')).toContain('--maxmemory-policy noeviction');
  });
});

describe('docker-compose.yml', () => {
  const compose = parseAllDocuments(readFileSync(new URL('../docker-compose.yml', import.meta.url), 'utf8'))[0]!.toJS() as { services: Record<string, any> };
  it('has Redis with AOF and noeviction, the API, the workers, the demo agents', () => {
    expect(Object.keys(compose.services).sort()).toEqual(['api', 'demo-agents', 'redis', 'workers']);
    expect(compose.services.redis.command.join(' ')).toContain('--appendonly yes');
    expect(compose.services.redis.command.join(' ')).toContain('--maxmemory-policy noeviction');
  });
  it('service environments are accepted by the same schemas the processes use', () => {
    expect(() => WorkerEnvironmentSchema.parse(compose.services.workers.environment)).not.toThrow();
    expect(() => ServerEnvironmentSchema.parse(compose.services.api.environment)).not.toThrow();
  });
});

describe('deploy/k8s/sentinel (overlay)', () => {
  it('points REDIS_URL at the Sentinels and turns the durability setting on; both schemas accept it', () => {
    const overlay = parseAllDocuments(readFileSync(new URL('sentinel/config.yaml', directory), 'utf8'))[0]!.toJS() as Manifest;
    const merged = { ...config, ...overlay.data };
    const workers = WorkerEnvironmentSchema.parse(merged);
    const server = ServerEnvironmentSchema.parse(merged);
    expect(parseSentinelUrl(workers.REDIS_URL)).toMatchObject({ name: 'mymaster', sentinels: [{ port: 26379 }, { port: 26379 }, { port: 26379 }] });
    for (const environment of [workers, server]) expect(environment).toMatchObject({ DA2A_JOURNAL_REPLICAS: 1, DA2A_JOURNAL_WAIT_TIMEOUT_MS: 1000 });
    // Off by default for a single Redis.
    expect(WorkerEnvironmentSchema.parse(config).DA2A_JOURNAL_REPLICAS).toBe(0);
  });
});
