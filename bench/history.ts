/**
 * Seeding a journal with finished history fast: one real finished workflow
 * (produced by the real code path, so the record format is always the
 * journal's own) is cloned `count` times inside Redis, by a Lua script over
 * bounded batches (`CLONE_BATCH` clones per call, a few milliseconds of Redis
 * each), never through the delegation path.
 *
 * What a clone writes is what the template finished workflow left behind,
 * read from Redis, not a list kept here: every key of its hash tag
 * (`{wf:<id>}:*`: the compacted record `done` and, when present, its push
 * tokens, notifications, ...; follow leases are transient and skipped), its
 * task-owner key per delegation (named by `JournalKeys.taskOwner` of the
 * clone's own agent and task id), and its entries in the global listing and
 * search indexes (`search`: `i:<id>` and any metadata pairs, `updated` by its
 * last change, a tenant's `created`). TTLs are kept. Nothing goes into the
 * unfinished index, as finished records never are (checked after the fill).
 *
 * Ids are replaced by same-length variants (the last 12 characters of the
 * workflow, task, message and context ids become the clone's index in hex),
 * so every key, member and value has the size and encoding of a real one.
 */
import type { Redis } from 'ioredis';
import { journalKeys, parseCompactedWorkflow, tenantOfWorkflowId } from '@durable-a2a/shared';

/** Clones per script call: about 10 ms of Redis on a 2-core machine, so a live worker's commands wait little. */
const CLONE_BATCH = 1_000;

/** Characters of an id that a clone replaces by its index (hex): up to 16^12 clones. */
const SUFFIX_CHARS = 12;

/** The same-length variant of id `id` for clone `index`: its last 12 characters replaced by the index in hex. */
export const variant = (id: string, index: number): string => id.slice(0, -SUFFIX_CHARS) + index.toString(16).padStart(SUFFIX_CHARS, '0');

/** A text whose id slots are cut out: a clone's text is `parts.join(suffix)`. */
type Parts = string[];

interface KeyTemplate {
  type: 'string' | 'hash';
  /** The key name's parts. */
  name: Parts;
  /** The string's value, or the hash's field and value texts in turn, each as parts. */
  values: Parts[];
  ttlMs: number;
}

interface MemberTemplate {
  /** Index into the shared keys (`search`, `updated`, a tenant's `created`). */
  key: number;
  member: Parts;
  score: number;
  /** Subtracted from the score per clone index (ms: the clones finished one after another, the newest last). */
  step: number;
}

interface Template {
  perClone: KeyTemplate[];
  /** Task-owner keys: the clone's key is `taskOwner(agentCardUrl, variant(taskId))`; the value as parts. */
  owners: { agentCardUrl: string; taskId: string; value: Parts; ttlMs: number }[];
  sharedKeys: string[];
  members: MemberTemplate[];
}

/**
 * Writes clones `ARGV[2]` .. `ARGV[2] + ARGV[3] - 1` of the template.
 * KEYS: the shared keys (ARGV[4] of them), then each clone's keys in turn: its per-clone keys, then its
 * task-owner keys. ARGV[1]: the template as JSON (`{ keys: [{type, values, ttl}], owners: [{value, ttl}],
 * members: [{key, member, score, step}] }`, texts as parts joined by the clone's 12-hex-digit index).
 * Returns the number of clones written.
 */
const CLONE_SCRIPT = `
local template = cjson.decode(ARGV[1])
local first, count, shared = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local perClone = #template.keys + #template.owners
local function write(name, kind, values, suffix, ttl)
  if kind == 'string' then
    local value = table.concat(values[1], suffix)
    if ttl > 0 then redis.call('SET', name, value, 'PX', string.format('%d', ttl)) else redis.call('SET', name, value) end
    return
  end
  local args = {}
  for position, parts in ipairs(values) do args[position] = table.concat(parts, suffix) end
  redis.call('HSET', name, unpack(args))
  if ttl > 0 then redis.call('PEXPIRE', name, string.format('%d', ttl)) end
end
for clone = 0, count - 1 do
  local index = first + clone
  local suffix = string.format('%012x', index)
  local base = shared + clone * perClone
  for position, key in ipairs(template.keys) do write(KEYS[base + position], key.type, key.values, suffix, key.ttl) end
  for position, owner in ipairs(template.owners) do write(KEYS[base + #template.keys + position], 'string', { owner.value }, suffix, owner.ttl) end
  for _, entry in ipairs(template.members) do
    redis.call('ZADD', KEYS[entry.key], string.format('%.17g', entry.score - index * entry.step), table.concat(entry.member, suffix))
  end
end
return count
`;

/** Cuts the last 12 characters of every occurrence of `ids` out of `text`. */
function partsOf(text: string, ids: readonly string[]): Parts {
  const slots: number[] = [];
  for (const id of ids) {
    for (let at = text.indexOf(id); at !== -1; at = text.indexOf(id, at + id.length)) slots.push(at + id.length - SUFFIX_CHARS);
  }
  slots.sort((a, b) => a - b);
  const parts: Parts = [];
  let from = 0;
  for (const slot of slots) {
    if (slot < from) continue; // overlapping occurrences: the first one's slot is cut
    parts.push(text.slice(from, slot));
    from = slot + SUFFIX_CHARS;
  }
  parts.push(text.slice(from));
  return parts;
}

async function scanKeys(redis: Redis, pattern: string): Promise<string[]> {
  const found: string[] = [];
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1_000);
    found.push(...keys);
    cursor = next;
  } while (cursor !== '0');
  return found;
}

/** Reads what the finished workflow `workflowId` left in Redis, as a template. */
async function readTemplate(redis: Redis, prefix: string, workflowId: string): Promise<Template> {
  const keys = journalKeys(prefix);
  const record = await redis.get(keys.finished(workflowId));
  if (record === null) throw new Error(`history template: workflow ${workflowId} has no compacted record (${keys.finished(workflowId)}); is it finished?`);
  const { delegations } = parseCompactedWorkflow(workflowId, record);
  const ids = new Set([workflowId]);
  for (const { hash } of delegations) {
    for (const field of ['taskId', 'messageId', 'contextId', 'requestedContextId'] as const) {
      const value = hash[field];
      if (typeof value === 'string' && value.length > 0) ids.add(value);
    }
  }
  const short = [...ids].filter((id) => id.length < SUFFIX_CHARS + 8);
  if (short.length > 0) throw new Error(`history template: ids too short to vary (${short.join(', ')}); use generated ids`);
  const idList = [...ids];
  const perClone: KeyTemplate[] = [];
  // Follow leases are transient (a finished record holds none): never cloned.
  for (const key of (await scanKeys(redis, `${prefix}:{wf:${workflowId}}:*`)).filter((name) => !name.endsWith(':lease')).sort()) {
    const type = await redis.type(key);
    const ttlMs = Math.max(0, await redis.pttl(key));
    if (type === 'none') continue;
    if (type === 'string') perClone.push({ type, name: partsOf(key, idList), values: [partsOf((await redis.get(key)) ?? '', idList)], ttlMs });
    else if (type === 'hash') perClone.push({ type, name: partsOf(key, idList), values: Object.entries(await redis.hgetall(key)).flat().map((text) => partsOf(text, idList)), ttlMs });
    else throw new Error(`history template: unexpected ${type} key ${key}`);
  }
  const owners: Template['owners'] = [];
  for (const { hash } of delegations) {
    if (typeof hash.taskId !== 'string' || typeof hash.agentCardUrl !== 'string') continue;
    const key = keys.taskOwner(hash.agentCardUrl, hash.taskId);
    const value = await redis.get(key);
    if (value !== null) owners.push({ agentCardUrl: hash.agentCardUrl, taskId: hash.taskId, value: partsOf(value, idList), ttlMs: Math.max(0, await redis.pttl(key)) });
  }
  const tenant = tenantOfWorkflowId(workflowId);
  const sharedKeys = [keys.search(), keys.updated(), keys.tenantCreated(tenant)];
  const members: MemberTemplate[] = [];
  let cursor = '0';
  do {
    const [next, flat] = await redis.zscan(keys.search(), cursor, 'MATCH', `*${workflowId}*`, 'COUNT', 1_000);
    for (let index = 0; index < flat.length; index += 2) members.push({ key: 1, member: partsOf(flat[index]!, idList), score: Number(flat[index + 1]), step: 0 });
    cursor = next;
  } while (cursor !== '0');
  for (const [position, key] of sharedKeys.entries()) {
    if (position === 0) continue;
    const score = await redis.zscore(key, workflowId);
    if (score !== null) members.push({ key: position + 1, member: partsOf(workflowId, idList), score: Number(score), step: 1 });
  }
  if (!members.some(({ key }) => key === 1)) throw new Error(`history template: workflow ${workflowId} is not in the search index ${keys.search()}`);
  return { perClone, owners, sharedKeys, members };
}

/** Progress of a fill: clones written so far, of `count`. */
export type FillProgress = (written: number, count: number, elapsedMs: number) => void;

/**
 * Clones the finished workflow `templateWorkflowId` `count` times (see the module comment), in script calls of
 * `CLONE_BATCH` clones. `onProgress` is called after each tenth of the fill. Throws when the fill takes longer
 * than `timeoutMs` (default: 60 s plus 1 ms per clone), when a call fails, or when the unfinished index grew.
 */
export async function cloneFinishedWorkflow(
  redis: Redis,
  prefix: string,
  templateWorkflowId: string,
  count: number,
  options: { onProgress?: FillProgress; timeoutMs?: number } = {},
): Promise<void> {
  const keys = journalKeys(prefix);
  const template = await readTemplate(redis, prefix, templateWorkflowId);
  const unfinishedBefore = await redis.zcard(keys.unfinished());
  const json = JSON.stringify({
    keys: template.perClone.map(({ type, values, ttlMs }) => ({ type, values, ttl: ttlMs })),
    owners: template.owners.map(({ value, ttlMs }) => ({ value, ttl: ttlMs })),
    members: template.members,
  });
  const started = performance.now();
  const deadline = started + (options.timeoutMs ?? 60_000 + count);
  const tenth = Math.max(CLONE_BATCH, Math.ceil(count / 10 / CLONE_BATCH) * CLONE_BATCH);
  for (let first = 0; first < count; first += CLONE_BATCH) {
    if (performance.now() > deadline) throw new Error(`history fill: ${first} of ${count} clones written after ${Math.round((performance.now() - started) / 1000)} s; gave up (timeout ${options.timeoutMs ?? 60_000 + count} ms)`);
    const size = Math.min(CLONE_BATCH, count - first);
    const cloneKeys: string[] = [];
    for (let index = first; index < first + size; index++) {
      const suffix = index.toString(16).padStart(SUFFIX_CHARS, '0');
      for (const { name } of template.perClone) cloneKeys.push(name.join(suffix));
      for (const { agentCardUrl, taskId } of template.owners) cloneKeys.push(keys.taskOwner(agentCardUrl, variant(taskId, index)));
    }
    const written = await redis.eval(CLONE_SCRIPT, template.sharedKeys.length + cloneKeys.length, ...template.sharedKeys, ...cloneKeys, json, first, size, template.sharedKeys.length);
    if (written !== size) throw new Error(`history fill: the clone script wrote ${String(written)} of ${size} clones from ${first}`);
    const done = first + size;
    if (done % tenth === 0 || done === count) options.onProgress?.(done, count, performance.now() - started);
  }
  // The template's own entry may leave the index meanwhile (removed after its finish): only growth is wrong.
  const unfinishedAfter = await redis.zcard(keys.unfinished());
  if (unfinishedAfter > unfinishedBefore) throw new Error(`history fill: the unfinished index changed during the fill (${unfinishedBefore} → ${unfinishedAfter}); finished records must not be in it`);
}
