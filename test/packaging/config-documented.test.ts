/**
 * Every environment variable the executables read is documented in docs/operations.md: each key of the
 * workers' and the API's zod environment schemas is named there in backticks (the `DA2A_LIMIT_*` input limits
 * are covered by their row's `DA2A_LIMIT_*` and the "Limits and deadlines" table).
 */
import { readFileSync } from 'node:fs';
import { expect, it } from 'vitest';
import { WorkerEnvironmentSchema } from '@durable-a2a/workers';
import { ServerEnvironmentSchema } from '@durable-a2a/producer/server';

const operations = readFileSync(new URL('../../docs/operations.md', import.meta.url), 'utf8');

/** The variables of `shape` not named in docs/operations.md. */
const undocumented = (shape: Record<string, unknown>) =>
  Object.keys(shape).filter((name) => !operations.includes(`\`${name}\``) && !(name.startsWith('DA2A_LIMIT_') && operations.includes(`\`${name.slice('DA2A_LIMIT_'.length)}\``)));

it('every variable the workers read is in docs/operations.md', () => {
  expect(Object.keys(WorkerEnvironmentSchema.shape).length).toBeGreaterThan(30);
  expect(undocumented(WorkerEnvironmentSchema.shape)).toEqual([]);
});

it('every variable the API reads is in docs/operations.md', () => {
  expect(Object.keys(ServerEnvironmentSchema.shape).length).toBeGreaterThan(15);
  expect(undocumented(ServerEnvironmentSchema.shape)).toEqual([]);
});
