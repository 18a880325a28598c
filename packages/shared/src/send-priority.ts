/**
 * The order of message sends on the send queue: a delegation's `priority` (1 lowest to 10 highest, default 5) first,
 * then its place among its tenant's recent sends (`journal/send-order.ts`), as one BullMQ job priority. BullMQ serves
 * a lower number first and jobs of one number in the order they were added. Replies and CancelTasks carry no
 * priority: BullMQ serves jobs without one before every prioritized job, so a person's answer or a cancel never waits
 * behind a burst of new work.
 */
import { Queue, type Job, type JobsOptions, type QueueOptions } from 'bullmq';
import { z } from 'zod';

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
}

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
   * already (`SendPlaces.place`, e.g. in the same round trip as its journal write), else one is taken now.
   */
  override async add(name: string, data: unknown, options?: JobsOptions & { place?: number }): Promise<Job> {
    const { place: taken, ...jobOptions } = options ?? {};
    const job = data as { kind?: string; priority?: number; tenant?: string };
    if ((job.kind ?? 'message') !== 'message') return super.add(name, data, jobOptions);
    const place = taken ?? (await this.places.place(job.tenant ?? DEFAULT_SEND_TENANT));
    return super.add(name, data, { ...jobOptions, priority: bullmqSendPriority(job.priority ?? SEND_PRIORITY.default, place) });
  }
}
