/**
 * A delegation's push notification config life cycle (A2A §4.3.3, §9; docs/http-api.md "Push notifications"). A side duty
 * of the executor, not a transition: nothing the delegation decides reads it, and polling stays the backstop
 * whatever push does (an agent that drops configs, refuses Create, errors on List or never pushes).
 *
 * - **Register** (after a step's write, `apply.ts`): once the task is bound, for a step that asked for push, with
 *   a webhook URL, at an agent whose card declares `capabilities.pushNotifications`: one List looks for ours
 *   (SendMessage carried it inline). Found: its id is journaled (`registered`). Absent: our deterministic config
 *   id is journaled (`creating`) BEFORE one Create with it and the token journaled with the intent; the id the
 *   agent answers is journaled and used from then on. A worker that restarts in `creating` checks again and its
 *   Create is an upsert under the same id with the same token, never a second config. A List that fails journals
 *   `unconfirmed` (no Create without proof of absence: the inline config may be there); a refused Create
 *   `refused`; a Create without answer `unconfirmed`.
 * - **Delete** (when the row is finished, `settle.ts`): exactly one Delete, claimed in the journal first
 *   (compare-and-set to `deleted`, fleet-wide), unless a refused Create proved nothing was registered. An empty
 *   answer or not-found is done; any other failure is logged and left (agents drop configs with their tasks).
 *
 * Only `apply.ts` and `settle.ts` call this module; it never throws (a failure is logged: the delegation goes on).
 */
import { isFinished, type DelegationRecord, type PushConfigState } from '@durable-a2a/shared';
import type { WorkerContext } from '../context.ts';
import { createPushConfig, deletePushConfig, findPushConfig, wantedPushConfig, type WantedPushConfig } from './io/push-config.ts';

type Log = WorkerContext['logger'];

/** Whether `record` still needs its registration checked (no I/O: read on every step's write). */
export function wantsPushRegistration(ctx: WorkerContext, record: DelegationRecord): boolean {
  if (!record.push || !ctx.options.webhookUrl || record.taskId === undefined || isFinished(record.state)) return false;
  return record.pushConfigState === undefined || record.pushConfigState === 'creating';
}

/** The agent's card declares push notifications (spec §3.3.4: else the config methods answer -32003). */
async function declaresPush(ctx: WorkerContext, record: DelegationRecord): Promise<boolean> {
  return ctx.agents.card(record.agentCardUrl).then(
    (card) => card.capabilities.pushNotifications === true,
    () => false,
  );
}

/** The config this delegation wants at the agent (its task bound), with the journaled token; undefined without one. */
async function wanted(ctx: WorkerContext, record: DelegationRecord & { taskId: string }): Promise<WantedPushConfig | undefined> {
  const token = await ctx.journal.pushToken(record);
  if (!token || !ctx.options.webhookUrl) return undefined;
  const config = wantedPushConfig(ctx.options.webhookUrl, record, token);
  return { ...config, taskId: record.taskId, id: record.pushConfigId ?? config.id };
}

/** What a registration journaled: the row's push config fields as they are now. */
export type PushConfigFields = Pick<DelegationRecord, 'pushConfigState' | 'pushConfigId'>;

/**
 * Checks the registration once and creates it when absent (module header). Call only when `wantsPushRegistration`.
 * @returns the fields it journaled (the caller's row is then up to date), else undefined
 */
export async function registerPushConfig(ctx: WorkerContext, record: DelegationRecord, log: Log = ctx.logger): Promise<PushConfigFields | undefined> {
  const ref = { workflowId: record.workflowId, delegationId: record.delegationId };
  const taskId = record.taskId;
  try {
    if (taskId === undefined || !(await declaresPush(ctx, record))) return undefined;
    const config = await wanted(ctx, { ...record, taskId });
    if (!config) return;
    const from: PushConfigState | undefined = record.pushConfigState;
    const transport = await ctx.agents.transportFor(record);
    const listed = await findPushConfig(transport, config);
    const note = async (to: PushConfigState, id: string, expected = from): Promise<PushConfigFields | undefined> =>
      (await ctx.journal.notePushConfig(ref, expected, to, id)) ? { pushConfigState: to, pushConfigId: id } : undefined;
    if (listed.kind === 'found') return await note('registered', listed.id);
    if (listed.kind === 'unknown') {
      log.warn({ ...ref, taskId, code: listed.code }, 'listing the push configs failed; not registering without proof of absence (polling stays the backstop)');
      return await note('unconfirmed', config.id);
    }
    // Journal first: our id is written before Create leaves, so a restart upserts under it.
    if (from === undefined && !(await note('creating', config.id))) return undefined;
    const created = await createPushConfig(transport, config);
    ctx.crashPoint('push.after-create', record.step);
    if (created.kind === 'created') return await note('registered', created.id, 'creating');
    log.warn({ ...ref, taskId, code: created.code }, created.kind === 'refused' ? 'the agent refused our push config (polling stays the backstop)' : 'creating our push config got no answer (polling stays the backstop)');
    return await note(created.kind === 'refused' ? 'refused' : 'unconfirmed', config.id, 'creating');
  } catch (error) {
    log.warn({ ...ref, err: error }, 'push config registration failed (polling stays the backstop)');
    return undefined;
  }
}

/** The one Delete of a finished row's config (module header); nothing for a row without push or already done. */
export async function endPushConfig(ctx: WorkerContext, record: DelegationRecord, log: Log = ctx.logger): Promise<void> {
  if (!record.push || !ctx.options.webhookUrl || record.taskId === undefined || !isFinished(record.state)) return;
  if (record.pushConfigState === 'deleted' || record.pushConfigState === 'refused') return;
  const ref = { workflowId: record.workflowId, delegationId: record.delegationId };
  try {
    if (!(await declaresPush(ctx, record))) return;
    const config = await wanted(ctx, { ...record, taskId: record.taskId });
    if (!config || !(await ctx.journal.notePushConfig(ref, 'any', 'deleted'))) return;
    const deletion = await deletePushConfig(await ctx.agents.transportFor(record), record.taskId, config.id);
    if (deletion.kind === 'failed') log.warn({ ...ref, taskId: record.taskId, configId: config.id, code: deletion.code }, 'deleting our push config failed; left to the agent');
  } catch (error) {
    log.warn({ ...ref, err: error }, 'push config deletion failed; left to the agent');
  }
}
