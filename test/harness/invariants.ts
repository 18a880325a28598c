/**
 * The end-of-run invariants shared by the crash-point, scale-out, cluster and
 * chaos tests: every workflow finished (or NEEDS_ATTENTION with a reason), no
 * SendMessage delivered twice where the agent still had the task, no
 * compensation run twice, nothing left in the unfinished index but parked
 * records.
 */
import type { Producer, WorkflowView } from '@durable-a2a/producer';
import { parseIndexMember } from '@durable-a2a/shared';
import type { DemoAgentHandle } from './agent.ts';

/** Workflow states that end a workflow for good. */
export const FINISHED_WORKFLOW_STATES: ReadonlySet<string> = new Set(['COMPLETED', 'FAILED', 'COMPENSATED', 'CANCELED']);

/** Finished, or handed to a person with a reason. */
export const isSettled = (view: WorkflowView): boolean =>
  FINISHED_WORKFLOW_STATES.has(view.state) || (view.state === 'NEEDS_ATTENTION' && Boolean(view.attention));

/** Answers every open question of a workflow (the hotel's "two rooms or one?"). */
export async function answerQuestions(producer: Producer, view: WorkflowView, answer = 'two'): Promise<number> {
  let answered = 0;
  for (const question of view.openQuestions) {
    try {
      await producer.reply(view.workflowId, answer, question.step);
      answered++;
    } catch (error) {
      // Answered meanwhile, or the question moved on: the next poll decides again.
      if (!/NO_OPEN_QUESTION|no open question/i.test(String((error as { code?: string }).code ?? error))) throw error;
    }
  }
  return answered;
}

/** Polls a workflow, answering its questions, until it is settled; returns its last view. */
export async function settleWorkflow(producer: Producer, workflowId: string, timeoutMs = 40_000, answer = 'two'): Promise<WorkflowView> {
  const deadline = Date.now() + timeoutMs;
  let last: WorkflowView | undefined;
  for (;;) {
    try {
      last = await producer.get(workflowId);
      if (isSettled(last)) return last;
      await answerQuestions(producer, last, answer);
    } catch (error) {
      // Redis restarting (chaos): ask again.
      if (Date.now() > deadline) throw error;
    }
    if (Date.now() > deadline) throw new Error(`workflow ${workflowId} not settled in ${timeoutMs} ms: ${last ? `${last.state} ${JSON.stringify(summary(last))}` : 'never read'}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** One message we journaled for delivery to an agent: a delegation's message or its reply. */
export interface Delivery {
  workflowId: string;
  delegationId: string;
  kind: 'message' | 'reply';
  messageId: string;
  agentCardUrl: string;
  state: string;
}

/** Every message of every attempt and compensation of a workflow. */
export function deliveriesOf(view: WorkflowView): Delivery[] {
  const deliveries: Delivery[] = [];
  for (const step of view.steps) {
    for (const attempt of [...step.attempts, ...step.compensations]) {
      const base = { workflowId: view.workflowId, delegationId: attempt.delegationId, agentCardUrl: attempt.agentCardUrl, state: attempt.state };
      deliveries.push({ ...base, kind: 'message', messageId: attempt.messageId });
      if (attempt.replyMessageId) deliveries.push({ ...base, kind: 'reply', messageId: attempt.replyMessageId });
    }
  }
  return deliveries;
}

/**
 * Deliveries an agent executed more than once. `legitimate` may excuse one
 * (e.g. the agent forgot its tasks in between, so reconciliation could not
 * find it); by default nothing is excused.
 */
export function duplicateDeliveries(
  deliveries: Delivery[],
  agents: readonly DemoAgentHandle[],
  legitimate: (delivery: Delivery, agent: DemoAgentHandle) => boolean = () => false,
): string[] {
  const byCard = new Map(agents.map((agent) => [agent.cardUrl, agent]));
  const problems: string[] = [];
  for (const delivery of deliveries) {
    const agent = byCard.get(delivery.agentCardUrl);
    if (!agent) continue;
    const count = agent.sendMessageCount(delivery.messageId);
    if (count > 1 && !legitimate(delivery, agent)) {
      problems.push(`${delivery.workflowId}/${delivery.delegationId} ${delivery.kind} ${delivery.messageId} executed ${count} times by ${delivery.agentCardUrl}`);
    }
  }
  return problems;
}

/** Entries of the unfinished index that are not parked questions (optionally only for some workflows). */
export async function stuckIndexEntries(producer: Producer, workflowIds?: ReadonlySet<string>): Promise<string[]> {
  const members = await producer.journal.redis.zrange(producer.journal.keys.unfinished(), 0, -1);
  const stuck: string[] = [];
  for (const member of members) {
    const ref = parseIndexMember(member);
    if (workflowIds && !workflowIds.has(ref.workflowId)) continue;
    if (ref.delegationId !== '*') {
      const record = await producer.journal.getDelegation(ref);
      if (record && (record.state === 'INPUT_REQUIRED' || record.state === 'AUTH_REQUIRED')) continue;
      stuck.push(`${member} (${record?.state ?? 'missing'})`);
    } else {
      const workflow = await producer.journal.getWorkflowHash(ref.workflowId);
      // Handed to a person: the workflow stays indexed until someone decides (parked, like a question).
      if (workflow?.state === 'NEEDS_ATTENTION' && workflow.attention) continue;
      stuck.push(`${member} (workflow ${workflow?.state ?? 'missing'})`);
    }
  }
  return stuck;
}

/** A compact picture of a workflow for failure messages. */
export function summary(view: WorkflowView): Record<string, string[]> {
  return Object.fromEntries(
    view.steps.map((step) => [
      step.name,
      [...step.attempts, ...step.compensations].map((attempt) => `${attempt.delegationId}:${attempt.state}${attempt.effect ? `/${attempt.effect}` : ''}`),
    ]),
  );
}
