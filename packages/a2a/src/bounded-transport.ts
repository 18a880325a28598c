/**
 * The part-count limit on every answer of a transport (`limits.ts` `partsPerMessage`; RT7 kind).
 * Byte and depth limits are enforced while reading (`http.ts`, `sse.ts`); this one needs the parsed
 * model, so it wraps the transport: every Task, Message and stream event it returns is checked.
 */
import { checkResponseParts, checkTaskParts } from './limits.ts';
import type { A2ATransport, EventStream } from './transport.ts';

async function* checkedStream(inner: EventStream, maxParts: number): EventStream {
  try {
    for (;;) {
      const next = await inner.next();
      if (next.done) return next.value;
      checkResponseParts(next.value.response, maxParts);
      yield next.value;
    }
  } finally {
    await inner.return({ kind: 'incomplete', eventCount: 0 }).catch(() => undefined);
  }
}

/**
 * `transport` with every answer held to `maxParts` parts per message or artifact; over it, the call
 * (or the stream's iteration) throws `LimitExceededError('partsPerMessage')`. Other methods pass through.
 */
export function withPartLimit(transport: A2ATransport, maxParts: number): A2ATransport {
  const bounded: A2ATransport = Object.create(transport) as A2ATransport;
  return Object.assign(bounded, {
    sendMessage: async (...args: Parameters<A2ATransport['sendMessage']>) => {
      const response = await transport.sendMessage(...args);
      checkResponseParts(response, maxParts);
      return response;
    },
    sendStreamingMessage: (...args: Parameters<A2ATransport['sendStreamingMessage']>) => checkedStream(transport.sendStreamingMessage(...args), maxParts),
    subscribeToTask: (...args: Parameters<A2ATransport['subscribeToTask']>) => checkedStream(transport.subscribeToTask(...args), maxParts),
    getTask: async (...args: Parameters<A2ATransport['getTask']>) => {
      const task = await transport.getTask(...args);
      checkTaskParts(task, maxParts);
      return task;
    },
    cancelTask: async (...args: Parameters<A2ATransport['cancelTask']>) => {
      const task = await transport.cancelTask(...args);
      checkTaskParts(task, maxParts);
      return task;
    },
    listTasks: async (...args: Parameters<A2ATransport['listTasks']>) => {
      const page = await transport.listTasks(...args);
      for (const task of page.tasks) checkTaskParts(task, maxParts);
      return page;
    },
  });
}
