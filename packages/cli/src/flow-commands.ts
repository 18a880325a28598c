/**
 * Flow control from the command line (docs/flow-control.md): `agents limits <agent>` shows, sets or clears an
 * agent's fleet-wide limits; `tenants` lists the tenants' weights in the send queue's fairness and `tenants weight
 * <tenant> [n]` shows, sets or clears one.
 */
import { Command, InvalidArgumentError } from 'commander';
import { callApi } from './client.ts';
import { EXIT_CODES } from './exit-codes.ts';
import { formatAgent, formatLimits, type Agent } from './format.ts';
import type { CommandHelpers } from './commands.ts';

interface LimitsOptions {
  maxInFlight?: number;
  sendsPerSecond?: number;
  resubscribesPerSecond?: number;
  clear?: boolean;
}

interface TenantWeight {
  tenant: string;
  weight: number;
  set: boolean;
}

const wholeNumber = (name: string) => (value: string) => {
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < 1) throw new InvalidArgumentError(`${name} must be a whole number of at least 1.`);
  return parsed;
};
const positiveNumber = (name: string) => (value: string) => {
  const parsed = Number(value);
  if (!Number.isFinite(parsed) || parsed <= 0) throw new InvalidArgumentError(`${name} must be a number above 0.`);
  return parsed;
};

/** The API body of the limit options given (undefined when none was). */
function limitsBody(options: LimitsOptions): Record<string, unknown> | undefined {
  const rate = {
    ...(options.sendsPerSecond !== undefined ? { sendsPerSecond: options.sendsPerSecond } : {}),
    ...(options.resubscribesPerSecond !== undefined ? { resubscribesPerSecond: options.resubscribesPerSecond } : {}),
  };
  const body = { ...(options.maxInFlight !== undefined ? { maxInFlight: options.maxInFlight } : {}), ...(Object.keys(rate).length > 0 ? { rate } : {}) };
  return Object.keys(body).length > 0 ? body : undefined;
}

/** `agents limits <agent> [--max-in-flight n] [--sends-per-second r] [--resubscribes-per-second r] [--clear]`. */
export function addAgentLimitsCommand(agents: Command, helpers: CommandHelpers, agentPath: (agent: string) => string): void {
  agents
    .command('limits <agent>')
    .description("show an agent's fleet-wide limits, or set them (replacing earlier ones) or clear them; workers honour them within 30 s")
    .option('--max-in-flight <n>', 'SendMessage calls in flight at the agent at once, across every worker', wholeNumber('--max-in-flight'))
    .option('--sends-per-second <rate>', 'SendMessage calls started per second', positiveNumber('--sends-per-second'))
    .option('--resubscribes-per-second <rate>', 'task resubscriptions per second', positiveNumber('--resubscribes-per-second'))
    .option('--clear', 'clear every limit of the agent')
    .action(async (agent: string, options: LimitsOptions, command: Command) => {
      const body = limitsBody(options);
      if (options.clear && body) command.error('error: --clear takes no limit option', { exitCode: EXIT_CODES.USAGE, code: 'durable-a2a.limits' });
      const path = `${agentPath(agent)}/limits`;
      const view = options.clear
        ? await callApi<Agent>(helpers.api(command), 'DELETE', path)
        : body
          ? await callApi<Agent>(helpers.api(command), 'PUT', path, body)
          : await callApi<Agent>(helpers.api(command), 'GET', agentPath(agent));
      helpers.print(command, view, () => (body || options.clear ? formatAgent(view) : `${view.id}\t${formatLimits(view.limits)}`));
    });
}

/** `tenants` (`tenants list`) and `tenants weight <tenant> [weight] [--clear]`. */
export function addTenantCommands(program: Command, helpers: CommandHelpers): void {
  const tenants = program.command('tenants').description("tenants' weights in the send queue's fairness: list (the default), weight <tenant> [n]");
  tenants
    .command('list', { isDefault: true })
    .description('list the tenants whose weight was set (every other tenant weighs 1)')
    .action(async (_options: unknown, command: Command) => {
      const answer = await callApi<{ weights: Record<string, number> }>(helpers.api(command), 'GET', 'v1/tenants/weights');
      const lines = Object.entries(answer.weights).map(([tenant, weight]) => `${tenant}\t${weight}`);
      helpers.print(command, answer, () => lines.join('\n') || '(none set: every tenant weighs 1)');
    });
  tenants
    .command('weight <tenant> [weight]')
    .description("show a tenant's weight, or set it (a whole number 1 to 100: weight 2 gets two sends for another tenant's one), or clear it back to 1")
    .option('--clear', 'clear the weight back to 1')
    .action(async (tenant: string, weight: string | undefined, options: { clear?: boolean }, command: Command) => {
      if (options.clear && weight !== undefined) command.error('error: --clear takes no weight', { exitCode: EXIT_CODES.USAGE, code: 'durable-a2a.weight' });
      const parsed = weight === undefined ? undefined : Number(weight);
      if (parsed !== undefined && !(Number.isInteger(parsed) && parsed >= 1 && parsed <= 100)) {
        command.error(`error: weight must be a whole number 1 to 100, not '${weight}'`, { exitCode: EXIT_CODES.USAGE, code: 'durable-a2a.weight' });
      }
      const path = `v1/tenants/${encodeURIComponent(tenant)}/weight`;
      const answer = options.clear
        ? await callApi<TenantWeight>(helpers.api(command), 'DELETE', path)
        : parsed !== undefined
          ? await callApi<TenantWeight>(helpers.api(command), 'PUT', path, { weight: parsed })
          : await callApi<TenantWeight>(helpers.api(command), 'GET', path);
      helpers.print(command, answer, () => `${answer.tenant}\t${answer.weight}${answer.set ? '' : '\t(default)'}`);
    });
}
