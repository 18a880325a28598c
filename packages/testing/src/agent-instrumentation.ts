/**
 * Instrumentation around the SDK server: counting A2A calls per method and
 * cutting SSE responses mid-stream.
 */
import type { NextFunction, Request, Response } from 'express';
import type { A2ARequestHandler } from '@a2a-js/sdk/server';

/** A2A method names (JSON-RPC = gRPC names, protocol digest §1); REST routes count under the same names. */
export type A2AMethod =
  | 'SendMessage'
  | 'SendStreamingMessage'
  | 'GetTask'
  | 'ListTasks'
  | 'CancelTask'
  | 'SubscribeToTask'
  | 'CreateTaskPushNotificationConfig'
  | 'GetTaskPushNotificationConfig'
  | 'ListTaskPushNotificationConfigs'
  | 'DeleteTaskPushNotificationConfig'
  | 'GetExtendedAgentCard';

/** SDK request-handler method → A2A method. `getAgentCard` is left out: the SDK calls it on every request. */
const HANDLER_METHODS: Readonly<Record<string, A2AMethod>> = {
  sendMessage: 'SendMessage',
  sendMessageStream: 'SendStreamingMessage',
  getTask: 'GetTask',
  listTasks: 'ListTasks',
  cancelTask: 'CancelTask',
  resubscribe: 'SubscribeToTask',
  createTaskPushNotificationConfig: 'CreateTaskPushNotificationConfig',
  getTaskPushNotificationConfig: 'GetTaskPushNotificationConfig',
  listTaskPushNotificationConfigs: 'ListTaskPushNotificationConfigs',
  deleteTaskPushNotificationConfig: 'DeleteTaskPushNotificationConfig',
  getAuthenticatedExtendedAgentCard: 'GetExtendedAgentCard',
};

/**
 * Wraps a request handler so every A2A call is reported to `onCall` before it
 * runs, whichever binding (JSON-RPC or REST) it came through, and whether or
 * not it then fails. Calls the handler makes on itself are not counted.
 */
export function countingRequestHandler<T extends A2ARequestHandler>(handler: T, onCall: (method: A2AMethod) => void): T {
  return new Proxy(handler, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver);
      if (typeof value !== 'function') return value;
      const method = typeof property === 'string' ? HANDLER_METHODS[property] : undefined;
      return (...args: unknown[]) => {
        if (method) onCall(method);
        return (value as (...callArgs: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}

/**
 * Express middleware that destroys the socket of an SSE response once
 * `limit()` `data:` events have been flushed (0 = right after the headers),
 * with no chunked-encoding terminator, as a dropped connection would. The
 * limit is read when the request arrives; undefined = leave it alone.
 * Relies on the SDK writing one whole SSE event per `res.write` call.
 */
export function streamDropper(limit: () => number | undefined, onDrop: () => void) {
  return (_request: Request, response: Response, next: NextFunction): void => {
    const eventsAllowed = limit();
    if (eventsAllowed === undefined) return next();
    let written = 0;
    let dropped = false;
    const originalWrite = response.write.bind(response) as (chunk: unknown, callback?: () => void) => boolean;
    const drop = (): void => {
      onDrop();
      response.socket?.destroy();
    };
    response.write = ((chunk: unknown, ...rest: unknown[]): boolean => {
      if (dropped) return true;
      const isStream = String(response.getHeader('content-type') ?? '').startsWith('text/event-stream');
      const isDataEvent = isStream && chunkText(chunk).startsWith('data:');
      if (!isDataEvent) return (originalWrite as (...args: unknown[]) => boolean)(chunk, ...rest);
      if (written >= eventsAllowed) {
        dropped = true;
        drop();
        return true;
      }
      written++;
      if (written < eventsAllowed) return (originalWrite as (...args: unknown[]) => boolean)(chunk, ...rest);
      dropped = true;
      // Destroy only once this last event has reached the socket, so the client sees it.
      return originalWrite(chunk, drop);
    }) as Response['write'];
    next();
  };
}

function chunkText(chunk: unknown): string {
  if (typeof chunk === 'string') return chunk;
  if (chunk instanceof Uint8Array) return Buffer.from(chunk).toString('utf8', 0, Math.min(chunk.length, 16));
  return '';
}
