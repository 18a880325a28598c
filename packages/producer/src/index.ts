// Public surface of @durable-a2a/producer. The HTTP service is a separate entry point.
export { createProducer, DelegateInputSchema } from './producer.ts';
export type { Producer, ProducerOptions, DelegateInput } from './producer.ts';
export { ProducerInputError, NotFoundError, NoOpenQuestionError, IdempotencyConflictError, RedisUnavailableError, RedisRefusingWritesError, WorkflowFinishedError, ResolutionNotAllowedError, fromZodError } from './errors.ts';
export type { ResolveAction } from './errors.ts';
export { RESOLVE_ACTIONS } from './calls/cancel.ts';
export { BULK_ACTIONS, BULK_LIMIT, BulkInputSchema } from './calls/bulk.ts';
export type { BulkAction, BulkInput, BulkItem, BulkResult } from './calls/bulk.ts';
export { WorkflowFilterSchema, WORKFLOW_FILTER_STATES } from './calls/search.ts';
export type { WorkflowFilterInput } from './calls/search.ts';
export { AgentAddressRefusedError } from './agent-addresses.ts';
export { ReplicationTimeoutError } from '@durable-a2a/shared';
export { workflowView } from './view.ts';
export type { WorkflowView, StepView, AttemptSummary, OpenQuestion, WorkflowSummaryView, OpenQuestionSummaryView } from './view.ts';
export type { HistoryEntryView } from './history-view.ts';
export type { ActorOptions } from './calls/reply.ts';
export type { TenantWeight } from './calls/tenants.ts';
export { WaitTimeoutError, SETTLED_WORKFLOW_STATES } from './wait.ts';
export type { WaitForOptions } from './wait.ts';
