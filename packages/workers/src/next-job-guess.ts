/**
 * Whether a finishing job should ask BullMQ for the next one in the same script (moveToFinished's fetch of the next
 * job). Asking saves a moveToActive when a job waits (about half its Redis CPU), and costs a fetch that finds nothing
 * when none does (the same again: its read of the queue's meta, the delayed, wait and prioritized sets; see
 * docs/performance.md, "The send queue's BullMQ costs"). A send job is short, so its worker's slots are mostly free
 * and the next send is added after the finish: without this, nine finishes in ten asked and found nothing.
 *
 * The rule: ask while asking finds a job; after a finish that asked and found none, ask again only every
 * `probeEvery`-th finish (a backlog that builds meanwhile is fetched by the worker's own moveToActive, as after a
 * fetch that found none, and the next probe finds it). Pure: no clock, no I/O. Only the Redis work changes: which
 * job runs next is BullMQ's, as before (a finish that does not ask leaves the fetch to the worker's loop, a round
 * trip later).
 */
export class NextJobGuess {
  private found = true;
  private skipped = 0;

  /** `probeEvery`: while nothing is found, one finish in this many asks (whole number ≥ 1; 1: every finish asks). Default 8. */
  constructor(private readonly probeEvery = 8) {
    if (!Number.isSafeInteger(probeEvery) || probeEvery < 1) throw new RangeError(`NextJobGuess: probeEvery must be a whole number >= 1, got ${probeEvery}`);
  }

  /** Whether this finish asks for the next job. Call once per finish that BullMQ would let ask. */
  ask(): boolean {
    if (this.found) return true;
    this.skipped += 1;
    if (this.skipped < this.probeEvery) return false;
    this.skipped = 0;
    return true;
  }

  /** What a finish that asked got: a job (`true`) or none. */
  record(found: boolean): void {
    this.found = found;
    if (found) this.skipped = 0;
  }
}
