/**
 * The /ui agents page: every registered agent with its id, status (and why it is not picked for a skill), health
 * (success rate over its last calls), last card fetch and last error. `agentsPanel` is the live part the page polls.
 */
import type { AgentView } from '@durable-a2a/shared';
import { html, page, time, type Safe } from './html.ts';

const at = (iso: string | null) => time(iso === null ? undefined : Date.parse(iso));

function healthCell(agent: AgentView): Safe {
  const { successRate, calls, successes, window } = agent.health;
  if (successRate === null) return html`<span aria-label="no calls yet">–</span>`;
  return html`<span title="${successes} of the last ${calls} calls (window ${window}) succeeded">${Math.round(successRate * 100)}% of ${calls}</span>`;
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
<td>${healthCell(agent)}</td>
<td>${at(agent.lastCardFetchAt)}${fetchFailed}</td>
<td>${lastError}</td>
</tr>`;
}

/** The live part of the agents page (polled with ETag). */
export function agentsPanel(agents: readonly AgentView[]): Safe {
  if (agents.length === 0) return html`<p>No agent is registered (<code>durable-a2a agents add &lt;cardUrl&gt;</code>).</p>`;
  return html`<table class="agents"><caption class="visually-hidden">Registered agents, in preference order</caption>
<thead><tr><th scope="col">Id</th><th scope="col">Status</th><th scope="col">Agent</th><th scope="col">Skills</th><th scope="col">Health (recent calls)</th><th scope="col">Last card fetch</th><th scope="col">Last error</th></tr></thead>
<tbody>${agents.map(agentRow)}</tbody></table>`;
}

/** The whole agents page. */
export function agentsPage(panel: Safe): string {
  return page('Agents', html`<h1>Agents</h1>
<p>Disable, enable or remove an agent with <code>durable-a2a agents disable|enable|remove &lt;id&gt;</code> or the API (<code>/v1/agents/:id</code>).</p>
<div id="live">${panel}</div>`, { live: '/ui/agents/panel' });
}
