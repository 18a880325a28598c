/**
 * What a bundler makes of each package: esbuild (tree-shaking on, every dependency inlined, ESM for node) bundles a
 * small program per entry point, as a service would import it, and the test runs the bundle with plain `node`
 * against real agents on port 0. `"sideEffects": false` lets a bundler drop any module whose exports are unused;
 * these bundles prove that nothing a program needs was dropped with them (transports are passed in, never
 * registered on import), and that the main entry of @durable-a2a/a2a carries no gRPC, BullMQ, ioredis or pino code.
 * The journal's Lua scripts are files next to the code (`lua/`): a bundled producer or workers needs them copied
 * next to the bundle, as done here.
 */
import { execFile } from 'node:child_process';
import { cp, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { build, type Metafile } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { completesWith, startDemoAgent, startRedisServer, type DemoAgentHandle, type RedisServerHandle } from './harness/index.ts';
import { type GrpcAgentHandle, startGrpcAgent } from './harness/grpc-agent.ts';

const run = promisify(execFile);
const root = fileURLToPath(new URL('..', import.meta.url));
/** Packages whose code must never reach a bundle of `@durable-a2a/a2a`'s main entry. */
const NOT_IN_A2A_MAIN = /node_modules\/(?:\.pnpm\/[^/]+\/node_modules\/)?(@grpc\/|@bufbuild\/|protobufjs|bullmq|ioredis|pino)/;

let outDirectory: string;
let agent: DemoAgentHandle;
let grpcAgent: GrpcAgentHandle;

beforeAll(async () => {
  outDirectory = await mkdtemp(join(tmpdir(), 'durable-a2a-bundle-'));
  agent = await startDemoAgent({ behaviour: completesWith('bundled hello') });
  grpcAgent = await startGrpcAgent({ behaviour: completesWith('bundled hello') });
});

afterAll(async () => {
  await agent?.close();
  await grpcAgent?.stop();
  if (outDirectory) await rm(outDirectory, { recursive: true, force: true });
});

/** Bundles `program` (TypeScript, importing the packages by name) into `<outDirectory>/<name>.mjs`; returns the input files. */
async function bundle(name: string, program: string): Promise<{ file: string; inputs: string[] }> {
  const file = join(outDirectory, `${name}.mjs`);
  const result = await build({
    stdin: { contents: program, resolveDir: root, loader: 'ts', sourcefile: `${name}.ts` },
    bundle: true,
    treeShaking: true,
    platform: 'node',
    format: 'esm',
    target: 'node22',
    // Sources, as inside the workspace; dist/ is the same code compiled by tsc.
    conditions: ['@durable-a2a/source'],
    // CommonJS dependencies call `require` for node built-ins.
    banner: { js: "import { createRequire as createRequireOfBundle } from 'node:module'; const require = createRequireOfBundle(import.meta.url);" },
    outfile: file,
    metafile: true,
    logLevel: 'error',
  });
  return { file, inputs: Object.keys((result.metafile as Metafile).inputs) };
}

/** Runs a bundle with plain node; its last stdout line is JSON. */
async function runBundle(file: string, args: string[]): Promise<unknown> {
  const { stdout } = await run(process.execPath, [file, ...args], { cwd: outDirectory, timeout: 120_000 });
  return JSON.parse(stdout.trim().split('\n').at(-1)!);
}

/** A program that sends one message and reads a task that does not exist, over the interface its transports choose. */
const clientProgram = (withGrpc: boolean) => `
import { randomUUID } from 'node:crypto';
import { TaskNotFoundError, createTransport, defaultTransports, deliveryOf, fetchAgentCard, selectInterface } from '@durable-a2a/a2a';
${withGrpc ? "import { grpcTransports } from '@durable-a2a/a2a/grpc';" : ''}
const transports = ${withGrpc ? 'grpcTransports' : 'defaultTransports'};
const card = await fetchAgentCard(process.argv[2]);
const agentInterface = selectInterface(card, { transports });
if (!agentInterface) throw new Error('no interface');
const transport = createTransport(agentInterface, { transports, requestTimeoutMs: 30_000 });
const answer = await transport.sendMessage({ message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text: 'hello?' }] } });
let missing;
try {
  await transport.getTask({ id: randomUUID() });
} catch (error) {
  missing = { typed: error instanceof TaskNotFoundError, delivery: deliveryOf(error) };
}
(transport as { close?: () => void }).close?.();
console.log(JSON.stringify({ binding: transport.binding, state: 'task' in answer ? answer.task.status.state : 'message', missing }));
`;

const packageOf = (input: string): string | undefined => input.match(/node_modules\/(?:\.pnpm\/[^/]+\/node_modules\/)?((?:@[^/]+\/)?[^/]+)/)?.[1];

describe('bundled with esbuild (tree-shaking, sideEffects: false)', () => {
  it('@durable-a2a/a2a main: JSON-RPC works from the bundle, which holds no gRPC, BullMQ, ioredis or pino code', async () => {
    const { file, inputs } = await bundle('a2a-main', clientProgram(false));
    expect(inputs.filter((input) => NOT_IN_A2A_MAIN.test(input) || input.includes('packages/a2a/src/grpc/'))).toEqual([]);
    expect(inputs.some((input) => input.endsWith('packages/a2a/src/jsonrpc.ts'))).toBe(true);
    expect(new Set(inputs.map(packageOf).filter(Boolean))).toEqual(new Set(['zod', 'undici', 'ipaddr.js', '@opentelemetry/api', 'eventsource-parser', 'lru-cache']));
    const sentBefore = agent.sendMessageCount();
    expect(await runBundle(file, [agent.cardUrl])).toEqual({ binding: 'JSONRPC', state: 'TASK_STATE_COMPLETED', missing: { typed: true, delivery: 'received' } });
    expect(agent.sendMessageCount()).toBe(sentBefore + 1);
  }, 180_000);

  it('@durable-a2a/a2a/grpc: the gRPC transport, loaded on its first call, works from the bundle', async () => {
    const { file, inputs } = await bundle('a2a-grpc', clientProgram(true));
    expect(inputs.some((input) => packageOf(input) === '@grpc/grpc-js')).toBe(true);
    expect(inputs.some((input) => /bullmq|ioredis|pino/.test(packageOf(input) ?? ''))).toBe(false);
    expect(await runBundle(file, [grpcAgent.cardUrl])).toEqual({ binding: 'GRPC', state: 'TASK_STATE_COMPLETED', missing: { typed: true, delivery: 'received' } });
    expect(grpcAgent.sendMessageCount()).toBe(1);
  }, 180_000);

  it('@durable-a2a/shared: a workflow definition parses and a logger logs from the bundle', async () => {
    const { file } = await bundle(
      'shared',
      `import { WorkflowDefinitionSchema, createLogger } from '@durable-a2a/shared';
const definition = WorkflowDefinitionSchema.parse({
  workflowId: 'bundled',
  steps: [{ name: 'one', agent: 'http://127.0.0.1:1', message: { parts: [{ text: 'hi' }] } }],
});
createLogger({ level: 'silent' }).info('bundled');
console.log(JSON.stringify({ steps: definition.steps.map((step) => step.name), parts: definition.steps[0].message }));`,
    );
    // PartSchema comes from @durable-a2a/a2a/pure: the message parts are parsed by the A2A model.
    expect(await runBundle(file, [])).toEqual({ steps: ['one'], parts: { parts: [{ text: 'hi' }] } });
  }, 180_000);

  describe('producer and workers', () => {
    let redis: RedisServerHandle;
    beforeAll(async () => {
      redis = await startRedisServer();
    });
    afterAll(async () => {
      await redis?.stop();
    });

    it('a bundled service (producer + workers) completes a delegation', async () => {
      const { file } = await bundle(
        'service',
        `import { createProducer } from '@durable-a2a/producer';
import { startFleet } from '@durable-a2a/workers';
import { createLogger } from '@durable-a2a/shared';
const [redis, agent] = process.argv.slice(2);
const addressPolicy = { allowLoopback: true };
const fleet = await startFleet({ redis, addressPolicy, logger: createLogger({ level: 'silent' }) });
const producer = createProducer({ redis, addressPolicy });
try {
  const { id } = await producer.delegate({ agent, text: 'hello?', idempotencyKey: 'bundled-1' });
  const view = await producer.waitFor(id, { timeoutMs: 60_000 });
  console.log(JSON.stringify({ state: view.state, resultText: view.steps[0]?.attempts[0]?.resultText }));
} finally {
  await producer.close();
  await fleet.close();
}`,
      );
      // The journal reads its Lua scripts from \`lua/\` next to its module: here, next to the bundle.
      await cp(join(root, 'packages/shared/src/journal/lua'), join(outDirectory, 'lua'), { recursive: true });
      const sentBefore = agent.sendMessageCount();
      expect(await runBundle(file, [redis.url, agent.cardUrl])).toEqual({ state: 'COMPLETED', resultText: 'bundled hello' });
      expect(agent.sendMessageCount()).toBe(sentBefore + 1);
    }, 180_000);
  });
});
