/**
 * Deployment files are checked for shape (no cluster, no Docker here): every
 * manifest parses, probes point at real endpoints, grace periods outlast the
 * workers' bounded close, the HPA scales the workers on queue depth counting
 * each queue once, secrets are required (no default), the image comes from a
 * documented variable and runs the compiled executables as a non-root user,
 * and every environment variable is accepted by the zod schemas the processes use.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { WorkerEnvironmentSchema } from '@durable-a2a/workers';
import { ServerEnvironmentSchema } from '@durable-a2a/producer/server';
import { QUEUE_JOB_STATUSES, parseSentinelUrl } from '@durable-a2a/shared';

type Manifest = { apiVersion: string; kind: string; metadata: { name: string }; spec?: any; data?: Record<string, string>; stringData?: Record<string, string> };
const directory = new URL('../../deploy/k8s/', import.meta.url);
const manifests: Manifest[] = readdirSync(directory)
  .filter((file) => file.endsWith('.yaml') && file !== 'kustomization.yaml')
  .flatMap((file) => parseAllDocuments(readFileSync(new URL(file, directory), 'utf8')).map((document) => document.toJS() as Manifest));
const find = (kind: string, name: string) => manifests.find((manifest) => manifest.kind === kind && manifest.metadata.name === name)!;
const readText = (path: string) => readFileSync(new URL(path, import.meta.url), 'utf8');
/** KEY=value lines of an env file (comments and blank lines skipped). */
const envFile = (text: string) =>
  Object.fromEntries(text.split('\n').filter((line) => line.trim() && !line.startsWith('#')).map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]));
const secretsExample = envFile(readText('../../deploy/k8s/secrets.env.example'));
const TEST_TOKEN = 'a-long-random-token-for-the-shape-test';
const config = { ...find('ConfigMap', 'durable-a2a-config').data, ...secretsExample, DA2A_API_TOKENS: TEST_TOKEN };
const kustomization = parseAllDocuments(readText('../../deploy/k8s/kustomization.yaml'))[0]!.toJS() as {
  resources: string[];
  images: { name: string; newName: string; newTag: string }[];
  secretGenerator: { name: string; envs: string[] }[];
};
/** Docker Compose interpolation: `${VAR:-default}` takes the default, `${VAR:?message}` (required) takes `required[VAR]`. */
const interpolate = (value: string, required: Record<string, string>) =>
  value.replace(/\$\{(\w+)(:-|:\?)([^}]*)\}/g, (_all, name: string, operator: string, rest: string) => (operator === ':-' ? rest : (required[name] ?? '')));

describe('deploy/k8s', () => {
  it('every document has apiVersion, kind and a name; kustomization lists every file', () => {
    for (const manifest of manifests) expect(manifest).toMatchObject({ apiVersion: expect.any(String), kind: expect.any(String), metadata: { name: expect.any(String) } });
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

  it('HPA scales the workers on jobs ready to run (waiting and prioritized), each queue counted once whatever the API replicas; PDBs select the pods', () => {
    const hpa = find('HorizontalPodAutoscaler', 'durable-a2a-workers');
    expect(hpa.spec.scaleTargetRef).toMatchObject({ kind: 'Deployment', name: 'durable-a2a-workers' });
    const adapter = parseAllDocuments(find('ConfigMap', 'durable-a2a-prometheus-adapter-rules').data!['config.yaml']!)[0]!.toJS() as {
      externalRules: { seriesQuery: string; name: { as: string }; metricsQuery: string }[];
    };
    const rule = adapter.externalRules.find((candidate) => candidate.name.as === hpa.spec.metrics[0].external.metric.name)!;
    // Ready work is every job a worker could take now: BullMQ keeps it in `waiting` and in `prioritized` (every
    // message send is a prioritized job, so a backlog of sends is only there). Delayed, active, failed and
    // waiting-children jobs would not run sooner with more workers.
    const readyStatuses = ['waiting', 'prioritized'];
    for (const status of readyStatuses) expect(QUEUE_JOB_STATUSES).toContain(status);
    const selector = `durable_a2a_queue_jobs{status=~"${readyStatuses.join('|')}"}`;
    expect(rule.seriesQuery).toBe(selector);
    // Every API replica reports every queue: one series per queue and status (max by queue, status), then the sum.
    // `max by (queue)` alone would keep the larger of waiting and prioritized instead of adding them.
    expect(rule.metricsQuery.replace(/\s+/g, ' ')).toBe(`sum(max by (queue, status) (${selector}))`);
    expect(find('Deployment', 'durable-a2a-api').spec.replicas).toBeGreaterThan(1);
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

  it('Redis keeps the journal: AOF on, a memory cap below the container limit, noeviction', () => {
    const container = find('StatefulSet', 'redis').spec.template.spec.containers[0];
    const args: string[] = container.args;
    expect(args.join(' ')).toContain('--appendonly yes');
    expect(args.join(' ')).toContain('--maxmemory-policy noeviction');
    const maxmemory = args[args.indexOf('--maxmemory') + 1]!;
    expect(maxmemory).toBe('1gb');
    expect(container.resources.limits.memory).toBe('1536Mi'); // 1.5 GiB > 1 GiB: room for AOF rewrites and buffers
  });

  it('secrets are required: generated from secrets.env (not committed, no default); nothing says change-me', () => {
    expect(kustomization.secretGenerator).toEqual([{ name: 'durable-a2a-secrets', envs: ['secrets.env'] }]);
    expect(secretsExample).toEqual({ DA2A_API_TOKENS: '' });
    expect(() => ServerEnvironmentSchema.parse({ ...config, DA2A_API_TOKENS: secretsExample.DA2A_API_TOKENS })).toThrow(/no token/);
    expect(readText('../../.gitignore').split('\n')).toContain('deploy/k8s/secrets.env');
    for (const file of [...readdirSync(directory, { recursive: true, withFileTypes: true }).filter((entry) => entry.isFile()).map((entry) => `${entry.parentPath}/${entry.name}`.replace(/^.*\/deploy\/k8s\//, '../../deploy/k8s/')), '../../docker-compose.yml', '../../Dockerfile']) {
      expect(readText(file)).not.toMatch(/change-me/i);
    }
    const api = find('Deployment', 'durable-a2a-api').spec.template.spec.containers[0];
    expect(api.envFrom).toContainEqual({ secretRef: { name: 'durable-a2a-secrets' } });
  });

  it('the image name comes from kustomize `images` (DA2A_IMAGE) and both Deployments use it', () => {
    expect(kustomization.images.map((image) => image.name)).toEqual(['durable-a2a']);
    expect(readText('../../deploy/k8s/kustomization.yaml')).toContain('kustomize edit set image durable-a2a="$DA2A_IMAGE"');
    for (const name of ['durable-a2a-api', 'durable-a2a-workers']) expect(find('Deployment', name).spec.template.spec.containers[0].image).toBe('durable-a2a');
  });
});

describe('Dockerfile', () => {
  const dockerfile = readText('../../Dockerfile');
  const stages = dockerfile.split(/^FROM /m).slice(1);
  const runtime = stages.find((stage) => / AS runtime\n/.test(stage))!;
  const deployed = [...dockerfile.matchAll(/pnpm --filter (\S+) deploy --prod (\/app\/\w+)/g)].map((match) => match[2]!);

  it('Node 24 base; compiled dist from pnpm deploy --prod; the runtime stage runs as the non-root user node without tsx', () => {
    // Every stage starts from a Node 24 image or from an earlier stage.
    expect(stages.map((stage) => stage.split(' ')[0])).toEqual(['node:24-bookworm-slim', 'build', 'node:24-bookworm-slim']);
    expect(dockerfile).toMatch(/RUN pnpm build/);
    expect(deployed.sort()).toEqual(['/app/api', '/app/cli', '/app/workers']);
    expect(runtime).toMatch(/^USER node$/m);
    expect(runtime).not.toMatch(/tsx/);
    expect(runtime).toContain('COPY --from=build /app /app');
  });

  it('copies every workspace package manifest before pnpm install --frozen-lockfile (the lockfile names them all)', () => {
    const beforeInstall = dockerfile.slice(0, dockerfile.indexOf('RUN pnpm install --frozen-lockfile'));
    const workspacePackages = readdirSync(new URL('../../packages/', import.meta.url), { withFileTypes: true }).filter((entry) => entry.isDirectory());
    expect(workspacePackages.length).toBeGreaterThan(0);
    for (const { name } of workspacePackages) expect(beforeInstall).toContain(`COPY packages/${name}/package.json packages/${name}/`);
  });

  it('every command in compose and k8s runs an executable the image deploys', () => {
    const compose = parseAllDocuments(readText('../../docker-compose.yml'))[0]!.toJS() as { services: Record<string, { command?: string[] }> };
    const commands = [
      ...['durable-a2a-api', 'durable-a2a-workers'].map((name) => find('Deployment', name).spec.template.spec.containers[0].command as string[]),
      compose.services.api!.command!,
      compose.services.workers!.command!,
    ];
    for (const command of commands) {
      expect(command[0]).toBe('node');
      expect(deployed.some((directory) => command[1]!.startsWith(`${directory}/bin/`))).toBe(true);
    }
  });
});

describe('docker-compose.yml', () => {
  const compose = parseAllDocuments(readFileSync(new URL('../../docker-compose.yml', import.meta.url), 'utf8'))[0]!.toJS() as { services: Record<string, any> };
  const environment = (service: string) =>
    Object.fromEntries(Object.entries(compose.services[service].environment as Record<string, string>).map(([key, value]) => [key, interpolate(value, { DA2A_API_TOKENS: TEST_TOKEN })]));
  it('has Redis with AOF, maxmemory and noeviction, the API, the workers, the demo agents', () => {
    expect(Object.keys(compose.services).sort()).toEqual(['api', 'demo-agents', 'redis', 'workers']);
    const command = compose.services.redis.command.join(' ');
    expect(command).toContain('--appendonly yes');
    expect(command).toContain('--maxmemory-policy noeviction');
    expect(interpolate(command, {})).toContain('--maxmemory 512mb');
  });
  it('the image comes from DA2A_IMAGE; DA2A_API_TOKENS is required (no default)', () => {
    for (const service of ['api', 'workers']) expect(compose.services[service].image).toBe('${DA2A_IMAGE:-durable-a2a:local}');
    expect(compose.services.api.environment.DA2A_API_TOKENS).toMatch(/^\$\{DA2A_API_TOKENS:\?[^}]+\}$/);
  });
  it('service environments are accepted by the same schemas the processes use', () => {
    expect(() => WorkerEnvironmentSchema.parse(environment('workers'))).not.toThrow();
    expect(() => ServerEnvironmentSchema.parse(environment('api'))).not.toThrow();
  });
});

describe('deploy/k8s/monitoring (overlay): the one scrape set-up', () => {
  const overlay = new URL('monitoring/', directory);
  const podMonitor = parseAllDocuments(readFileSync(new URL('podmonitor.yaml', overlay), 'utf8'))[0]!.toJS() as Manifest;
  const overlayKustomization = parseAllDocuments(readFileSync(new URL('kustomization.yaml', overlay), 'utf8'))[0]!.toJS() as { resources: string[] };

  it('one PodMonitor scrapes /metrics of the API and the workers on ports their containers name; the workers bind beyond loopback', () => {
    expect(overlayKustomization.resources).toEqual(['../', 'podmonitor.yaml']);
    expect(podMonitor).toMatchObject({ apiVersion: 'monitoring.coreos.com/v1', kind: 'PodMonitor' });
    const [selector] = podMonitor.spec.selector.matchExpressions as { key: string; operator: string; values: string[] }[];
    for (const name of ['durable-a2a-api', 'durable-a2a-workers']) {
      const pod = find('Deployment', name).spec.template;
      expect(selector!.operator).toBe('In');
      expect(selector!.values).toContain(pod.metadata.labels[selector!.key]);
      const ports = (pod.spec.containers[0].ports as { name: string }[]).map((port) => port.name);
      const endpoints = (podMonitor.spec.podMetricsEndpoints as { port: string; path: string }[]).filter((endpoint) => ports.includes(endpoint.port));
      expect(endpoints.map((endpoint) => endpoint.path), name).toEqual(['/metrics']);
    }
    // The workers' ops endpoint binds loopback by default: the manifests open it to the pod network.
    expect(WorkerEnvironmentSchema.parse(config).DA2A_METRICS_HOST).toBe('0.0.0.0');
    expect(WorkerEnvironmentSchema.parse({}).DA2A_METRICS_HOST).toBe('127.0.0.1');
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
