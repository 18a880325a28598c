/**
 * Property (kind: an answer over a limit is never read as "nothing happened"): a push body naming an identifier over
 * `WIRE_ID_BYTES_MAX` at any id place (a Task's id or context id, a status update's task id, an artifact id, a message
 * id; 1.0 and 0.3 shapes; a long `…Id` in free-form metadata is no id and reads as before) is unreadable by `normalizePushBody` (never journaled whole or cut) and
 * recognised by `pushBodyNamesOverLongId`, so the webhook journals it as over a limit (a refused part of the result, or
 * a suspect too long to keep: routes/push.ts `refusedOverLongId`) instead of dropping it; the task id it names is read
 * by `pushedTaskIdOf` without validation. The same bodies with every id within the bound read as they did.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { WIRE_ID_BYTES_MAX, normalizePushBody, pushBodyNamesOverLongId, pushedTaskIdOf } from '../src/index.ts';

type Place = 'task id' | 'context id' | 'artifact id' | 'message id' | 'metadata' | 'none';
const PLACES: Place[] = ['task id', 'context id', 'artifact id', 'message id', 'metadata', 'none'];
type Shape = '1.0 task' | '1.0 statusUpdate' | '1.0 artifactUpdate' | '0.3 task' | '0.3 status-update';
const SHAPES: Shape[] = ['1.0 task', '1.0 statusUpdate', '1.0 artifactUpdate', '0.3 task', '0.3 status-update'];

/** A push body of `shape` with the id at `place` replaced by `long` (the other ids short). */
function bodyOf(shape: Shape, place: Place, long: string): unknown {
  const id = (at: Place, short: string) => (place === at ? long : short);
  const message = (v03: boolean) => ({ ...(v03 ? { kind: 'message', role: 'agent' } : { role: 'ROLE_AGENT' }), messageId: id('message id', 'M1'), metadata: { requestId: id('metadata', 'R1') }, parts: [v03 ? { kind: 'text', text: 'ok' } : { text: 'ok' }] });
  const artifact = (v03: boolean) => ({ artifactId: id('artifact id', 'a1'), parts: [v03 ? { kind: 'text', text: 'booked' } : { text: 'booked' }] });
  switch (shape) {
    case '1.0 task':
      return { task: { id: id('task id', 'T1'), contextId: id('context id', 'C1'), status: { state: 'TASK_STATE_COMPLETED', message: message(false) }, artifacts: [artifact(false)] } };
    case '1.0 statusUpdate':
      return { statusUpdate: { taskId: id('task id', 'T1'), contextId: id('context id', 'C1'), status: { state: 'TASK_STATE_WORKING', message: message(false) } } };
    case '1.0 artifactUpdate':
      return { artifactUpdate: { taskId: id('task id', 'T1'), contextId: id('context id', 'C1'), artifact: { ...artifact(false), metadata: { userId: id('metadata', 'U1') } } } };
    case '0.3 task':
      return { kind: 'task', id: id('task id', 'T1'), contextId: id('context id', 'C1'), status: { state: 'completed', message: message(true) }, artifacts: [artifact(true)] };
    case '0.3 status-update':
      return { kind: 'status-update', taskId: id('task id', 'T1'), contextId: id('context id', 'C1'), final: false, status: { state: 'working', message: message(true) } };
  }
}

/** Whether `place` is an id place `shape` carries (metadata is free-form, no id; an artifact update carries no message; a status update no artifact). */
const carries = (shape: Shape, place: Place) =>
  place !== 'none' &&
  place !== 'metadata' &&
  !(shape === '1.0 artifactUpdate' && place === 'message id') &&
  !(shape.endsWith('tatusUpdate') || shape.endsWith('status-update') ? place === 'artifact id' : false);

describe('property: an id over the wire bound in a push is over a limit, recognised, never read', () => {
  it('shape × id place × length (in and over the bound, ASCII or 3-byte characters): unreadable and recognised exactly when over', () => {
    fc.assert(
      fc.property(fc.constantFrom(...SHAPES), fc.constantFrom(...PLACES), fc.integer({ min: -3, max: 600 }), fc.constantFrom('x', '€'), (shape, place, extra, unit) => {
        const bytesPerUnit = unit === 'x' ? 1 : 3;
        const units = Math.max(1, Math.floor(WIRE_ID_BYTES_MAX / bytesPerUnit) + extra);
        const long = unit.repeat(units);
        const over = carries(shape, place) && units * bytesPerUnit > WIRE_ID_BYTES_MAX;
        const body = bodyOf(shape, place, long);
        const what = `${shape} ${place} ${units} × ${unit}`;
        expect(pushBodyNamesOverLongId(body), what).toBe(over);
        // A status message is informational (A37): one naming an over-long message id is dropped, the answer read.
        if (over && place !== 'message id') expect(() => normalizePushBody(body), what).toThrow();
        else expect(() => normalizePushBody(body), what).not.toThrow();
        expect(pushedTaskIdOf(body), what).toBe(place === 'task id' ? long : 'T1');
      }),
      { numRuns: 300, examples: [['1.0 task', 'task id', 1, 'x'], ['1.0 task', 'task id', 0, 'x'], ['0.3 task', 'context id', 1, 'x'], ['1.0 artifactUpdate', 'artifact id', 1, '€'], ['1.0 artifactUpdate', 'metadata', 300, 'x'], ['1.0 task', 'metadata', 5, 'x']] },
    );
  });
});
