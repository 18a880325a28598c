/**
 * The `durable-a2a` CLI against a running API (listening on 127.0.0.1, real
 * workers, real agents): every command, --json, token and URL from flags or
 * env, and the documented exit codes.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import type { ApiServer } from '@durable-a2a/producer/server';
import type { Fleet } from '@durable-a2a/workers';
import { EXIT_CODES, run } from '@durable-a2a/cli';
import { agentIdOf } from '@durable-a2a/shared';
import { useRedisServer } from '../harness/redis.ts';
import { startDemoAgent, type DemoAgentHandle } from '../harness/agent.ts';
import { asksForInput, completesWith, completionSteps } from '../harness/agent-behaviours.ts';
import { SOURCE_EXEC_ARGV, eventually, startTestFleet } from '../harness/fleet.ts';
import { TEST_API_TOKEN, startTestServer } from '../harness/api-server.ts';

const redisServer = useRedisServer();
const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const PREFIX = 'cli';
let app: ApiServer;
let fleet: Fleet;
let apiUrl: string;
let done: DemoAgentHandle;
let asking: DemoAgentHandle;

beforeAll(async () => {
  done = await startDemoAgent({ name: 'Done agent', skills: [{ id: 'finish', name: 'Finish', description: 'finishes', tags: [] }], behaviour: completesWith('all done') });
  asking = await startDemoAgent({ behaviour: asksForInput('Window or aisle?', (answer) => completionSteps(`seat ${answer}`)) });
  app = startTestServer({ redisUrl: redisServer().url, prefix: PREFIX });
  apiUrl = await app.listen({ port: 0, host: '127.0.0.1' });
  fleet = await startTestFleet({ redisUrl: redisServer().url, prefix: PREFIX });
});
afterAll(async () => {
  await fleet?.close();
  await app?.close();
  await Promise.all([done?.close(), asking?.close()]);
});

/** Runs the CLI in-process with the API's URL and token in its environment. */
async function cli(argv: string[], env: Record<string, string | undefined> = { DURABLE_A2A_URL: apiUrl, DURABLE_A2A_TOKEN: TEST_API_TOKEN }) {
  let stdout = '';
  let stderr = '';
  const code = await run(argv, { stdout: (text) => (stdout += text), stderr: (text) => (stderr += text), env });
  return { code, stdout, stderr };
}

async function startWorkflow(workflowId: string, agentCardUrl: string): Promise<void> {
  const response = await fetch(`${apiUrl}/v1/workflows`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TEST_API_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ workflowId, steps: [{ name: 'main', agent: agentCardUrl, message: { text: 'go' } }] }),
  });
  expect(response.status).toBe(201);
}

describe('durable-a2a CLI', () => {
  it('--version (and -V) prints the package version, exit 0', async () => {
    const { version } = JSON.parse(readFileSync(new URL('../../packages/cli/package.json', import.meta.url), 'utf8')) as { version: string };
    for (const flag of ['--version', '-V']) expect(await cli([flag])).toEqual({ code: 0, stdout: `${version}\n`, stderr: '' });
  });

  it('agents add and agents list (human and --json)', async () => {
    const added = await cli(['agents', 'add', done.cardUrl]);
    expect(added).toMatchObject({ code: 0, stderr: '' });
    const id = agentIdOf(done.cardUrl);
    expect(added.stdout).toMatch(new RegExp(`^${id}\tactive\tDone agent\t${escapeRegExp(done.cardUrl)}\tfinish\thealth 100% of 1\tcard \\d{4}-\\d\\d-\\d\\dT[^\t]+Z\n$`));
    const listed = await cli(['--json', 'agents', 'list']);
    expect(listed.code).toBe(0);
    expect(JSON.parse(listed.stdout)).toEqual([expect.objectContaining({ id, cardUrl: done.cardUrl, status: 'active', card: expect.objectContaining({ name: 'Done agent' }) })]);
  });

  it('agents add by another spelling refreshes the one agent; agents disable, enable and remove (by id or card URL)', async () => {
    const id = agentIdOf(done.cardUrl);
    for (const spelling of [done.baseUrl, `${done.baseUrl}/`, done.cardUrl.replace('http://', 'HTTP://')]) expect((await cli(['agents', 'add', spelling])).code).toBe(0);
    expect(JSON.parse((await cli(['--json', 'agents'])).stdout).map((agent: { id: string }) => agent.id)).toEqual([id]);

    const disabled = await cli(['agents', 'disable', id, '--reason', 'flaky since the deploy']);
    expect(disabled).toMatchObject({ code: 0, stderr: '' });
    expect(disabled.stdout).toContain(`${id}\tdisabled\t`);
    expect(disabled.stdout).toContain('flaky since the deploy');
    expect((await cli(['agents', 'list'])).stdout).toMatch(/\tdisabled\t.*never picked for a skill/);
    expect((await cli(['agents', 'enable', `${done.baseUrl}/`])).stdout).toContain(`${id}\tactive\t`);

    const removed = await cli(['agents', 'remove', done.baseUrl]);
    expect(removed).toMatchObject({ code: 0, stdout: `${id}\t${done.cardUrl}\tremoved\n` });
    expect((await cli(['agents', 'list'])).stdout).toBe('(none)\n');
    const again = await cli(['agents', 'remove', id]);
    expect(again.code).toBe(EXIT_CODES.NOT_FOUND);
    expect(again.stderr).toContain('no registered agent');
  });

  it('show --wait: the timeline of a completed workflow, its result and the attempt', async () => {
    await startWorkflow('cli-done', done.cardUrl);
    const shown = await cli(['show', 'cli-done', '--wait', '30000']);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toMatch(/^workflow cli-done {2}COMPLETED/);
    expect(shown.stdout).toMatch(/attempt 1 main\.1 {2}COMPLETED {2}agent 127\.0\.0\.1:\d+ {2}task /);
    expect(shown.stdout).toContain('result: all done');
    const json = JSON.parse((await cli(['show', 'cli-done', '--json'])).stdout);
    expect(json).toMatchObject({ workflowId: 'cli-done', state: 'COMPLETED', steps: [{ name: 'main', attempts: [{ state: 'COMPLETED', resultText: 'all done' }] }] });
  });

  it('questions, list --waiting, reply: the question is answered on its task and the workflow completes', async () => {
    await startWorkflow('cli-asks', asking.cardUrl);
    const questions = await eventually(async () => {
      const result = await cli(['--json', 'questions']);
      const parsed = JSON.parse(result.stdout) as { workflowId: string; step: string; text: string }[];
      return parsed.length > 0 ? parsed : undefined;
    }, 'an open question');
    expect(questions).toEqual([expect.objectContaining({ workflowId: 'cli-asks', step: 'main', text: 'Window or aisle?' })]);
    // A header row, then the workflow with what it waits on (its question's state), not RUNNING.
    const waiting = await cli(['list', '--waiting']);
    expect(waiting.stdout.trim().split('\n')).toEqual(['WORKFLOW\tSTATE\tSTEPS', expect.stringMatching(/^cli-asks\tINPUT_REQUIRED\t1 step\(s\) {2}1 question\(s\)$/)]);
    expect(JSON.parse((await cli(['--json', 'list', '--waiting'])).stdout)).toEqual([expect.objectContaining({ workflowId: 'cli-asks', state: 'RUNNING' })]);
    // The API's question filters (GET /v1/workflows?state=INPUT_REQUIRED) are CLI choices too.
    const byQuestion = await cli(['list', '--state', 'INPUT_REQUIRED']);
    expect(byQuestion).toMatchObject({ code: 0, stdout: waiting.stdout });
    expect((await cli(['list', '--state', 'AUTH_REQUIRED'])).stdout).toBe('(none)\n');
    expect((await cli(['questions', 'cli-asks'])).stdout).toContain('durable-a2a reply cli-asks main');
    const replied = await cli(['reply', 'cli-asks', 'main', 'aisle']);
    expect(replied.code).toBe(0);
    expect(replied.stdout).toMatch(/^reply journaled: message /);
    const shown = await cli(['--json', 'show', 'cli-asks', '--wait', '30000']);
    expect(JSON.parse(shown.stdout)).toMatchObject({ state: 'COMPLETED', steps: [{ attempts: [{ resultText: 'seat aisle' }] }] });
    expect(asking.receivedMessages.map((message) => message.text)).toEqual(['go', 'aisle']);
    const listed = await cli(['--json', 'list', '--state', 'COMPLETED']);
    expect((JSON.parse(listed.stdout) as { workflowId: string }[]).map((view) => view.workflowId).sort()).toEqual(['cli-asks', 'cli-done']);
  });

  it('cancel and resolve: refused on a finished workflow with exit code 4', async () => {
    const cancel = await cli(['cancel', 'cli-done']);
    expect(cancel.code).toBe(EXIT_CODES.CONFLICT);
    expect(cancel.stderr).toContain('WORKFLOW_FINISHED');
    expect((await cli(['resolve', 'cli-done', 'retry'])).code).toBe(EXIT_CODES.CONFLICT);
    expect((await cli(['reply', 'cli-done', 'main', 'late'])).code).toBe(EXIT_CODES.CONFLICT); // never asked
    expect((await cli(['reply', 'cli-asks', 'main', 'aisle'])).stdout).toMatch(/^already answered with this reply: message /); // the same reply twice is harmless
    // A different reply once the workflow finished: refused as finished, not as "answered with a different reply".
    const different = await cli(['reply', 'cli-asks', 'main', 'window']);
    expect(different.code).toBe(EXIT_CODES.CONFLICT);
    expect(different.stderr).toContain('NO_OPEN_QUESTION: workflow cli-asks is finished (COMPLETED): it has no question left to answer');
    expect(different.stderr).not.toContain('different reply');
    const neverAsked = await cli(['reply', 'cli-done', 'main', 'late']);
    expect(neverAsked.stderr).toContain('workflow cli-done is finished (COMPLETED)');
  });

  it('cancel of a running workflow: cancel requested, the workflow ends CANCELED', async () => {
    asking.setBehaviour(asksForInput('Still there?', () => completionSteps('never')));
    await startWorkflow('cli-cancel', asking.cardUrl);
    await eventually(async () => JSON.parse((await cli(['--json', 'questions', 'cli-cancel'])).stdout).length > 0, 'the question');
    const cancel = await cli(['cancel', 'cli-cancel']);
    expect(cancel).toMatchObject({ code: 0, stdout: 'cli-cancel: cancel requested\n' });
    expect(JSON.parse((await cli(['--json', 'show', 'cli-cancel', '--wait', '30000'])).stdout)).toMatchObject({ state: 'CANCELED' });
  });

  it('show --wait --until-question: the long poll ends at the open question, before its 30 s', async () => {
    const seat = await startDemoAgent({ behaviour: asksForInput('Window or aisle?', (answer) => completionSteps(`seat ${answer}`)) });
    onTestFinished(() => seat.close());
    await startWorkflow('cli-until-question', seat.cardUrl);
    // Without --until-question the API would hold this poll the whole 30 s (a question is not a settled state); the
    // test's own bound (20 s) is shorter, so only a wait that ends at the question passes.
    const shown = await cli(['--json', 'show', 'cli-until-question', '--wait', '30000', '--until-question']);
    expect(shown.code).toBe(0);
    expect(JSON.parse(shown.stdout)).toMatchObject({ state: 'RUNNING', openQuestions: [{ step: 'main', text: 'Window or aisle?' }] });
    expect((await cli(['show', 'cli-until-question', '--until-question'])).code).toBe(EXIT_CODES.USAGE);
    expect((await cli(['reply', 'cli-until-question', 'main', 'window'])).code).toBe(0);
    expect(JSON.parse((await cli(['--json', 'show', 'cli-until-question', '--wait', '30000'])).stdout)).toMatchObject({ state: 'COMPLETED' });
  }, 20_000);

  it('exit codes: usage 2, not found 3, unauthorized 5, unreachable 6, each of the last two naming what to set; flags win over env', async () => {
    expect((await cli(['frobnicate'])).code).toBe(EXIT_CODES.USAGE);
    expect((await cli(['resolve', 'cli-done', 'maybe'])).code).toBe(EXIT_CODES.USAGE);
    expect((await cli(['list', '--limit', 'many'])).code).toBe(EXIT_CODES.USAGE);
    expect((await cli(['list', '--state', 'SLEEPING'])).code).toBe(EXIT_CODES.USAGE);
    expect((await cli(['show', 'no-such-workflow'])).code).toBe(EXIT_CODES.NOT_FOUND);
    const noToken = await cli(['show', 'cli-done'], { DURABLE_A2A_URL: apiUrl });
    expect(noToken.code).toBe(EXIT_CODES.UNAUTHORIZED);
    expect(noToken.stderr).toMatch(/no token given: set DURABLE_A2A_TOKEN or pass --token/);
    const wrongToken = await cli(['show', 'cli-done', '--token', 'wrong-token-0123456789']);
    expect(wrongToken.code).toBe(EXIT_CODES.UNAUTHORIZED);
    expect(wrongToken.stderr).toContain("the token (--token) is not one of the service's DA2A_API_TOKENS");
    expect((await cli(['--url', apiUrl, '--token', TEST_API_TOKEN, 'show', 'cli-done'], {})).code).toBe(EXIT_CODES.OK);
    const unreachable = await cli(['--url', 'http://127.0.0.1:9', 'show', 'cli-done']);
    expect(unreachable.code).toBe(EXIT_CODES.UNREACHABLE);
    expect(unreachable.stderr).toContain('cannot reach http://127.0.0.1:9');
    expect(unreachable.stderr).toMatch(/\(--url\)\? Set DURABLE_A2A_URL or pass --url/);
    // The URL from the environment: the hint says so.
    const nothingSet = await cli(['show', 'cli-done'], { DURABLE_A2A_URL: 'http://127.0.0.1:9' });
    expect(nothingSet.code).toBe(EXIT_CODES.UNREACHABLE);
    expect(nothingSet.stderr).toMatch(/\(DURABLE_A2A_URL\)\? Set DURABLE_A2A_URL or pass --url/);
    expect((await cli(['--help'])).code).toBe(EXIT_CODES.OK);
  });

  it('the executable passes the exit code to the shell', async () => {
    const main = fileURLToPath(new URL('../../packages/cli/src/main.ts', import.meta.url));
    const child = spawn(process.execPath, [...SOURCE_EXEC_ARGV, main, 'show', 'no-such-workflow'], {
      env: { PATH: process.env.PATH ?? '', DURABLE_A2A_URL: apiUrl, DURABLE_A2A_TOKEN: TEST_API_TOKEN },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect(code).toBe(EXIT_CODES.NOT_FOUND);
    expect(stderr).toContain('NOT_FOUND');
  });
});
