/** Moved to @durable-a2a/testing; re-exported so existing imports keep working. */
export { closeServer, findFreePort, listenOnLoopback, trackSockets } from '@durable-a2a/testing';
