/**
 * The unfinished index: one sorted set of every delegation not yet settled by its workflow, scored by
 * when the reconciler should next look at it (ms since epoch). Workflow entries use delegation id `*`.
 */
import { indexMember, parseIndexMember } from './keys.ts';
import { JournalCore, type DelegationRef } from './core.ts';
import { arrayReply, defineScript, integerReply } from './scripts.ts';

/** claimChecks-1.lua: per entry, in order, whether this sweep claimed it (moved it to its next check). */
const claimChecksScript = defineScript({
  name: 'claimChecks',
  keys: ['unfinished'],
  encode: (checks: readonly { member: string; seenAt: number; atMs: number }[]) => checks.flatMap(({ member, seenAt, atMs }) => [member, seenAt, atMs]),
  decode: (reply, script): boolean[] => arrayReply(reply, script).map((claimed) => integerReply(claimed, script) === 1),
});

/** Journal methods over the unfinished index. */
export class JournalIndex extends JournalCore {
  /**
   * Puts a delegation (or a workflow's entry `*`) in the unfinished index, due at `atMs` (ms since epoch), or moves
   * it there. Only for what is unfinished by construction: a new intent on a Cluster (on one server createIntent-4.lua
   * adds it with the row), a workflow a person resolved. A worker's next check uses `scheduleCheck`, which never adds.
   */
  async addToIndex(ref: DelegationRef, atMs: number): Promise<void> {
    await this.redis.zadd(this.keys.unfinished(), atMs, indexMember(ref.workflowId, ref.delegationId));
  }

  /**
   * Moves a delegation's entry in the unfinished index to `atMs` (ms since epoch; one ZADD XX). An entry that is not
   * there is not put back: its workflow settled it (and dropped it) after the caller read the row, and a plain ZADD
   * would make the reconciler settle it a second time.
   */
  async scheduleCheck(ref: DelegationRef, atMs: number): Promise<void> {
    await this.redis.zadd(this.keys.unfinished(), 'XX', atMs, indexMember(ref.workflowId, ref.delegationId));
  }

  /**
   * Moves many delegations of the unfinished index at once (one ZADD XX), each due at its `atMs`. Only entries
   * still there move: one removed meanwhile (settled since it was read) is not put back.
   */
  async scheduleChecks(checks: readonly { ref: DelegationRef; atMs: number }[]): Promise<void> {
    if (checks.length === 0) return;
    await this.redis.zadd(this.keys.unfinished(), 'XX', ...checks.flatMap(({ ref, atMs }) => [atMs, indexMember(ref.workflowId, ref.delegationId)]));
  }

  /**
   * `scheduleCheck` for a check moved beside other work, not waited on before it (a stream's first check, moved as
   * it opens): the moves asked in the same turn of the event loop go as one ZADD XX, sent at the end of that turn
   * (a fresh worker reattaching thousands of streams moved each with a ZADD of its own). Resolves once that ZADD
   * answered; rejects with its error. As with `scheduleCheck`, an entry that is gone is not put back.
   */
  scheduleCheckSoon(ref: DelegationRef, atMs: number): Promise<void> {
    let pending = this.pendingChecks;
    if (!pending) {
      const checks: { ref: DelegationRef; atMs: number }[] = [];
      const sent = new Promise<void>((resolve) => setImmediate(resolve)).then(() => {
        this.pendingChecks = undefined;
        return this.scheduleChecks(checks);
      });
      pending = this.pendingChecks = { checks, sent };
    }
    pending.checks.push({ ref, atMs });
    return pending.sent;
  }

  /** The moves `scheduleCheckSoon` gathers in this turn of the event loop, and their one ZADD. */
  private pendingChecks: { checks: { ref: DelegationRef; atMs: number }[]; sent: Promise<void> } | undefined;

  /**
   * A sweep's claim of the entries it read (claimChecks-1.lua, one call): each entry whose next check is still
   * `seenAt` (as read) moves to `atMs` and is this sweep's to check; one moved meanwhile (another sweep claimed it,
   * its follow or reconcile moved it) or gone (settled) is not, and is neither moved nor put back.
   * @returns per check, in order, true when claimed
   */
  async claimChecks(checks: readonly { ref: DelegationRef; seenAt: number; atMs: number }[]): Promise<boolean[]> {
    if (checks.length === 0) return [];
    const claims = checks.map(({ ref, seenAt, atMs }) => ({ member: indexMember(ref.workflowId, ref.delegationId), seenAt, atMs }));
    return this.call(claimChecksScript, { unfinished: this.keys.unfinished() }, claims);
  }

  /** When the reconciler next checks a delegation (ms since epoch), or undefined when it is not in the unfinished index. Read-only. */
  async nextCheckAt(ref: DelegationRef): Promise<number | undefined> {
    const score = await this.redis.zscore(this.keys.unfinished(), indexMember(ref.workflowId, ref.delegationId));
    return score === null ? undefined : Number(score);
  }

  /**
   * Drops a delegation (and any `others`, e.g. its workflow's entry `*`, in the same ZREM) from the unfinished
   * index; true when this call removed at least one of them (false if all were already gone).
   */
  async removeFromIndex(ref: DelegationRef, ...others: DelegationRef[]): Promise<boolean> {
    const members = [ref, ...others].map((entry) => indexMember(entry.workflowId, entry.delegationId));
    return (await this.redis.zrem(this.keys.unfinished(), ...members)) >= 1;
  }

  /** Unfinished delegations due at or before `atMs` (all of them with Infinity), at most `limit`. */
  async dueDelegations(atMs: number, limit: number): Promise<DelegationRef[]> {
    const members = await this.redis.zrangebyscore(this.keys.unfinished(), '-inf', Number.isFinite(atMs) ? atMs : '+inf', 'LIMIT', 0, limit);
    return members.map(parseIndexMember);
  }

  /** Like `dueDelegations`, with each entry's due time (ms). */
  async dueDelegationsWithTimes(atMs: number, limit: number): Promise<{ ref: DelegationRef; dueAt: number }[]> {
    const flat = await this.redis.zrangebyscore(this.keys.unfinished(), '-inf', Number.isFinite(atMs) ? atMs : '+inf', 'WITHSCORES', 'LIMIT', 0, limit);
    const due: { ref: DelegationRef; dueAt: number }[] = [];
    for (let index = 0; index < flat.length; index += 2) due.push({ ref: parseIndexMember(flat[index]!), dueAt: Number(flat[index + 1]) });
    return due;
  }

  /**
   * One page of every unfinished delegation, in no order (ZSCAN from `cursor`, '0' to start; about `count`
   * entries): an entry present for the whole scan is returned at least once (maybe twice), whatever scores
   * move meanwhile. `cursor` '0' in the answer: the scan is complete.
   */
  async scanUnfinished(cursor: string, count: number): Promise<{ cursor: string; due: { ref: DelegationRef; dueAt: number }[] }> {
    const [next, flat] = await this.redis.zscan(this.keys.unfinished(), cursor, 'COUNT', count);
    const due: { ref: DelegationRef; dueAt: number }[] = [];
    for (let index = 0; index < flat.length; index += 2) due.push({ ref: parseIndexMember(flat[index]!), dueAt: Number(flat[index + 1]) });
    return { cursor: next, due };
  }

  /** Number of unfinished delegations. */
  async unfinishedCount(): Promise<number> {
    return this.redis.zcard(this.keys.unfinished());
  }
}

/** At most this many unfinished delegations are sampled per scrape (cost grows with unfinished work only). */
export const STATE_SAMPLE_LIMIT = 10_000;

/**
 * Counts unfinished delegations by journal state, from the unfinished index
 * (never from history). Workflow entries (`*`) are skipped.
 */
export async function countUnfinishedByState(journal: JournalCore, limit = STATE_SAMPLE_LIMIT): Promise<Record<string, number>> {
  const members = await journal.redis.zrange(journal.keys.unfinished(), 0, limit - 1);
  const refs = members.map(parseIndexMember).filter((ref) => ref.delegationId !== '*');
  const states = await Promise.all(refs.map((ref) => journal.redis.hget(journal.keys.delegation(ref.workflowId, ref.delegationId), 'state')));
  const counts: Record<string, number> = {};
  for (const state of states) if (state) counts[state] = (counts[state] ?? 0) + 1;
  return counts;
}
