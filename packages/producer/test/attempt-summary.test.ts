/**
 * An attempt's summary in a view (`summarize`, built field by field in one object) is the summary the spread form
 * built before (below, as it was): the same values, undefined members included, and the same keys in the same order
 * (the view's JSON), on random delegation views of every state.
 */
import { deepStrictEqual } from 'node:assert/strict';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Message } from '@durable-a2a/a2a';
import { isFinished, JOURNAL_STATES, type DelegationView } from '@durable-a2a/shared';
import { instantOf, summarize, type AttemptSummary, type Observed } from '../src/view.ts';

const INSTANTS = ['createdAt', 'updatedAt', 'sendStartedAt', 'firstNotFoundAt', 'noProgressSince', 'finishedAt', 'replySendUntil', 'questionAskedAt', 'questionExpiredAt', 'verifiedAt'] as const;
const textOf = (message?: Message) => message?.parts.map((part) => part.text ?? '').join('') ?? '';

/** The summary as the view built it before: rest and spreads. */
function spreadSummary(view: DelegationView, observed: Observed, workflowState: string, abandoned: boolean, nowMs: number): AttemptSummary {
  const { message: _message, replyMessage: _reply, nextTryAt, unreachableSince, slotWaitUntil: _slotWait, statusTimestampMs: _statusMs, ...row } = view;
  const instants: Record<string, string> = {};
  for (const field of INSTANTS) {
    const ms = row[field];
    if (ms !== undefined) instants[field] = instantOf(ms);
  }
  const rest = { ...row, ...instants };
  const fromArtifacts = view.artifacts.flatMap((artifact) => artifact.parts.map((part) => part.text ?? '')).join('');
  const direct = (view.result as { message?: Message } | undefined)?.message;
  const finalStatus = view.state === 'COMPLETED' ? textOf(view.statusMessage) : '';
  const resultText = fromArtifacts || (direct ? textOf(direct) : '') || finalStatus;
  const finished = isFinished(view.state);
  const waiting = view.state === 'INTENT' && view.taskId === undefined && view.sendStartedAt === undefined;
  const due = (ms?: number) => ms !== undefined && ms > nowMs;
  // The fields the view derives come from `summarize` itself (progress, tries): only the row's copy is the spread form's.
  const derived = summarize(view, observed, workflowState, abandoned, nowMs);
  return {
    ...rest,
    finished,
    ...(resultText ? { resultText } : {}),
    progress: derived.progress,
    tries: view.sendCount + view.unsentTries,
    ...(view.error ? { lastError: view.error } : {}),
    ...(waiting && (due(nextTryAt) || due(view.slotWaitUntil)) ? { nextTryAt: instantOf(nextTryAt!) } : {}),
    ...(!finished && unreachableSince !== undefined && view.state === 'INTENT' ? { unreachableSince: instantOf(unreachableSince) } : {}),
    ...(!finished && observed.nextCheckAt !== undefined ? { nextCheckAt: instantOf(observed.nextCheckAt) } : {}),
    ...(abandoned ? { abandoned: true as const } : {}),
  } as unknown as AttemptSummary;
}

/** What `build` returns, or the message of what it throws (a slot wait without its next try is no time to show). */
function outcome<T>(build: () => T): T | { threw: string } {
  try {
    return build();
  } catch (error) {
    return { threw: String(error) };
  }
}

const NOW = 1_796_440_401_000;
const ms = fc.integer({ min: 0, max: 2 * NOW });
const maybe = <T>(arbitrary: fc.Arbitrary<T>) => fc.option(arbitrary, { nil: undefined });
const text = fc.string({ maxLength: 6 });
const message = fc.record({ messageId: text, role: fc.constant('ROLE_AGENT'), parts: fc.array(fc.record({ text: maybe(text) }, { requiredKeys: [] }), { maxLength: 2 }) });
/** A delegation view: its fields in the record's order, optional ones absent, present as undefined, or set. */
const delegationView = fc
  .record(
    {
      workflowId: text, delegationId: text, step: text, kind: fc.constantFrom('step', 'compensation'), attempt: fc.nat(3), agentCardUrl: text,
      messageId: text, contextId: maybe(text), contextRefused: fc.boolean(), taskId: maybe(text), state: fc.constantFrom(...JOURNAL_STATES),
      statusTimestamp: maybe(text), statusTimestampMs: maybe(ms), question: maybe(message), statusMessage: maybe(message),
      message: fc.record({ parts: fc.array(fc.record({ text }), { minLength: 1, maxLength: 1 }) }),
      result: maybe(fc.oneof(fc.record({ message }), fc.jsonValue({ maxDepth: 1 }))),
      error: maybe(fc.record({ code: fc.constantFrom('AGENT_FAILED', 'UNRECOGNIZED'), message: text })), push: fc.boolean(), held: fc.boolean(),
      createdAt: ms, updatedAt: ms, sendStartedAt: maybe(ms), sendCount: fc.nat(3), unsentTries: fc.nat(3), unreachableSince: maybe(ms), nextTryAt: maybe(ms),
      slotWaitUntil: maybe(ms), version: fc.nat(9), firstNotFoundAt: maybe(ms), noProgressSince: maybe(ms), finishedAt: maybe(ms), replyMessage: maybe(message),
      replySendUntil: maybe(ms), questionKey: maybe(text), replyForQuestion: maybe(text), questionAskedAt: maybe(ms), questionExpiredAt: maybe(ms), verifiedAt: maybe(ms),
      artifacts: fc.array(fc.record({ artifactId: text, parts: fc.array(fc.record({ text: maybe(text) }, { requiredKeys: [] }), { maxLength: 2 }) }), { maxLength: 2 }),
    },
    { requiredKeys: ['workflowId', 'delegationId', 'step', 'kind', 'attempt', 'agentCardUrl', 'messageId', 'contextRefused', 'state', 'message', 'push', 'held', 'createdAt', 'updatedAt', 'sendCount', 'unsentTries', 'version', 'artifacts'] },
  )
  .map((view) => view as unknown as DelegationView);

describe('an attempt summary built in one object', () => {
  it('property: is the spread form, values and key order', () => {
    fc.assert(
      fc.property(delegationView, fc.record({ followed: fc.boolean(), nextCheckAt: maybe(ms) }), fc.constantFrom('RUNNING', 'NEEDS_ATTENTION', 'COMPLETED'), fc.boolean(), (view, observed, workflowState, abandoned) => {
        const summary = outcome(() => summarize(view, observed, workflowState, abandoned, NOW));
        const expected = outcome(() => spreadSummary(view, observed, workflowState, abandoned, NOW));
        // node's deepStrictEqual: vitest's toStrictEqual compares `constructor` properties by identity, so equal objects with an own
        // member named `constructor` (fast-check generates such keys) would differ.
        deepStrictEqual(summary, expected);
        expect(Object.keys(summary)).toEqual(Object.keys(expected));
      }),
      { numRuns: 2_000 },
    );
  });
});
