/**
 * The @a2a-js/sdk server logs expected events (a subscription refused because
 * the task is terminal, every push it sends) straight to the console, with no
 * logger option (1.3.0). The demo agents are ours, so those lines are dropped;
 * everything else passes.
 */
const EXPECTED = [/^Pre-stream error for request/, /^Push notification sent for task_id=/, /^SSE stream error for request/];

/** The SDK's answer to SubscribeToTask on a finished task (spec §3.1.6): expected, not an error. */
const TERMINAL_REFUSAL = /is in a terminal state .* cannot be subscribed to/;

type ConsoleMethod = 'error' | 'info' | 'log' | 'warn';

/** Wraps `console[method]`: a call `drop(args)` accepts is not printed. */
function filterConsole(methods: readonly ConsoleMethod[], drop: (args: unknown[]) => boolean): void {
  for (const method of methods) {
    const original = console[method].bind(console);
    console[method] = (...args: unknown[]) => {
      if (!drop(args)) original(...args);
    };
  }
}

/** Drops every expected SDK console line (refusals, pushes, stream errors). For demos; tests keep the rest. */
export function quietSdkConsole(): void {
  filterConsole(['error', 'info', 'log', 'warn'], (args) => typeof args[0] === 'string' && EXPECTED.some((pattern) => pattern.test(args[0] as string)));
}

let terminalRefusalsQuiet = false;

/**
 * Drops only the SDK's `Pre-stream error … is in a terminal state … cannot be subscribed to` line and its
 * stack, printed on every reattach to a finished task. Installed once, by `startDemoAgent`; any other
 * pre-stream error still prints.
 */
export function quietTerminalSubscribeRefusals(): void {
  if (terminalRefusalsQuiet) return;
  terminalRefusalsQuiet = true;
  filterConsole(['error'], (args) => typeof args[0] === 'string' && args[0].startsWith('Pre-stream error for request') && args[1] instanceof Error && TERMINAL_REFUSAL.test(args[1].message));
}
