/**
 * The @a2a-js/sdk server logs expected events (a subscription refused because
 * the task is terminal, every push it sends) straight to the console. The
 * demo agents are ours, so those lines are dropped; everything else passes.
 */
const EXPECTED = [/^Pre-stream error for request/, /^Push notification sent for task_id=/, /^SSE stream error for request/];

export function quietSdkConsole(): void {
  for (const method of ['error', 'info', 'log', 'warn'] as const) {
    const original = console[method].bind(console);
    console[method] = (...args: unknown[]) => {
      if (typeof args[0] === 'string' && EXPECTED.some((pattern) => pattern.test(args[0] as string))) return;
      original(...args);
    };
  }
}
