// Public surface of @durable-a2a/cli: the executable is `durable-a2a`; `run` embeds it.
export { run, EXIT_CODES, DEFAULT_API_URL } from './program.ts';
export type { CliIo } from './program.ts';
export { callApi, ApiError, ApiUnreachableError } from './client.ts';
export type { ApiClientOptions } from './client.ts';
export type { WorkflowView, Attempt, Question, Agent } from './format.ts';
