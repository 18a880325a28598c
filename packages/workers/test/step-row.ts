/**
 * A step's delegation row for the pure core's property tests: our messageId `M-ours`, the context we sent `C-ours`,
 * sent (marked) and not yet bound, version 7 under fence 2; `extra` replaces or adds fields.
 */
import type { DelegationRecord } from '@durable-a2a/shared';

export const stepRow = (extra: Record<string, unknown> = {}): DelegationRecord =>
  ({
    workflowId: 'wf',
    delegationId: 'main.1',
    step: 'main',
    kind: 'step',
    messageId: 'M-ours',
    requestedContextId: 'C-ours',
    contextRefused: false,
    state: 'INTENT',
    message: { parts: [{ text: 'book' }] },
    createdAt: 4_000_000,
    sendStartedAt: 4_900_000,
    resendCount: 0,
    version: 7,
    fence: 2,
    ...extra,
  }) as unknown as DelegationRecord;
