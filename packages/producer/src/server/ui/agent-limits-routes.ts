/**
 * `POST /ui/agents/limits`: the agents page's limits forms, forwarded to `PUT /v1/agents/:id/limits` (or, with
 * `clear`, `DELETE`) with the person's token (`inject`), so validation and refusals are the API's. A script gets the
 * API's answer; a plain form a redirect to `/ui/agents?done=limits|limits-cleared`, or the agents page saying why
 * the API refused (with its status).
 */
import { z } from 'zod';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Problem } from '../problem.ts';
import { sendProblem } from '../problem.ts';
import type { Safe } from './html.ts';
import type { AgentView } from '@durable-a2a/shared';
import { LIMITS_ACTION, LIMITS_NOTICES, agentsPage } from './agents-page.ts';

/** The form's fields: strings, a blank one absent. */
const LimitsFormSchema = z.object({
  agent: z.string().max(2_048).default(''),
  clear: z.string().optional(),
  maxInFlight: z.string().max(40).default(''),
  sendsPerSecond: z.string().max(40).default(''),
  resubscribesPerSecond: z.string().max(40).default(''),
});

/** A field as the API's body wants it: a number, or the text itself when it is not one (the API refuses it, naming the field). */
const numberOf = (text: string): number | string => (Number.isFinite(Number(text)) ? Number(text) : text);

/** The API's body of the form: only the fields filled in. */
function limitsBody(form: z.output<typeof LimitsFormSchema>): Record<string, unknown> {
  const filled = (text: string) => text.trim() !== '';
  const rate = {
    ...(filled(form.sendsPerSecond) ? { sendsPerSecond: numberOf(form.sendsPerSecond.trim()) } : {}),
    ...(filled(form.resubscribesPerSecond) ? { resubscribesPerSecond: numberOf(form.resubscribesPerSecond.trim()) } : {}),
  };
  return { ...(filled(form.maxInFlight) ? { maxInFlight: numberOf(form.maxInFlight.trim()) } : {}), ...(Object.keys(rate).length > 0 ? { rate } : {}) };
}

/** Registers the route on the signed-in /ui context; `page` renders the agents panel and lists the agents. */
export function registerAgentLimitsUi(
  ui: FastifyInstance,
  server: FastifyInstance,
  headersOf: (request: FastifyRequest) => Record<string, string>,
  page: () => Promise<{ panel: Safe; agents: readonly AgentView[] }>,
): void {
  const refuse = async (request: FastifyRequest, reply: FastifyReply, refusal: Problem) => {
    if (request.headers['x-da2a-ui'] === 'fetch') return sendProblem(reply, refusal);
    const { panel, agents } = await page();
    return reply.code(refusal.status).type('text/html; charset=utf-8').send(agentsPage(panel, agents, { text: `Refused: ${refusal.detail}`, refused: true }));
  };
  ui.post(LIMITS_ACTION.slice('/ui'.length), { schema: { hide: true } }, async (request, reply) => {
    const form = LimitsFormSchema.parse(request.body ?? {});
    const clear = form.clear !== undefined && form.clear !== '';
    const url = `/v1/agents/${encodeURIComponent(form.agent.trim() || '-')}/limits`;
    const response = await server.inject(clear ? { method: 'DELETE', url, headers: headersOf(request) } : { method: 'PUT', url, payload: limitsBody(form), headers: headersOf(request) });
    if (response.statusCode >= 400) return refuse(request, reply, response.json() as Problem);
    if (request.headers['x-da2a-ui'] === 'fetch') return reply.code(response.statusCode).type(String(response.headers['content-type'] ?? 'application/json')).send(response.body);
    const done: keyof typeof LIMITS_NOTICES = clear ? 'limits-cleared' : 'limits';
    return reply.redirect(`/ui/agents?done=${done}`, 303);
  });
}
