/**
 * The /ui agents page: every registered agent with its id, status (and why it is not picked for a skill), fleet-wide
 * limits, health (success rate over its last calls), last card fetch and last error. `agentsPanel` is the live part
 * the page polls; the form that sets an agent's limits sits outside it (a poll never replaces what a person types),
 * and each row with limits has a Clear button. Both post to `/ui/agents/limits` (`agent-limits-routes.ts`).
 */
import type { AgentView } from '@durable-a2a/shared';
import { html, page, time, type Safe } from './html.ts';

const at = (iso: string | null) => time(iso === null ? undefined : Date.parse(iso));

function healthCell(agent: AgentView): Safe {
  const { successRate, calls, successes, window } = agent.health;
  if (successRate === null) return html`<span aria-label="no calls yet">–</span>`;
  return html`<span title="${successes} of the last ${calls} calls (window ${window}) succeeded">${Math.round(successRate * 100)}% of ${calls}</span>`;
}

/** Where the limits forms post. */
export const LIMITS_ACTION = '/ui/agents/limits';

/** The confirmation shown after a limits form (the script shows it from `data-done`; without it, `?done=`). */
export const LIMITS_NOTICES = {
  limits: "Limits saved. Workers apply them within 30 seconds (their registry refresh).",
  'limits-cleared': 'Limits cleared: the agent is no longer limited. Workers apply it within 30 seconds.',
} as const;
export type LimitsDone = keyof typeof LIMITS_NOTICES;

/** An agent's limits in a person's words, with a Clear button when any is set. */
function limitsCell(agent: AgentView): Safe {
  const limits = agent.limits;
  const parts = [
    ...(limits?.maxInFlight !== undefined ? [`at most ${limits.maxInFlight} in flight`] : []),
    ...(limits?.rate?.sendsPerSecond !== undefined ? [`${limits.rate.sendsPerSecond} sends/s`] : []),
    ...(limits?.rate?.resubscribesPerSecond !== undefined ? [`${limits.rate.resubscribesPerSecond} resubscribes/s`] : []),
  ];
  if (parts.length === 0) return html`<span class="limits">none</span>`;
  return html`<span class="limits">${parts.join(', ')}</span>
<form method="post" action="${LIMITS_ACTION}" data-action="limits-clear" data-done="${LIMITS_NOTICES['limits-cleared']}"><input type="hidden" name="agent" value="${agent.id}"><input type="hidden" name="clear" value="1"><button type="submit" aria-label="Clear the limits of ${agent.card.name}">Clear</button></form>`;
}

function agentRow(agent: AgentView): Safe {
  const skills = agent.card.skills.map((skill) => skill.id).join(', ');
  const fetchFailed = agent.lastCardFetchOk === false ? html` <span class="badge badge-failed">failed</span>` : '';
  const lastError = agent.lastError ? html`${at(agent.lastError.at)} ${agent.lastError.kind}: ${agent.lastError.message}` : html`<span aria-label="none">–</span>`;
  return html`<tr>
<td><code>${agent.id}</code></td>
<td><span class="badge badge-${agent.status === 'active' ? 'completed' : 'needs-attention'}">${agent.status}</span>${agent.statusReason ? html`<br>${agent.statusReason}` : ''}</td>
<td>${agent.card.name}<br><code>${agent.cardUrl}</code></td>
<td>${skills}</td>
<td>${limitsCell(agent)}</td>
<td>${healthCell(agent)}</td>
<td>${at(agent.lastCardFetchAt)}${fetchFailed}</td>
<td>${lastError}</td>
</tr>`;
}

/** The live part of the agents page (polled with ETag). */
export function agentsPanel(agents: readonly AgentView[]): Safe {
  if (agents.length === 0) return html`<p>No agent is registered (<code>durable-a2a agents add &lt;cardUrl&gt;</code>).</p>`;
  return html`<table class="agents"><caption class="visually-hidden">Registered agents, in preference order</caption>
<thead><tr><th scope="col">Id</th><th scope="col">Status</th><th scope="col">Agent</th><th scope="col">Skills</th><th scope="col">Limits (fleet-wide)</th><th scope="col">Health (recent calls)</th><th scope="col">Last card fetch</th><th scope="col">Last error</th></tr></thead>
<tbody>${agents.map(agentRow)}</tbody></table>`;
}

/** The form that sets one agent's limits (replacing earlier ones); a blank field is no limit of that kind. */
function limitsForm(agents: readonly AgentView[]): Safe {
  if (agents.length === 0) return html``;
  const number = (name: string, label: string, step: string) =>
    html`<label for="limits-${name}">${label}</label> <input id="limits-${name}" name="${name}" type="number" min="${step === '1' ? '1' : '0'}" step="${step}" size="6">`;
  return html`<section aria-labelledby="limits-heading"><h2 id="limits-heading">Set an agent's limits</h2>
<form class="limits" method="post" action="${LIMITS_ACTION}" data-action="limits" data-done="${LIMITS_NOTICES.limits}">
<p><label for="limits-agent">Agent</label> <select id="limits-agent" name="agent">${agents.map((agent) => html`<option value="${agent.id}">${agent.card.name} (${agent.id})</option>`)}</select></p>
<p>${number('maxInFlight', 'SendMessage in flight at once', '1')} ${number('sendsPerSecond', 'Sends per second', 'any')} ${number('resubscribesPerSecond', 'Resubscriptions per second', 'any')}</p>
<p>Leave a field blank for no limit of that kind. The new limits replace the agent's earlier ones across the whole fleet.</p>
<button type="submit">Set limits</button>
</form></section>`;
}

/** The whole agents page; `notice`: the confirmation (or refusal) of the limits form that led here (a post without script). */
export function agentsPage(panel: Safe, agents: readonly AgentView[], notice?: { text: string; refused?: boolean }): string {
  return page('Agents', html`<h1>Agents</h1>
<p>Disable, enable or remove an agent with <code>durable-a2a agents disable|enable|remove &lt;id&gt;</code> or the API (<code>/v1/agents/:id</code>); its limits with the form below, <code>durable-a2a agents limits &lt;id&gt;</code> or <code>PUT /v1/agents/:id/limits</code>.</p>
<div id="live">${panel}</div>
${limitsForm(agents)}`, { live: '/ui/agents/panel', notice: notice?.text, noticeRefused: notice?.refused });
}
