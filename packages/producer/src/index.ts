// Public surface of @durable-a2a/producer. The HTTP service is a separate entry point.
export { createProducer, DelegateInputSchema } from './producer.ts';
export type { Producer, ProducerOptions, DelegateInput } from './producer.ts';
export { ProducerInputError, NotFoundError, NoOpenQuestionError, IdempotencyConflictError, RedisUnavailableError, WorkflowFinishedError, fromZodError } from './errors.ts';
export { ReplicationTimeoutError } from '@durable-a2a/shared';
export { workflowView } from './view.ts';
export type { WorkflowView, StepView, AttemptSummary, OpenQuestion } from './view.ts';
export { WaitTimeoutError, SETTLED_WORKFLOW_STATES } from './wait.ts';
export type { WaitForOptions } from './wait.ts';
