/**
 * Every Redis key durable-a2a writes comes from here. A workflow's keys share
 * the hash tag `{wf:<workflowId>}`, so one Lua script can touch all of them and
 * they live in one Redis Cluster slot. The unfinished index is global and is
 * never touched inside a workflow's script (it would cross slots); it is kept
 * "add before create, remove after finish", so a stale entry is harmless and a
 * missing one cannot happen.
 */

import { hash } from 'node:crypto';

/** Ids we accept for workflows, steps, delegations and idempotency keys: safe in keys and BullMQ job ids. */
export const ID_PATTERN = /^[A-Za-z0-9._-]{1,128}$/;

/**
 * The longest task id a reconcile job names as a suspect (`suspectTaskId`) and the journal keeps pending: a task id is
 * the agent's, of any length; one longer than this is not carried (the job and the row stay small) but counted as
 * evidence lost (`suspectsLost` in the row, noteSuspect-1.lua): the reconciler then leaves the row to a person.
 */
export const SUSPECT_TASK_ID_MAX = 1_024;

/**
 * The most suspects one delegation keeps waiting to be read (noteSuspect-1.lua): a queue the reconciler drains,
 * `SUSPECT_READS_PER_JOB` a job, one job a second while any wait. Bounded so that a flood of foreign pushes cannot grow
 * the row past about 32 KiB (32 ids of at most `SUSPECT_TASK_ID_MAX` characters); an id arriving while this many wait
 * is counted as evidence lost (`suspectsLost`), not kept, and the reconciler leaves the row to a person.
 */
export const SUSPECTS_PENDING_MAX = 32;

/**
 * The most suspects one reconcile job reads (GetTask calls): a flood of foreign pushes is at most this many GetTask
 * calls a second for one delegation; what is left waits for the next second's job.
 */
export const SUSPECT_READS_PER_JOB = 8;

/**
 * The most earlier protocol errors a delegation row keeps beside its latest one (`earlierProtocolErrors`,
 * lua/includes/protocolErrors.lua): the first ones, so the first evidence of an agent's misbehaviour (a FOREIGN_TASK)
 * is never hidden by a later note (a DUPLICATE_TASK); past it they are counted (`protocolErrorCount`). Each error is
 * our own short text naming task ids, so the row stays within a few KiB.
 */
export const EARLIER_PROTOCOL_ERRORS_MAX = 4;

/** Default key prefix. */
export const DEFAULT_PREFIX = 'da2a';

export interface JournalKeys {
  /** Workflow hash: definition, state, step cursor. */
  workflow(workflowId: string): string;
  /** Delegation hash: one attempt of one step. */
  delegation(workflowId: string, delegationId: string): string;
  /** Artifacts of a delegation: hash artifactId → JSON. */
  artifacts(workflowId: string, delegationId: string): string;
  /** Per-delegation lease held while a follow stream is open (prevents double subscriptions). */
  followLease(workflowId: string, delegationId: string): string;
  /** List of a workflow's delegation ids, in creation order. */
  delegationList(workflowId: string): string;
  /** A workflow's history: list of JSON entries, oldest first, bounded (history.ts; lua/includes/history.lua). */
  history(workflowId: string): string;
  /**
   * A workflow's answer index: hash reply messageId → `<content digest> <delegationId> <questionKey>`, one field per
   * answer journaled (recordReply-2.lua, answerByLink-2.lua, expireQuestion-2.lua's default answer; lua/includes/
   * answerIndex.lua; at most `ANSWERS_PER_WORKFLOW_MAX`); kept beside the compacted record and
   * expiring with the workflow (lua/includes/compaction.lua).
   */
  answers(workflowId: string): string;
  /** A finished workflow's compacted record, replacing the keys above (string, JSON; compacted-record.ts). */
  finished(workflowId: string): string;
  /** A compacted workflow's push tokens (hash delegationId → token), beside its record: pushes are authenticated without it. */
  finishedPushTokens(workflowId: string): string;
  /** Notification events of a workflow and how far each got: hash event id → JSON (recordNotification-1.lua). */
  notifications(workflowId: string): string;
  /** Push notification configs of a front-door task: hash config id → JSON (writeFrontPushConfig-1.lua). */
  frontPushConfigs(workflowId: string): string;
  /** A "do this at most once" marker of a delegation (e.g. `cancel-sent`, `auth:<challenge>`). */
  once(workflowId: string, delegationId: string, name: string): string;
  /** Fleet-wide rate limit state (takeToken-1.lua). */
  rateLimit(name: string): string;
  /** Sorted set of unfinished delegations, member `workflowId|delegationId`, score = next check time (ms). */
  unfinished(): string;
  /**
   * Set of workflow ids, for listing, written by releases before the search index (kept to read what they wrote;
   * nothing writes it any more).
   */
  workflows(): string;
  /** The search index: lexicographic sorted set of workflow ids and metadata pairs (search-index.ts). */
  search(): string;
  /** Sorted set of workflow ids by the time of their last workflow-level change, ms (search-index.ts). */
  updated(): string;
  /**
   * A tenant's own listing: sorted set of its workflow ids by creation time, ms (search-index.ts). Written for tenants
   * other than `default` (whose workflows from before tenants it could not hold).
   */
  tenantCreated(tenant: string): string;
  /** Agent registry hash (normalized card URL, `normalizeAgentCardUrl` → registered agent JSON; registry.ts). */
  agents(): string;
  /** The registry's health of each agent: hash normalized card URL → JSON (recordAgentCall-1.lua). */
  agentHealth(): string;
  /** Agents an operator disabled: hash normalized card URL → JSON `{ since, reason? }`. */
  agentsDisabled(): string;
  /** Which delegation an agent's task id is bound to (`workflowId|delegationId`); one key per agent and task. */
  taskOwner(agentCardUrl: string, taskId: string): string;
  /**
   * A tenant's quota sets (createWorkflow-11.lua): workflow ids scored by creation time (ms) or by the last full
   * check that found them still there (createWorkflow-11.lua), `inFlight` until the workflow finishes, `stored` until its records are gone. Written only for a tenant with a quota.
   */
  tenantQuota(tenant: string): { inFlight: string; stored: string };
  /** The readiness probe's short-lived key (string `1` with a TTL; `Journal.probeWrites`). */
  writeProbe(): string;
  /**
   * A worker process's liveness key (string `1`, TTL `livenessTtlMs`, set again every third of it: heartbeat-2.lua).
   * Gone = the worker is presumed dead and its leases may be taken at once. Shares the `{fleet}` hash tag with
   * `fleetWorkers`, so one script reaches both on a Cluster.
   */
  workerLiveness(workerId: string): string;
  /** The fleet's roster: sorted set of worker ids by their last heartbeat (ms, Redis's clock; heartbeat-2.lua). */
  fleetWorkers(): string;
  /**
   * An agent's fleet-wide flow control (agentFlow-2.lua), by its normalized card URL: `slots` (sorted set of slot
   * holders scored by lease end, ms) and `state` (hash: pausedUntil, nextSend, nextResubscribe). Hash-tagged by a
   * digest of the card URL, so one script reaches both on a Cluster.
   */
  agentFlow(agentCardUrl: string): { slots: string; state: string };
  /**
   * The send queue's fairness between tenants (sendOrder-2.lua): `clock` (hash: the virtual clock's `v` and `ms`,
   * and `t:<tenant>` → `<place>:<sends>`, the tenant's last place and its sends at it) and `weights` (hash tenant →
   * weight, written by the registry). One hash tag: one script reaches them all on a Cluster. (`…:counts`, the
   * windows' counts of an earlier release, is no longer read or written; it expires by itself.)
   */
  sendOrder(): { clock: string; weights: string };
}

/** Builds the key layout for one prefix (default `da2a`). */
export function journalKeys(prefix: string = DEFAULT_PREFIX): JournalKeys {
  const tag = (workflowId: string) => `${prefix}:{wf:${workflowId}}`;
  return {
    workflow: (workflowId) => `${tag(workflowId)}:wf`,
    delegation: (workflowId, delegationId) => `${tag(workflowId)}:d:${delegationId}`,
    artifacts: (workflowId, delegationId) => `${tag(workflowId)}:d:${delegationId}:artifacts`,
    followLease: (workflowId, delegationId) => `${tag(workflowId)}:d:${delegationId}:lease`,
    delegationList: (workflowId) => `${tag(workflowId)}:wf:delegations`,
    history: (workflowId) => `${tag(workflowId)}:history`,
    answers: (workflowId) => `${tag(workflowId)}:answers`,
    finished: (workflowId) => `${tag(workflowId)}:done`,
    finishedPushTokens: (workflowId) => `${tag(workflowId)}:push`,
    notifications: (workflowId) => `${tag(workflowId)}:notify`,
    frontPushConfigs: (workflowId) => `${tag(workflowId)}:front-push`,
    once: (workflowId, delegationId, name) => `${tag(workflowId)}:d:${delegationId}:${name}`,
    rateLimit: (name) => `${prefix}:unfinished:rate:${name}`,
    unfinished: () => `${prefix}:unfinished`,
    workflows: () => `${prefix}:workflows`,
    search: () => `${prefix}:search`,
    updated: () => `${prefix}:updated`,
    tenantCreated: (tenant) => `${prefix}:tenant:${tenant}:created`,
    agents: () => `${prefix}:agents`,
    agentHealth: () => `${prefix}:agents:health`,
    agentsDisabled: () => `${prefix}:agents:disabled`,
    // Agents choose task ids (any length, any characters): the key holds a digest (one-shot `hash`: the same hex
    // digest as a Hash object fed the same text, without the object).
    taskOwner: (agentCardUrl, taskId) => `${prefix}:task:${hash('sha256', `${agentCardUrl}\n${taskId}`, 'hex')}`,
    tenantQuota: (tenant) => ({ inFlight: `${prefix}:tenant:${tenant}:in-flight`, stored: `${prefix}:tenant:${tenant}:stored` }),
    writeProbe: () => `${prefix}:write-probe`,
    workerLiveness: (workerId) => `${prefix}:{fleet}:live:${workerId}`,
    fleetWorkers: () => `${prefix}:{fleet}:workers`,
    agentFlow: (agentCardUrl) => {
      const tagged = `${prefix}:agents:flow:{${hash('sha256', agentCardUrl, 'hex').slice(0, 32)}}`;
      return { slots: `${tagged}:slots`, state: `${tagged}:state` };
    },
    sendOrder: () => ({ clock: `${prefix}:{send-order}:clock`, weights: `${prefix}:{send-order}:weights` }),
  };
}

/** Index member for a delegation. Ids never contain `|` (see ID_PATTERN). */
export const indexMember = (workflowId: string, delegationId: string): string => `${workflowId}|${delegationId}`;

/** Inverse of `indexMember`. */
export function parseIndexMember(member: string): { workflowId: string; delegationId: string } {
  const separator = member.indexOf('|');
  return { workflowId: member.slice(0, separator), delegationId: member.slice(separator + 1) };
}
