/**
 * Fleet-wide coordination kept beside the journal: one-time marks, the follow lease (one open stream
 * per task across the fleet, lease-1.lua), a smooth rate limit on Redis's clock (takeToken-1.lua), and
 * the workers' liveness (heartbeat-2.lua, forgetWorker-2.lua): a lease whose worker's liveness key is
 * gone is ended at once (`endLeasesOf`), not at its TTL.
 */
import type { DelegationRef } from './core.ts';
import { indexMember } from './keys.ts';
import { JournalReplies } from './replies.ts';
import { arrayReply, callScriptMany, defineScript, integerReply, outcomeDecoder, fenceDecoder, ScriptReplyError } from './scripts.ts';
import { unlessRefused } from './errors.ts';

/**
 * What renewing one follow lease found (`renewLeases`): `finished` when the delegation it follows is finished (its
 * row finished, or gone: a finished workflow's rows are compacted away): nothing renewed, nothing left to follow.
 */
export type LeaseRenewal = 'renewed' | 'retaken' | 'lost' | 'finished';

/** What the renewal of one follow lease found (`renewLeases`): the lease, and whether its row keeps suspects. */
export interface FollowRenewal {
  /**
   * `renewed`, `retaken` (it had run out and nobody took it since), `lost` (someone else holds it), or `finished` (the
   * delegation is finished or its row gone: nothing renewed, its stream should stop).
   */
  lease: LeaseRenewal;
  /**
   * The delegation's row keeps suspect evidence (noteSuspect-1.lua: suspects pending, or `suspectsLost` above 0), read
   * in the same script while the lease is ours; false when the lease is lost or the row finished or gone.
   */
  keepsSuspects: boolean;
  /**
   * With `keepsSuspects`: the failed suspect read rounds in a row and when the last ended (ms; 0 when none), the
   * row's `suspectReadRounds` and `suspectReadRoundAt` (clearSuspects-1.lua), whose backoff the next read waits for.
   */
  suspectReadRounds: number;
  suspectReadRoundAt?: number;
}

/** lease-1.lua: 'done' or 'not ours' (held by someone else). */
const leaseScript = defineScript({
  name: 'lease',
  keys: ['lease'],
  encode: (input: { op: 'acquire' | 'renew' | 'release'; token: string; durationMs: number }) => [input.op, input.token, input.durationMs],
  decode: outcomeDecoder({ 1: 'done', 0: 'not ours' }),
});

/** renewFollow-2.lua: the lease renewed, taken back, lost, or not renewed (the row finished), and whether the row keeps suspects. */
const renewFollowScript = defineScript({
  name: 'renewFollow',
  keys: ['delegation', 'lease'],
  encode: (input: { token: string; durationMs: number }) => [input.token, input.durationMs],
  decode: (reply, script): FollowRenewal => {
    const [outcome, suspects, rounds, roundAt] = arrayReply(reply, script);
    const lease = ({ 1: 'renewed', 2: 'retaken', 0: 'lost', 3: 'finished' } as const)[integerReply(outcome, script) as 0 | 1 | 2 | 3];
    if (lease === undefined) throw new ScriptReplyError(script, reply);
    const keepsSuspects = (lease === 'renewed' || lease === 'retaken') && integerReply(suspects, script) === 1;
    const at = keepsSuspects && roundAt !== undefined ? integerReply(roundAt, script) : 0;
    return { lease, keepsSuspects, suspectReadRounds: keepsSuspects && rounds !== undefined ? integerReply(rounds, script) : 0, ...(at > 0 ? { suspectReadRoundAt: at } : {}) };
  },
});

/** takeFollow-2.lua: the new fencing token, or 0 when another holder has the lease. */
const takeFollowScript = defineScript({
  name: 'takeFollow',
  keys: ['delegation', 'lease'],
  encode: (input: { token: string; durationMs: number }) => [input.token, input.durationMs],
  decode: fenceDecoder,
});

/** What one heartbeat found (`heartbeat`). */
export interface Heartbeat {
  /** This worker's liveness key had run out before this beat (a stall): peers may have ended its leases. */
  lapsed: boolean;
  /** The roster listed this worker id before this beat (at start-up: an earlier process with the same id). */
  listed: boolean;
  /** Workers whose last heartbeat is older than the liveness TTL (confirm each with `forgetWorker`). */
  silent: string[];
  /**
   * Ms (Redis's clock) until the next other worker on the roster turns silent should it not beat again: its entry's
   * age reaches the TTL, and its liveness key runs out with it. Undefined when no other listed worker is not yet silent.
   */
  nextSilentInMs?: number;
}

/** heartbeat-2.lua: whether this worker's liveness key was still there, and the silent workers. */
const heartbeatScript = defineScript({
  name: 'heartbeat',
  keys: ['liveness', 'roster'],
  encode: (input: { workerId: string; ttlMs: number; limit: number }) => [input.workerId, input.ttlMs, input.limit],
  decode: (reply, script): Heartbeat => {
    const [was, listed, silent, nextSilentIn] = arrayReply(reply, script);
    if (!Array.isArray(silent)) throw new ScriptReplyError(script, reply);
    const beat: Heartbeat = { lapsed: was === 0, listed: listed === 1, silent: silent.map(String) };
    if (typeof nextSilentIn === 'number' && nextSilentIn >= 0) beat.nextSilentInMs = nextSilentIn;
    return beat;
  },
});

/** forgetWorker-2.lua: 1 when this caller took the dead worker off the roster (and sweeps it), else 0. */
const forgetWorkerScript = defineScript({ name: 'forgetWorker', keys: ['liveness', 'roster'], encode: (workerId: string) => [workerId], decode: integerReply });

/** countRound-1.lua: the rounds so far, this one included. */
const countRoundScript = defineScript({ name: 'countRound', keys: ['rounds'], encode: (ttlMs: number) => [ttlMs], decode: integerReply });

/** takeToken-1.lua: per reserved slot, in order, 0 to go now, else the ms to wait for it. */
const takeTokenScript = defineScript({
  name: 'takeToken',
  keys: ['slot'],
  encode: (input: { max: number; windowMs: number; maxWaitMs: number; count: number }) => [input.max, input.windowMs, input.maxWaitMs, input.count],
  decode: (reply, script): number[] => arrayReply(reply, script).map((wait) => integerReply(wait, script)),
});

/** Journal methods that coordinate workers across the fleet. */
export class JournalCoordination extends JournalReplies {
  /**
   * Marks a one-time act of a delegation (a CancelTask sent, an auth challenge handled) for `ttlMs`.
   * @returns true for the first caller in that window, false for every other one (fleet-wide).
   */
  async markOnce(ref: DelegationRef, name: string, owner: string, ttlMs: number): Promise<boolean> {
    return (await this.redis.set(this.keys.once(ref.workflowId, ref.delegationId, name), owner, 'PX', ttlMs, 'NX')) === 'OK';
  }

  /**
   * Readiness: proves Redis takes writes now with one `SET <prefix>:write-probe 1 PX ttlMs` (a few bytes, gone
   * after `ttlMs`; default 10 s). On a Cluster it proves the probe key's node only.
   * @throws what Redis answers (OOM, READONLY, MISCONF, NOREPLICAS, a lost connection): classify with `redisErrorKind`
   */
  async probeWrites(ttlMs = 10_000): Promise<void> {
    await this.redis.set(this.keys.writeProbe(), '1', 'PX', ttlMs);
  }

  /**
   * Counts one more round of a repeated act of a delegation (an auth handler run, a credential refresh) within
   * `ttlMs` of the first, fleet-wide (countRound-1.lua: INCR, and PEXPIRE set only on the first). Bounds what an agent
   * can make us repeat.
   * @returns the rounds so far, this one included (1 for the first).
   */
  async countRound(ref: DelegationRef, name: string, ttlMs: number): Promise<number> {
    const key = this.keys.once(ref.workflowId, ref.delegationId, `rounds:${name}`);
    return this.call(countRoundScript, { rounds: key }, ttlMs);
  }

  /**
   * The follow lease of a delegation (one open stream per task across the fleet).
   * `acquire` returns false when another holder has it; `renew`/`release` only act on our own.
   */
  async lease(ref: DelegationRef, op: 'acquire' | 'renew' | 'release', token: string, durationMs = 0): Promise<boolean> {
    const key = this.keys.followLease(ref.workflowId, ref.delegationId);
    if (op === 'acquire') {
      // One command (no script) when the lease is free: SET … NX GET takes it, or answers its holder.
      const holder = await this.redis.call('SET', key, token, 'NX', 'GET', 'PX', durationMs);
      if (holder === null) return true;
      // Already ours (the same holder again): extend it, as lease-1.lua's acquire does.
      if (holder !== token) return false;
    }
    return (await this.call(leaseScript, { lease: key }, { op, token, durationMs })) === 'done';
  }

  /**
   * Starts a follow (takeFollow-2.lua): takes the follow lease for `durationMs` and, only when it is ours,
   * claims the delegation in the same script.
   * @returns the fencing token to pass to later writes, or 0 when another holder has the lease
   * @throws JournalError DELEGATION_MISSING (no lease is left behind)
   */
  async takeFollow(ref: DelegationRef, token: string, durationMs: number): Promise<number> {
    const keys = { delegation: this.keys.delegation(ref.workflowId, ref.delegationId), lease: this.keys.followLease(ref.workflowId, ref.delegationId) };
    return unlessRefused(await this.call(takeFollowScript, keys, { token, durationMs }), ref, 'takeFollow').fence;
  }

  /**
   * Renews many follow leases of open streams with one round trip (renewFollow-2.lua each, pipelined: a lease that
   * ran out and that nobody took since is taken back; none is renewed for a finished or gone row; the same script says
   * whether the row keeps suspects) and moves
   * the reconciler's next check of every lease still ours to `checkAt(ref)` (ms since epoch; one ZADD XX: a
   * delegation settled while its stream was closing is not put back in the unfinished index).
   * @returns per lease, in order: `renewed`, `retaken` (it had run out), `lost` (someone else holds it), or `finished`
   *   (the delegation is finished or its row gone: not renewed), and whether its row keeps suspects pending or
   *   counted lost (`FollowRenewal`)
   */
  async renewLeases(leases: readonly { ref: DelegationRef; token: string }[], durationMs: number, checkAt: (ref: DelegationRef) => number): Promise<FollowRenewal[]> {
    const calls = leases.map(({ ref, token }) => ({ keys: { delegation: this.keys.delegation(ref.workflowId, ref.delegationId), lease: this.keys.followLease(ref.workflowId, ref.delegationId) }, input: { token, durationMs } }));
    const renewals = await callScriptMany(this.redis, renewFollowScript, calls);
    const scores: (string | number)[] = [];
    leases.forEach(({ ref }, index) => {
      const lease = renewals[index]!.lease;
      if (lease === 'renewed' || lease === 'retaken') scores.push(checkAt(ref), indexMember(ref.workflowId, ref.delegationId));
    });
    if (scores.length > 0) await this.redis.zadd(this.keys.unfinished(), 'XX', ...scores);
    return renewals;
  }

  /** True while someone holds the follow lease. */
  async isFollowed(ref: DelegationRef): Promise<boolean> {
    return (await this.redis.exists(this.keys.followLease(ref.workflowId, ref.delegationId))) === 1;
  }

  /** The token holding a delegation's lease (follow or send), or undefined when nobody holds it. */
  async leaseHolder(ref: DelegationRef): Promise<string | undefined> {
    return (await this.redis.get(this.keys.followLease(ref.workflowId, ref.delegationId))) ?? undefined;
  }

  /**
   * Which of `refs` a follow run of another worker still on the fleet's roster holds (`followedByAnotherLive`) with
   * more than `minLeftMs` of its lease left: the lease holders and their time left read (a GET and a PTTL each, sent
   * together), then each other worker named looked up once (its liveness key, EXISTS, and its roster entry, ZSCORE,
   * all sent together). Such a worker is live (its key present), or dead and not yet named by a heartbeat (key gone,
   * still listed): a heartbeat names it within about two liveness TTLs (after a fleet-wide silence every listed worker
   * gets one TTL to beat again) and the dead-worker sweep then ends its leases. A worker that left the roster (a
   * graceful close, or a death whose sweep another worker took on) is not counted. `self`: this worker's id;
   * `isFollowRun`: tells a follow run's token from a send run's. `minLeftMs`: should the holder be dead, its lease
   * must outlast the moment a heartbeat names it, or the dead-worker sweep (which ends only leases still naming it)
   * would pass over the delegation.
   * @returns per ref, in order: true when a follow run of a listed worker other than `self` holds its lease, with more
   *   than `minLeftMs` left
   */
  async followedByLiveWorkers(refs: readonly DelegationRef[], self: string, isFollowRun: (holder: string) => boolean, minLeftMs: number): Promise<boolean[]> {
    if (refs.length === 0) return [];
    // Issued in one turn: the journal's connection sends them in one write (auto-pipelining; per node on a Cluster).
    const keys = refs.map((ref) => this.keys.followLease(ref.workflowId, ref.delegationId));
    const [holders, lefts] = await Promise.all([Promise.all(keys.map((key) => this.redis.get(key))), Promise.all(keys.map((key) => this.redis.pttl(key)))]);
    const named = [...new Set(holders.flatMap((holder) => (holder && isFollowRun(holder) ? [workerOfHolder(holder)] : [])))].filter((id) => id !== '' && id !== self);
    const [present, listed] = await Promise.all([
      Promise.all(named.map((workerId) => this.redis.exists(this.keys.workerLiveness(workerId)))),
      Promise.all(named.map((workerId) => this.redis.zscore(this.keys.fleetWorkers(), workerId))),
    ]);
    const live = new Set(named.filter((_, index) => present[index] === 1 || listed[index] !== null));
    return holders.map((holder, index) => lefts[index]! > minLeftMs && followedByAnotherLive(holder ?? undefined, self, live, isFollowRun));
  }

  /** Milliseconds left on a delegation's follow lease (0 when nobody holds it). */
  async followLeaseRemainingMs(ref: DelegationRef): Promise<number> {
    return Math.max(0, await this.redis.pttl(this.keys.followLease(ref.workflowId, ref.delegationId)));
  }

  /**
   * One heartbeat of worker `workerId` (heartbeat-2.lua, one call whatever the streams it holds): its liveness key
   * set for `ttlMs`, its roster entry to now (Redis's clock), and up to `limit` (default 16) silent workers named.
   */
  async heartbeat(workerId: string, ttlMs: number, limit = 16): Promise<Heartbeat> {
    const beat = await this.call(heartbeatScript, { liveness: this.keys.workerLiveness(workerId), roster: this.keys.fleetWorkers() }, { workerId, ttlMs, limit });
    return { ...beat, silent: beat.silent.filter((id) => id !== workerId) };
  }

  /**
   * Takes silent worker `workerId` off the roster when its liveness key is gone (forgetWorker-2.lua).
   * @returns true for exactly one caller per death: that caller has its leases ended (`endLeasesOf`)
   */
  async forgetWorker(workerId: string): Promise<boolean> {
    return (await this.call(forgetWorkerScript, { liveness: this.keys.workerLiveness(workerId), roster: this.keys.fleetWorkers() }, workerId)) === 1;
  }

  /** True while worker `workerId`'s liveness key exists (heartbeat-2.lua sets it; it runs out when the worker stops beating). */
  async isWorkerLive(workerId: string): Promise<boolean> {
    return (await this.redis.exists(this.keys.workerLiveness(workerId))) === 1;
  }

  /** A worker that closed gracefully (its leases given back) leaves the roster and drops its liveness key: no sweep follows. */
  async leaveFleet(workerId: string): Promise<void> {
    await Promise.all([this.redis.zrem(this.keys.fleetWorkers(), workerId), this.redis.del(this.keys.workerLiveness(workerId))]);
  }

  /**
   * Ends the leases that runs of dead workers `workerIds` hold on `refs`: one read of the holders (a GET each, sent
   * together), then lease-1.lua `release` (compare-and-delete on the holder read) for each of theirs, pipelined.
   * A lease `leaveToTtl(holder)` names is not ended but reported in `left`: a send lease, whose worker may only have
   * stalled with its request still open at the agent (no takeover can stop that request), runs out at its TTL.
   * Call only for workers `forgetWorker` found dead (their liveness key gone).
   * @returns `ended`: the refs whose lease was ended, with the holder it had; `left`: the dead workers' leases left to their TTL
   */
  async endLeasesOf(
    workerIds: readonly string[],
    refs: readonly DelegationRef[],
    leaveToTtl: (holder: string) => boolean = () => false,
  ): Promise<{ ended: { ref: DelegationRef; holder: string }[]; left: { ref: DelegationRef; holder: string }[] }> {
    if (refs.length === 0) return { ended: [], left: [] };
    // Issued in one turn: the journal's connection sends them in one write (auto-pipelining; per node on a Cluster).
    const holders = await Promise.all(refs.map((ref) => this.redis.get(this.keys.followLease(ref.workflowId, ref.delegationId))));
    const theirs = refs.flatMap((ref, index) => {
      const holder = holders[index];
      return holder && workerIds.some((id) => holder.startsWith(`${id}/`)) ? [{ ref, holder }] : [];
    });
    const left = theirs.filter(({ holder }) => leaveToTtl(holder));
    const toEnd = theirs.filter(({ holder }) => !leaveToTtl(holder));
    const calls = toEnd.map(({ ref, holder }) => ({ keys: { lease: this.keys.followLease(ref.workflowId, ref.delegationId) }, input: { op: 'release' as const, token: holder, durationMs: 0 } }));
    const results = await callScriptMany(this.redis, leaseScript, calls);
    return { ended: toEnd.filter((_, index) => results[index] === 'done'), left };
  }

  /**
   * Reserves a slot of a fleet-wide smooth rate limit (`name`: at most `max` per `windowMs`,
   * spaced evenly). Uses Redis's clock, so every worker agrees.
   * @returns 0 to go now, else the ms until the reserved slot.
   */
  async takeToken(name: string, max: number, windowMs: number, maxWaitMs = 600_000): Promise<number> {
    const [waitMs] = await this.takeTokens(name, max, windowMs, 1, maxWaitMs);
    return waitMs!;
  }

  /**
   * Reserves `count` (1 or more) slots of the limit `takeToken` describes in one script call, one after the other,
   * exactly as `count` calls of `takeToken` at the same instant would (the same limit whatever the batching).
   * @returns per slot, in order: 0 to go now, else the ms until it
   * @throws RangeError when `count` is not a positive integer
   */
  async takeTokens(name: string, max: number, windowMs: number, count: number, maxWaitMs = 600_000): Promise<number[]> {
    if (!Number.isInteger(count) || count < 1) throw new RangeError(`takeTokens: count ${count} is not a positive integer`);
    return this.call(takeTokenScript, { slot: this.keys.rateLimit(name) }, { max, windowMs, maxWaitMs, count });
  }
}

/** The worker id a lease token (`<workerId>/<runId>`) names; '' when it names none. */
function workerOfHolder(holder: string): string {
  const slash = holder.indexOf('/');
  return slash > 0 ? holder.slice(0, slash) : '';
}

/**
 * Whether lease holder `holder` is a follow run (`isFollowRun`) of a worker other than `self` whose liveness key was
 * present or that is still on the roster (`live`): that worker follows the delegation and keeps its next check moving;
 * should it be dead, the dead-worker sweep ends the lease once a heartbeat names it (forgetWorker-2.lua takes it off
 * the roster only once its liveness key is gone). A send run's lease, this worker's own id (an earlier process under
 * it) and a holder whose worker is neither live nor listed are not.
 */
function followedByAnotherLive(holder: string | undefined, self: string, live: ReadonlySet<string>, isFollowRun: (holder: string) => boolean): boolean {
  if (holder === undefined || !isFollowRun(holder)) return false;
  const workerId = workerOfHolder(holder);
  return workerId !== '' && workerId !== self && live.has(workerId);
}
