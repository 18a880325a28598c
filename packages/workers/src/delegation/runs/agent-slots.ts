/**
 * Each agent's share of one kind of this process's slots (send, follow, reconcile): one agent that holds SendMessage,
 * keeps streams open or answers searches slowly cannot take all of a process's capacity for that kind (RT6). The
 * members `sendSlots`, `followSlots` and `reconcileSlots` of `WorkerContext`, created in `fleet.ts`. Fleet-wide limits
 * per agent are another layer (`flow.ts`, in Redis); these shares are per process and cost no Redis command.
 */
export class AgentSlots {
  private readonly held = new Map<string, number>();
  private inUse = 0;

  /**
   * `perAgent`: each agent's share (`sendSlotsPerAgent`, `followSlotsPerAgent`, `reconcileSlotsPerAgent`);
   * `concurrency`: this process's concurrency of that kind.
   */
  constructor(
    private readonly perAgent: number,
    private readonly concurrency: number,
  ) {}

  /**
   * Takes one of the agent's slots. Within its share always; beyond it only while more than a tenth of this
   * process's concurrency (at least one slot) stays free for other agents. False when the agent must wait.
   */
  take(agent: string): boolean {
    const held = this.held.get(agent) ?? 0;
    if (held >= this.perAgent && this.concurrency - this.inUse <= Math.max(1, Math.floor(this.concurrency / 10))) return false;
    this.held.set(agent, held + 1);
    this.inUse++;
    return true;
  }

  /** Gives back a slot taken with `take`. */
  release(agent: string): void {
    const held = this.held.get(agent) ?? 0;
    if (held === 0) return;
    this.inUse--;
    if (held <= 1) this.held.delete(agent);
    else this.held.set(agent, held - 1);
  }

  /** Slots the agent holds now (tests and logs). */
  heldBy(agent: string): number {
    return this.held.get(agent) ?? 0;
  }
}
