/**
 * The order of message sends on the send queue: a delegation's `priority` (1 lowest to 10 highest, default 5) first,
 * then its place among its tenant's recent sends (`journal/send-order.ts`), as one BullMQ job priority. BullMQ serves
 * a lower number first and jobs of one number in the order they were added. Replies and CancelTasks carry no
 * priority: BullMQ serves jobs without one before every prioritized job, so a person's answer or a cancel never waits
 * behind a burst of new work.
 */
import { Queue, type Job, type JobsOptions, type QueueOptions } from 'bullmq';
import { z } from 'zod';
import { SEND_ORDER_REBASE_QUIET_MS, type SendOrderRebase } from './journal/send-order.ts';

/** Delegation priorities: whole numbers 1 (lowest) to 10 (highest). */
export const SEND_PRIORITY = { lowest: 1, highest: 10, default: 5 } as const;

/** A delegation's or workflow's `priority` (`SEND_PRIORITY`). */
export const SendPrioritySchema = z.number().int().min(SEND_PRIORITY.lowest).max(SEND_PRIORITY.highest);

/** The tenant of work that names none. */
export const DEFAULT_SEND_TENANT = 'default';

/**
 * BullMQ job priorities per delegation priority: each priority owns a band this wide; a place beyond the band stays
 * at its end (10 bands fit under BullMQ's limit, 2^21 - 1).
 */
const BAND = 200_000;

/** The BullMQ job priority of a message send: its delegation's `priority` first, then its tenant `place`. */
export function bullmqSendPriority(priority: number, place: number): number {
  const band = SEND_PRIORITY.highest - Math.min(SEND_PRIORITY.highest, Math.max(SEND_PRIORITY.lowest, Math.round(priority)));
  return band * BAND + 1 + Math.min(Math.max(0, Math.floor(place)), BAND - 2);
}

/**
 * The tenant place a message send job was added with, read back from its BullMQ job priority (`bullmqSendPriority`);
 * undefined for a job without one (a reply, a cancel). A send's next try is added at this place again: waiting for
 * a slot or for its agent to come back does not count as a new send of its tenant.
 */
export function placeOfSendPriority(jobPriority: number | undefined): number | undefined {
  if (jobPriority === undefined || !Number.isSafeInteger(jobPriority) || jobPriority < 1) return undefined;
  return (jobPriority - 1) % BAND;
}

/** What places a tenant's send (`SendOrder`). */
export interface SendPlaces {
  place(tenant: string): Promise<number>;
  /** The place a next try is added at, given its job's (`SendOrder.keep`: the clock's, when from before a rebase). */
  keep(place: number): Promise<number>;
  /** Rebases the clock when due (`SendOrder.rebase`), for a caller that saw the send queue hold no job. */
  rebase(quietMs?: number): Promise<SendOrderRebase>;
}

/** Job states a rebase of the send order waits on: any job in them, the queue is not idle (`rebaseOrderWhenIdle`). */
const HELD_STATES = ['waiting', 'prioritized', 'delayed', 'active', 'waiting-children'] as const;

/**
 * The send queue, fair: every message send added gets its BullMQ priority from its job data's `priority` and its
 * tenant's place (one `places.place` call, before the add). Replies and cancels are added as they are. The producer
 * and the workers both create their send queue as one.
 */
export class FairSendQueue extends Queue {
  constructor(name: string, options: QueueOptions, private readonly places: SendPlaces) {
    super(name, options);
  }

  /**
   * Adds a job; a message send is placed among its tenant's sends: at `options.place` when the caller took its place
   * already (`SendPlaces.place`, e.g. in the same round trip as its journal write); at `options.keptPlace`, the place
   * of the job whose next try this is (`placeOfSendPriority`), unless that is from before the clock's last rebase
   * (`SendPlaces.keep`, one read); else one is taken now.
   */
  override async add(name: string, data: unknown, options?: JobsOptions & { place?: number; keptPlace?: number }): Promise<Job> {
    const { place: taken, keptPlace, ...jobOptions } = options ?? {};
    const job = data as { kind?: string; priority?: number; tenant?: string };
    if ((job.kind ?? 'message') !== 'message') return super.add(name, data, jobOptions);
    const place = taken ?? (keptPlace !== undefined ? await this.places.keep(keptPlace) : await this.places.place(job.tenant ?? DEFAULT_SEND_TENANT));
    return super.add(name, data, { ...jobOptions, priority: bullmqSendPriority(job.priority ?? SEND_PRIORITY.default, place) });
  }

  /**
   * Rebases the send order's clock to place 0 when it is due and this queue holds no job (waiting, prioritized,
   * delayed, active, waiting for children: one BullMQ count, atomic), so the places stay inside their band
   * for as long as the fleet runs (docs/flow-control.md). No job held: no message send waits at a place the rebase
   * would put behind newer sends, and none runs that could add its next try at an old place. Returns `busy` (a job
   * held), else what `SendPlaces.rebase` did. `quietMs`: no send placed for this long before (default the send
   * order's, 5 s); the time the count took is added to it, so a send placed after the count always stops the rebase.
   * Throws what Redis throws. Called by the workers' reconcile sweep (one fleet-wide timer, every reconcile interval).
   */
  async rebaseOrderWhenIdle(quietMs: number = SEND_ORDER_REBASE_QUIET_MS): Promise<'busy' | SendOrderRebase> {
    const countedAt = performance.now();
    const counts = await this.getJobCounts(...HELD_STATES);
    if (Object.values(counts).some((count) => count > 0)) return 'busy';
    const since = Math.ceil(performance.now() - countedAt);
    return this.places.rebase(quietMs + since);
  }
}
