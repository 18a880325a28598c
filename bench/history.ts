/**
 * Seeding a journal with finished history fast: one real finished workflow
 * (produced by the real code path, so the record format is always the
 * journal's own) is cloned `count` times with pipelined writes. Every key of
 * the workflow (`{wf:<id>}:*`: workflow hash, delegation hash, artifacts,
 * delegation list) is copied with its ids replaced by same-length variants
 * (so the encoding and sizes stay those of a real record), the workflow joins
 * the workflows set, and the task-owner key gets a fresh name. TTLs are kept.
 * Nothing goes into the unfinished index, as finished records never are.
 */
import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';

/** Records per pipeline. */
const FILL_BATCH = 1_000;

interface TemplateKey {
  key: string;
  type: string;
  ttlMs: number;
  /** Flattened field/value pairs (hash), items (list) or the value (string). */
  values: string[];
}

/** The same-length variant of a UUID-like id for clone `index` (last 12 characters replaced). */
const variant = (id: string, index: number): string =>
  id.length >= 12 ? id.slice(0, -12) + index.toString(16).padStart(12, '0') : `${id}-${index}`;

async function readTemplate(redis: Redis, prefix: string, workflowId: string): Promise<{ keys: TemplateKey[]; ownerKeys: TemplateKey[] }> {
  // A key gone since the listing (a follow lease released as the workflow finished) is not part of the record.
  const read = async (key: string): Promise<TemplateKey | undefined> => {
    const type = await redis.type(key);
    const ttlMs = await redis.pttl(key);
    if (type === 'none') return undefined;
    if (type === 'hash') return { key, type, ttlMs, values: Object.entries(await redis.hgetall(key)).flat() };
    if (type === 'list') return { key, type, ttlMs, values: await redis.lrange(key, 0, -1) };
    if (type === 'string') return { key, type, ttlMs, values: [(await redis.get(key)) ?? ''] };
    throw new Error(`history template: unexpected ${type} key ${key}`);
  };
  // Follow leases are transient (a finished record holds none): never cloned.
  const listed = (await redis.keys(`${prefix}:{wf:${workflowId}}:*`)).filter((key) => !key.endsWith(':lease'));
  const keys = (await Promise.all(listed.map(read))).filter((key) => key !== undefined);
  const ownerKeys: TemplateKey[] = [];
  for (const key of await redis.keys(`${prefix}:task:*`)) {
    const owner = await read(key);
    if (owner?.values[0]?.startsWith(`${workflowId}|`)) ownerKeys.push(owner);
  }
  return { keys, ownerKeys };
}

/**
 * Clones the finished workflow `templateWorkflowId` `count` times. Ids
 * replaced in key names and values: the workflow id, and every `taskId`,
 * `messageId`, `contextId` and `requestedContextId` of its delegation hashes.
 */
export async function cloneFinishedWorkflow(redis: Redis, prefix: string, templateWorkflowId: string, count: number): Promise<void> {
  const { keys, ownerKeys } = await readTemplate(redis, prefix, templateWorkflowId);
  const ids = new Set<string>([templateWorkflowId]);
  for (const { type, values } of keys) {
    if (type !== 'hash') continue;
    for (let index = 0; index < values.length; index += 2) {
      if (['taskId', 'messageId', 'contextId', 'requestedContextId'].includes(values[index]!) && values[index + 1]) ids.add(values[index + 1]!);
    }
  }
  const replacers = [...ids].map((id) => ({ pattern: new RegExp(id.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'), 'g'), id }));
  const replace = (text: string, index: number) => replacers.reduce((result, { pattern, id }) => result.replace(pattern, variant(id, index)), text);
  for (let start = 0; start < count; start += FILL_BATCH) {
    const pipeline = redis.pipeline();
    for (let index = start; index < Math.min(count, start + FILL_BATCH); index++) {
      const write = ({ type, ttlMs, values }: TemplateKey, key: string) => {
        const copied = values.map((value) => replace(value, index));
        if (type === 'hash') pipeline.hset(key, ...copied);
        else if (type === 'list') pipeline.rpush(key, ...copied);
        else pipeline.set(key, copied[0]!);
        if (ttlMs > 0) pipeline.pexpire(key, ttlMs);
      };
      for (const template of keys) write(template, replace(template.key, index));
      for (const owner of ownerKeys) write(owner, `${prefix}:task:${createHash('sha256').update(`${owner.key}|${index}`).digest('hex')}`);
      pipeline.sadd(`${prefix}:workflows`, variant(templateWorkflowId, index));
    }
    await pipeline.exec();
  }
}
