// Public surface of @durable-a2a/shared. Names are listed one by one; the A2A client is @durable-a2a/a2a.

export { Journal, countUnfinishedByState, questionKeyOf, asksQuestion, ANSWERS_PER_WORKFLOW_MAX, sameAnswerParts } from './journal/journal.ts';
export { boundedResult, boundedStatusMessage, resultWithinLimit, statusMessageCut, type StatusMessageCut } from './journal/status-message.ts';
export { WorkflowChangeSubscriber, workflowChangeChannel, workflowChangePattern, PATTERN_FROM_WAITERS, PATTERN_LINGER_MS, MAX_CREATION_WATCHES, type ChangeSubscriberOptions, type CreationWatch } from './journal/changes.ts';
export type { DelegationRef, StatusChange, StatusChangeResult, FollowLease, WorkflowAtFinish, WorkflowFlags, JournalOptions, QuestionExpiry, RecordedReply, FinishStepResult, OneStepFinish, SuspectsLeft, SuspectRoundClaim } from './journal/journal.ts';
export { JournalError } from './journal/errors.ts';
export type { JournalErrorCode } from './journal/errors.ts';
export { CorruptRecordError, corruptRecordReporter } from './journal/corrupt.ts';
export type { CorruptRecordHandler, CorruptRecordKind } from './journal/corrupt.ts';
export { indexMember, journalKeys, parseIndexMember, ID_PATTERN } from './journal/keys.ts';
export { AgentFlow, type AgentLimits, type FlowAcquired, type FlowWaitReason } from './journal/agent-flow.ts';
export { SendOrder, SEND_ORDER_WINDOW_MS, SEND_ORDER_REBASE_FROM, SEND_ORDER_REBASE_QUIET_MS, type SendOrderRebase } from './journal/send-order.ts';
export { SEND_PRIORITY, SendPrioritySchema, DEFAULT_SEND_TENANT, bullmqSendPriority, placeOfSendPriority, FairSendQueue, type SendPlaces } from './send-priority.ts';
export type { JournalKeys } from './journal/keys.ts';
export { DEFAULT_TENANT, TENANT_PATTERN, TENANT_SEPARATOR, TenantSchema, WORKFLOW_ID_PATTERN, localWorkflowId, scopedWorkflowId, tenantOfWorkflowId, tenantWorkflowId } from './journal/tenant.ts';
export { CLUSTER_INTENT_GRACE_MS, QUOTA_CHECKED_MEMBERS, type TenantQuota, type WorkflowVersions } from './journal/workflows.ts';
export { parseCompactedWorkflow } from './journal/compacted-record.ts';
export {
  HISTORY_LIMITS,
  ActorSchema,
  historyEntryText,
  partsText,
} from './journal/history.ts';
export type { History, HistoryEntry, HistoryEntryInput, KnownHistoryEntry, UnknownHistoryEntry } from './journal/history.ts';
export type { ReleaseOptions, RunMark, WorkflowRecordSnapshot } from './journal/delegations.ts';

export {
  JOURNAL_STATES,
  FINISHED_WORKFLOW_STATES,
  isFinished,
  isParked,
  isUnsuccessful,
  isWorkflowFinished,
  journalStateOf,
} from './journal/states.ts';
export type { JournalState } from './journal/states.ts';
export { AttentionSchema, ATTENTION_CODES, isStepStopped, isWorkflowStopping, parseWorkflowHash } from './journal/workflow-record.ts';
export type { Attention, AttentionCode, WorkflowRecord, WorkflowPatch, WorkflowStopFlags } from './journal/workflow-record.ts';
export {
  RecordedErrorSchema,
  isAwaitingAnswer,
} from './journal/record.ts';
export type { DelegationRecord, DelegationView, AgentInterfaceRef, OutgoingMessage, RecordedError, RefusedResult, PushConfigState } from './journal/record.ts';
export { REFUSED_ARTIFACT_IDS_MAX, REFUSED_ARTIFACT_ID_BYTES_MAX, limitRefusalOf, refusedResultOf, refusedResultShown, refusedArtifactsMissing, withRefusal, type LimitRefusal } from './journal/refused-result.ts';
export { OUTCOME_CODES, PERSON_OUTCOME_CODES, RECORDED_ERROR_CODES, personOutcomeOf, recordedErrorCodeOf } from './journal/error-codes.ts';
export { keepsSuspects, lostUntold, suspectsPending, type SuspectFields, type SuspectRoundFields } from './journal/suspects.ts';
export type { OutcomeCode, PersonOutcomeCode, RecordedErrorCode } from './journal/error-codes.ts';
export { buildIntent, delegationIdOf } from './journal/intent.ts';

export { StreamQuestionWords, historyQuestionWords, type QuestionOwner } from './journal/question-words.ts';
export { applyTask, applyStreamResponse, applyStreamResponsePair, applyTerminalFinishing, applyTaskFinishing, statusErrorOf, type ArtifactThenStatus } from './journal/observe.ts';
export type { CorruptListing } from './journal/listing.ts';
export { listOpenQuestions, decodeListingCursor, nextChecks } from './journal/listing.ts';
export type { WorkflowSummary, OpenQuestionSummary, Page } from './journal/listing.ts';
export { searchWorkflows, listWorkflowSummaries, pruneSearchIndex, workflowSummaries } from './journal/search.ts';
export type { WorkflowFilter } from './journal/search.ts';
export { indexedPairs, searchableMetadata, SEARCH_METADATA_KEY, SEARCH_METADATA_LIMITS } from './journal/search-index.ts';
export { parseAgentTimestamp } from './journal/clock.ts';
export { EARLIER_PROTOCOL_ERRORS_MAX } from './journal/keys.ts';
export type { ObservationResult } from './journal/observe.ts';
export {
  ALL_QUEUES,
  SendJobSchema,
  FollowJobSchema,
  ReconcileJobSchema,
  RECONCILE_BATCH_MAX,
  DEAD_WORKERS_PER_SWEEP,
  SUSPECT_READS_PER_JOB,
  SUSPECT_TASK_ID_MAX,
  SUSPECTS_PENDING_MAX,
  VerifyJobSchema,
  CompensateJobSchema,
  NotifyJobSchema,
  queuePrefix,
  DEFAULT_JOB_OPTIONS,
  JOB_RETENTION,
} from './queues.ts';
export type { QueueName, SendJob, FollowJob, ReconcileJob, VerifyJob, CompensateJob, NotifyJob } from './queues.ts';
export { boundedNotificationTexts, notificationEventId, notificationEventOf } from './notify/event.ts';
export type { NotificationEvent, NotificationInput, NotificationKind } from './notify/event.ts';
export {
  ANSWER_LINK_SECRET_MIN_LENGTH,
  answerLinkFor,
  signAnswerLink,
  verifyAnswerLink,
} from './notify/answer-link.ts';
export type { AnswerLink, AnswerLinkClaim, AnswerLinkRefusal } from './notify/answer-link.ts';
export type { FrontPushConfig, NotificationEntry, NotificationStage } from './journal/journal.ts';
export {
  enqueueSend,
  enqueueSendTry,
  enqueueReply,
  enqueueCancel,
  enqueueFollow,
  enqueueReconcile,
  suspectReadJob,
  isSuspectReadJob,
  enqueueReconcileBatch,
  enqueueDecide,
  enqueueStartupSweep,
  enqueueDeadWorkerSweep,
  enqueueVerify,
  enqueueCompensate,
  enqueueNotification,
} from './enqueue.ts';
export type { TypedQueues, NotifyRetry } from './enqueue.ts';
export { decide, firstAttempts, classifyFailure, failureOf, needsUndo } from './decide.ts';
export type { Decision, WorkflowSnapshot, AttemptView, PreviousAttempt, CandidateLookup, FailureKind, FirstAttempt, Effect } from './decide.ts';
export { RESOLVE_ACTIONS, allowedResolveActions, resolutionPatch } from './decide-resolution.ts';
export type { ResolveAction, ResolutionAttempt, ResolutionWorkflow } from './decide-resolution.ts';
export { attemptMessage } from './attempt-message.ts';

export {
  MessageInputSchema,
  WorkflowDefinitionSchema,
  WORKFLOW_STATES,
  declaredVerifier,
  StrictQuestionPolicySchema,
  isBlankText,
} from './workflow.ts';
export type { MessageInput, VerifierRef, Compensation, Step, WorkflowDefinition, WorkflowState, NotifyTarget, QuestionPolicy, QuestionExpiryAction } from './workflow.ts';
export { createLogger, lazyChildLogger, defaultLoggerOptions, logRedisConnectionState } from './logger.ts';
export type { Logger } from './logger.ts';
export { QUEUE_JOB_STATUSES, createMetrics, metricsRequestAllowed } from './metrics.ts';
export { AGENT_LABEL_REFRESH_MS, AgentLabels, OTHER_AGENT_LABEL } from './metrics-agent-label.ts';
export type { LabelledAgent } from './metrics-agent-label.ts';
export { startTracing, withSpan, delegationSpan, annotateActiveSpan, TracingEnvironmentSchema, SPAN_ATTRIBUTES } from './tracing.ts';
export type { Tracing, TracingOptions, TracingEnvironment, DelegationSpanInput } from './tracing.ts';
export type { MetricsRole } from './metrics.ts';
export type { Metrics } from './metrics.ts';
export { AgentRegistry, candidateAgents, compensationAgentOf, agentIdOf, agentVisibleTo, AgentLimitsSchema, TenantNameSchema, TenantWeightSchema } from './registry.ts';
export type { RegisteredAgent, AgentTarget, AgentRegistryOptions, AgentCall, TimedAgentCall, AgentView, AgentStatus } from './registry.ts';
export { keepParsedDefinition } from './workflow.ts';
export { createRedisClient, openRedisClient, createFailFastRedisClient, waitUntilConnected, untilReadyOrTimeout, nextReady, isConnectedNow, isClusterUrl, batchWritesPerTurn, DEFAULT_COMMAND_TIMEOUT_MS } from './redis.ts';
export { redisErrorKind, reconnectOnRedisError, REDIS_REPLY_PREFIXES, type RedisErrorKind } from './redis-errors.ts';
export { RedisRefusalGate, redisBackoffMs, type RedisRefusalGateOptions } from './redis-refusal-gate.ts';
export { parseSentinelUrl } from './redis-sentinel.ts';
export type { SentinelTarget } from './redis-sentinel.ts';
export type { RedisClient } from './redis.ts';
export { ReplicationTimeoutError, connectionGeneration, durabilityFrom, JournalDurabilityEnvironment } from './journal/durability.ts';
export type { JournalDurability } from './journal/durability.ts';
export { listenOrExit, parseEnvironmentOrExit, RedisUrlSchema, jsonVariable, MillisecondsSchema, LongMillisecondsSchema } from './config.ts';
export type { ListenSetting } from './config.ts';
export { exitOnSignals } from './shutdown.ts';
export type { ShutdownOptions } from './shutdown.ts';
