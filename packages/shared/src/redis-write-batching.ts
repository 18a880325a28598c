/**
 * One socket write per event-loop turn on a connection that is not auto-pipelined: BullMQ's connections (a
 * producer's queue connection, a fleet's worker connection) and the change subscriber's.
 *
 * Why: ioredis writes every command to its socket as it is sent, and every socket write is a system call. On
 * loopback and on a busy host that call is the most expensive part of a command for both ends (the sender runs the
 * TCP stack for the receiver as well, and redis-server reads once per write): with BullMQ's commands and the
 * change subscriber's SUBSCRIBE / UNSUBSCRIBE written one by one, a producer made about three writes per
 * delegation. Auto-pipelining (ioredis) batches the same way but is not an option on these connections: an
 * auto-pipelined client copies every script it has defined onto each batch (BullMQ defines about 70), and a
 * subscriber connection refuses it.
 *
 * What: the first command written in a turn corks the socket (`socket.cork()`), and a `process.nextTick` callback
 * uncorks it once the turn's JavaScript, promise continuations included, has run: the commands of one turn leave
 * in one `writev`. Nothing else changes: every command is written, in the order it was sent, within the same turn
 * (before any I/O callback or timer runs); replies, errors, timeouts and blocking commands are ioredis' as before.
 * ioredis' own auto-pipelining flushes in a `process.nextTick` callback the same way.
 */
import { Cluster, type Redis } from 'ioredis';
import type { Socket } from 'node:net';

/** Clients whose `sendCommand` already corks. */
const batched = new WeakSet<Redis>();

/**
 * Makes `client` write the commands sent in one event-loop turn with one socket write (see the module header). A
 * Cluster: each of its node connections, those it opens later included. Idempotent; returns `client`.
 */
export function batchWritesPerTurn<T extends Redis | Cluster>(client: T): T {
  if (client instanceof Cluster) {
    for (const node of client.nodes('all')) batchNode(node);
    client.on('+node', (node: Redis) => batchNode(node));
    return client;
  }
  batchNode(client as Redis);
  return client;
}

function batchNode(client: Redis): void {
  if (batched.has(client)) return;
  batched.add(client);
  let corked: Socket | undefined;
  const uncork = () => {
    const socket = corked;
    corked = undefined;
    socket?.uncork();
  };
  const sendCommand = client.sendCommand.bind(client);
  client.sendCommand = ((...args: Parameters<Redis['sendCommand']>) => {
    const socket = client.stream as Socket | undefined;
    // Only a socket that takes writes now: a command queued offline is written by ioredis later, uncorked.
    if (!corked && socket && client.status === 'ready' && socket.writable) {
      corked = socket;
      socket.cork();
      process.nextTick(uncork);
    }
    return sendCommand(...args);
  }) as Redis['sendCommand'];
}
