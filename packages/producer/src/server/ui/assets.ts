/**
 * The page's stylesheet and script, served by /ui itself (no CDN: the page
 * works offline). The script is progressive: without it, forms post and
 * redirect and the page is reloaded by hand.
 *
 * Live updates: the script polls the page's `data-live` URL every 2 s with
 * If-None-Match; a 304 costs one small request, a 200 replaces the live
 * region (unless the person is typing an answer there).
 */

/** Poll interval of the live region. */
export const POLL_INTERVAL_MS = 2_000;

/** What a person is told when an answer is blank (the script, the /ui route and the API say the same). */
export const BLANK_ANSWER_MESSAGE = 'Write an answer first: a blank answer is not sent to the agent.';

export const UI_SCRIPT = `'use strict';
(() => {
  const live = document.getElementById('live');
  const source = document.body.dataset.live;
  const notice = document.getElementById('notice');
  let etag = null;
  let pending = false;
  // Visible until the next action: a confirmation, or (refused) why not.
  const show = (text, refused) => {
    if (!notice) return;
    notice.textContent = text;
    notice.classList.toggle('notice-refused', Boolean(refused));
    notice.hidden = false;
  };
  const typing = () => {
    if (!live) return false;
    const active = document.activeElement;
    if (active && live.contains(active) && active.tagName === 'TEXTAREA') return true;
    return [...live.querySelectorAll('textarea')].some((area) => area.value.trim() !== '');
  };
  async function refresh(force) {
    if (!live || !source || pending || (!force && (document.hidden || typing()))) return;
    pending = true;
    try {
      const response = await fetch(source, { headers: etag && !force ? { 'if-none-match': etag } : {}, credentials: 'same-origin', cache: 'no-store' });
      if (response.status === 200) {
        etag = response.headers.get('etag');
        live.innerHTML = await response.text();
        live.dataset.version = String(Number(live.dataset.version || '0') + 1);
      } else if (response.status === 401) {
        show('Your session has ended: reload the page to sign in again.', true);
      }
    } catch (error) {
      show('Live updates paused: ' + error.message, true);
    } finally {
      pending = false;
    }
  }
  document.addEventListener('submit', async (event) => {
    const form = event.target;
    if (!(form instanceof HTMLFormElement) || !form.dataset.action) return;
    event.preventDefault();
    const answer = form.querySelector('textarea[name=text]');
    if (answer && answer.value.trim() === '') {
      show(${JSON.stringify(BLANK_ANSWER_MESSAGE)}, true);
      form.dataset.result = 'refused';
      answer.focus();
      return;
    }
    const button = form.querySelector('button[type=submit]');
    if (button) button.disabled = true;
    try {
      // getAttribute: an input named "action" shadows form.action.
      const response = await fetch(form.getAttribute('action'), {
        method: 'POST',
        body: new URLSearchParams(new FormData(form)),
        headers: { 'x-da2a-ui': 'fetch', accept: 'application/json' },
        credentials: 'same-origin',
      });
      const body = await response.json().catch(() => ({}));
      if (response.ok) {
        form.reset();
        show(form.dataset.done || 'Done.', false);
      } else {
        show('Refused: ' + (body.detail || response.statusText), true);
      }
      form.dataset.result = response.ok ? 'ok' : 'refused';
    } finally {
      if (button) button.disabled = false;
      await refresh(true);
    }
  });
  setInterval(() => void refresh(false), ${POLL_INTERVAL_MS});
})();
`;

export const UI_STYLE = `
:root { color-scheme: light; --ink: #1b1f24; --muted: #57606a; --line: #d0d7de; --accent: #0b57d0; --bad: #b42318; --good: #137333; --warn: #8a5300; }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.45 system-ui, sans-serif; color: var(--ink); background: #f6f8fa; }
.skip { position: absolute; left: -1000px; } .skip:focus { left: 8px; top: 8px; background: #fff; padding: 4px 8px; }
.top { background: #24292f; padding: 8px 16px; } .top a { color: #fff; margin-right: 16px; }
main { padding: 16px 24px; max-width: 1400px; }
h1 { font-size: 22px; margin: 8px 0 12px; } h2 { font-size: 18px; margin: 20px 0 8px; } h3 { font-size: 16px; margin: 12px 0 6px; }
a { color: var(--accent); } a:focus, button:focus, select:focus, textarea:focus { outline: 3px solid #f59e0b; outline-offset: 1px; }
table { border-collapse: collapse; background: #fff; width: 100%; margin-bottom: 8px; }
th, td { border: 1px solid var(--line); padding: 4px 8px; text-align: left; vertical-align: top; font-size: 13px; }
thead th { background: #eef1f4; } caption { text-align: left; font-weight: 600; padding: 4px 0; }
.number { text-align: right; } .mono, code { font-family: ui-monospace, monospace; font-size: 12px; word-break: break-all; }
.wrap { word-break: break-all; max-width: 260px; } .muted { color: var(--muted); } .error { color: var(--bad); }
.badge { display: inline-block; padding: 0 6px; border-radius: 10px; font-size: 12px; font-weight: 600; background: #eaeef2; border: 1px solid var(--line); }
.badge-completed, .badge-compensated, .badge-present { background: #e6f4ea; color: var(--good); }
.badge-failed, .badge-rejected, .badge-canceled, .badge-ambiguous, .badge-lost, .badge-needs-attention { background: #fce8e6; color: var(--bad); }
.badge-input-required, .badge-auth-required, .badge-compensating, .badge-unknown { background: #fef7e0; color: var(--warn); }
.attention, .question, .failure { background: #fff; border: 1px solid var(--line); border-left: 4px solid var(--warn); padding: 8px 12px; margin: 8px 0; }
.attention form { margin: 6px 0; } .agent-text { margin: 6px 0; padding: 6px 10px; background: #f6f8fa; border-left: 3px solid var(--line); white-space: pre-wrap; }
label { display: block; font-weight: 600; margin: 6px 0 2px; } textarea { width: 100%; max-width: 640px; font: inherit; }
button { font: inherit; padding: 4px 12px; border-radius: 6px; border: 1px solid #1f6feb; background: var(--accent); color: #fff; cursor: pointer; }
button.danger { background: var(--bad); border-color: var(--bad); } button:disabled { opacity: .6; }
.filter { display: flex; gap: 8px; align-items: center; } .filter label { display: inline; margin: 0; }
.questions { padding-left: 18px; } .redelegation { font-weight: normal; font-size: 12px; color: var(--warn); }
.steps { padding-left: 18px; } .timeline { font-size: 13px; } .pager a { margin-right: 12px; }
.notice { background: #e6f4ea; color: var(--good); border: 1px solid #a8dab5; border-radius: 6px; padding: 8px 12px; font-weight: 600; }
.notice-refused { background: #fce8e6; color: var(--bad); border-color: #f4b8b0; }
.top { display: flex; justify-content: space-between; align-items: center; } .sign-out button { background: transparent; border-color: #fff; }
.outcome { background: #fff; border: 1px solid var(--line); border-left: 4px solid var(--muted); padding: 8px 12px; margin: 8px 0; }
.outcome-completed { border-left-color: var(--good); } .outcome-failed, .outcome-attention { border-left-color: var(--bad); } .outcome-question, .outcome-running { border-left-color: var(--warn); }
.request { margin: 6px 0; padding: 6px 10px; background: #eef1f4; border-left: 3px solid var(--accent); white-space: pre-wrap; }
dl.evidence { display: grid; grid-template-columns: max-content 1fr; gap: 2px 12px; margin: 4px 0; font-size: 13px; } dl.evidence dt { font-weight: 600; } dl.evidence dd { margin: 0; word-break: break-word; }
.search { display: flex; gap: 8px; align-items: end; flex-wrap: wrap; margin: 8px 0; } .search label { margin: 0; } .sign-in input { font: inherit; }
.visually-hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
`;
