/**
 * What a service gets from npm: `pnpm build`, `pnpm pack:all` (scripts/pack-all.mjs), a
 * scratch service in a temp directory outside the workspace that
 * `npm install`s the tarballs, type-checks a small TypeScript file with a
 * standard NodeNext tsconfig (no allowImportingTsExtensions, library .d.ts
 * checked too), then runs the compiled file with plain `node`: it delegates
 * to an agent from @durable-a2a/testing and awaits the result with waitFor.
 * The executables run from the installed tarballs with plain node as well.
 * @durable-a2a/a2a installed alone brings no Redis, queue or logger, and its
 * README example runs with plain node against a test-kit agent.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { completesWith, startDemoAgent, type DemoAgentHandle } from './harness/index.ts';

const run = promisify(execFile);
const root = fileURLToPath(new URL('..', import.meta.url));
const PACKAGES = ['a2a', 'shared', 'producer', 'workers', 'testing', 'cli'];
const VERSIONS = { typescript: '5.9.3', '@types/node': '24.19.4' };
/** Where the tarballs are packed (a temp directory outside the workspace), and the scratch projects. */
let scratch: string | undefined;
let clientScratch: string | undefined;
let tarballs: string;
let files: string[];
const tarballOf = (name: string): string => join(tarballs, files.find((file) => file.startsWith(`durable-a2a-${name}-`))!);

beforeAll(async () => {
  await exec('pnpm', ['build'], root);
  scratch = await mkdtemp(join(tmpdir(), 'durable-a2a-packed-'));
  tarballs = join(scratch, 'tarballs');
  await mkdir(tarballs);
  // The same script the README documents for installing before publication.
  await exec(process.execPath, [join(root, 'scripts/pack-all.mjs'), tarballs], root);
  files = await readdir(tarballs);
}, 600_000);

afterAll(async () => {
  for (const directory of [scratch, clientScratch]) if (directory) await rm(directory, { recursive: true, force: true });
});

const SERVICE = `import { createProducer, WaitTimeoutError } from '@durable-a2a/producer';
import { startFleet } from '@durable-a2a/workers';
import { createLogger } from '@durable-a2a/shared';
import { completesWith, startDemoAgent, startRedisServer, type DemoAgentHandle } from '@durable-a2a/testing';

const redis = await startRedisServer();
const agent: DemoAgentHandle = await startDemoAgent({ behaviour: completesWith('hello from a packed agent') });
const addressPolicy = { allowLoopback: true };
const fleet = await startFleet({ redis: redis.url, addressPolicy, logger: createLogger({ level: 'silent' }) });
const producer = createProducer({ redis: redis.url, addressPolicy });
try {
  const { id } = await producer.delegate({ agent: agent.cardUrl, text: 'hello?', idempotencyKey: 'packed-1' });
  const view = await producer.waitFor(id, { timeoutMs: 60_000 });
  const resultText: string | undefined = view.steps[0]?.attempts[0]?.resultText;
  console.log(JSON.stringify({ state: view.state, resultText, sent: agent.sendMessageCount(), timeoutError: new WaitTimeoutError('x', view).code }));
} finally {
  await producer.close();
  await fleet.close();
  await agent.close();
  await redis.stop();
}
`;

async function exec(command: string, args: string[], cwd: string, env: Record<string, string> = {}): Promise<{ stdout: string; stderr: string }> {
  try {
    return await run(command, args, { cwd, maxBuffer: 32 * 1024 * 1024, env: { ...process.env, npm_config_update_notifier: 'false', ...env } });
  } catch (error) {
    const failed = error as { stdout?: string; stderr?: string; message: string };
    throw new Error(`${command} ${args.join(' ')} failed in ${cwd}: ${failed.message}\n${failed.stdout ?? ''}\n${failed.stderr ?? ''}`);
  }
}

it('a scratch service installs the packed tarballs, type-checks with NodeNext and runs with plain node', async () => {
  const service = scratch!;
  expect(files).toHaveLength(PACKAGES.length);
  const local = Object.fromEntries(PACKAGES.map((name) => [`@durable-a2a/${name}`, `file:${tarballOf(name)}`]));

  await mkdir(join(service, 'src'));
  const manifest = { name: 'scratch-service', private: true, type: 'module', dependencies: local, devDependencies: VERSIONS, overrides: local };
  await writeFile(join(service, 'package.json'), JSON.stringify(manifest, null, 2));
  const tsconfig = { compilerOptions: { target: 'ES2022', module: 'NodeNext', strict: true, outDir: 'dist', rootDir: 'src', skipLibCheck: false, types: ['node'] }, include: ['src'] };
  await writeFile(join(service, 'tsconfig.json'), JSON.stringify(tsconfig, null, 2));
  await writeFile(join(service, 'src', 'main.ts'), SERVICE);
  await exec('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', '--loglevel=error'], service);

  // Only the compiled dist/ is reachable: no tsx, no sources, no .ts import paths.
  await exec(process.execPath, [join(service, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.json'], service);
  const { stdout } = await exec(process.execPath, ['dist/main.js'], service);
  expect(JSON.parse(stdout.trim().split('\n').at(-1)!)).toEqual({ state: 'COMPLETED', resultText: 'hello from a packed agent', sent: 1, timeoutError: 'WAIT_TIMEOUT' });

  // The executables are compiled JavaScript run by plain node.
  const help = await exec(process.execPath, [join(service, 'node_modules/.bin/durable-a2a'), '--help'], service);
  expect(help.stdout).toContain('Usage: durable-a2a');
  // With a bad configuration both load every module, then refuse to start (exit 2) naming the variable.
  const refusals = { 'durable-a2a-workers': ['DA2A_METRICS_PORT', { DA2A_METRICS_PORT: 'not-a-port' }], 'durable-a2a-api': ['DA2A_API_TOKENS', { DA2A_API_TOKENS: '' }] } as const;
  for (const [executable, [variable, env]] of Object.entries(refusals)) {
    const failed = (await exec(process.execPath, [join(service, 'node_modules/.bin', executable)], service, env).catch((error: Error) => error)) as Error;
    expect(failed.message).toContain(`configuration error: ${variable}`);
    expect(failed.message).not.toMatch(/ERR_UNKNOWN_FILE_EXTENSION|ERR_MODULE_NOT_FOUND|Cannot find/);
  }
}, 600_000);

/** Names of every package installed under `directory/node_modules`, nested ones included (bounded depth). */
async function installedPackages(directory: string, depth = 0): Promise<string[]> {
  const modules = join(directory, 'node_modules');
  if (depth > 6 || !existsSync(modules)) return [];
  const names: string[] = [];
  for (const entry of await readdir(modules)) {
    if (entry.startsWith('.')) continue;
    const scoped = entry.startsWith('@') ? (await readdir(join(modules, entry))).map((name) => `${entry}/${name}`) : [entry];
    for (const name of scoped) names.push(name, ...(await installedPackages(join(modules, name), depth + 1)));
  }
  return names;
}

/** The README's example: the fenced block after its `<!-- example: examples/follow.mjs` marker. */
const readmeExample = (readme: string): string | undefined => readme.match(/<!-- example: examples\/follow\.mjs[^\n]*\n```js\n([\s\S]*?)```\n/)?.[1];

it('@durable-a2a/a2a installed alone brings no Redis, queue or logger, and its README example runs with plain node', async () => {
  // Its own directory outside the service's: nothing installed there can be resolved from here.
  const client = await mkdtemp(join(tmpdir(), 'durable-a2a-client-'));
  clientScratch = client;
  const manifest = { name: 'scratch-a2a-client', private: true, type: 'module', dependencies: { '@durable-a2a/a2a': `file:${tarballOf('a2a')}` } };
  await writeFile(join(client, 'package.json'), JSON.stringify(manifest, null, 2));
  await exec('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', '--loglevel=error'], client);

  const installed = await installedPackages(client);
  expect(installed).toContain('@durable-a2a/a2a');
  expect(installed).toContain('undici');
  expect(installed.filter((name) => /^(bullmq|ioredis|pino|prom-client|@durable-a2a\/(?!a2a$).*|@opentelemetry\/(?!api$).*)$/.test(name))).toEqual([]);

  // The example in the packed README is the packed examples/follow.mjs, and runs as a user would copy it.
  const packed = join(client, 'node_modules/@durable-a2a/a2a');
  const example = readmeExample(await readFile(join(packed, 'README.md'), 'utf8'));
  expect(example).toBe(await readFile(join(packed, 'examples/follow.mjs'), 'utf8'));
  await writeFile(join(client, 'follow.mjs'), example!);

  // Three artifact chunks 100 ms apart, and every stream cut after its first event: the example must resubscribe
  // (each subscription's first event is the task as it is), then read the ended task with GetTask.
  const agent: DemoAgentHandle = await startDemoAgent({ behaviour: completesWith('hello from the packed client', { chunks: 3, delayMs: 100 }) });
  try {
    agent.dropStreamsAfter(1);
    const { stdout } = await exec(process.execPath, ['follow.mjs', agent.cardUrl, 'hello?'], client);
    const result = JSON.parse(stdout.trim().split('\n').at(-1)!);
    expect(result).toMatchObject({
      agent: agent.card.name,
      binding: 'JSONRPC',
      state: 'TASK_STATE_COMPLETED',
      artifacts: ['hello from the packed client'],
      unknownTask: { name: 'TaskNotFoundError', code: 'TASK_NOT_FOUND', retryable: false, delivery: 'received', isTaskNotFound: true },
    });
    expect(result.subscriptions).toBeGreaterThanOrEqual(2);
    expect(agent.droppedStreams).toBeGreaterThanOrEqual(1);
    expect(agent.sendMessageCount()).toBe(1);
    expect(agent.receivedMessages.map((message) => message.text)).toEqual(['hello?']);
  } finally {
    await agent.close();
  }
}, 600_000);
