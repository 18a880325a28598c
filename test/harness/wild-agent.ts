/**
 * What the tests against independently written A2A servers (VoltAgent, Mastra) share: the agent started
 * once per file with its card read and the transport it leads to, a user message with a chosen
 * messageId, and the text of parts.
 */
import { afterAll, beforeAll, expect } from 'vitest';
import { type A2ATransport, createTransport, defaultTransports, fetchAgentCard, selectInterface } from '@durable-a2a/a2a';

/** A started agent: where its card and its JSON-RPC endpoint are, and how to stop it. */
export interface WildAgentHandle {
  cardUrl: string;
  rpcUrl: string;
  close(): Promise<void>;
}

/**
 * Starts the agent before the file's tests (up to 90 s) and closes it after them. Its card must lead to
 * one interface: JSON-RPC, A2A 0.3, at `rpcUrl`; `onStarted` receives the agent and that transport.
 */
export function useWildAgent<Handle extends WildAgentHandle>(start: () => Promise<Handle>, onStarted: (started: { agent: Handle; transport: A2ATransport }) => void): void {
  let agent: Handle | undefined;
  beforeAll(async () => {
    agent = await start();
    const agentInterface = selectInterface(await fetchAgentCard(agent.cardUrl), { transports: defaultTransports });
    expect(agentInterface).toEqual({ url: agent.rpcUrl, protocolBinding: 'JSONRPC', protocolVersion: '0.3' });
    onStarted({ agent, transport: createTransport(agentInterface!) });
  }, 90_000);
  afterAll(async () => agent?.close());
}

/** A user message with `messageId` and the context `ctx-<messageId>`. */
export const wildMessage = (text: string, messageId: string) => ({ messageId, contextId: `ctx-${messageId}`, role: 'ROLE_USER' as const, parts: [{ text }] });

/** The text parts, joined. */
export const textOf = (parts: readonly { text?: string }[] | undefined): string => (parts ?? []).map((part) => part.text ?? '').join('');
