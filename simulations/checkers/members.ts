import type { NodeId } from '../../src/raft/types.js';
import type { SimMember } from '../member.js';

/**
 * What the run checkers need to know of each member's process, watched from outside it: when
 * its latest stall ends, when it last heard from a leader (or led), and which of its lives
 * crashed. The member's own bookkeeping (its driver's `lastHeard`) is what is under test, so
 * it is not read here.
 */
export class MemberWatch {
  readonly #members: Map<NodeId, SimMember>;
  /** True time at which the latest stall of each member ends (its timers wait until then). */
  readonly #pauseEnd = new Map<NodeId, number>();
  /** True time at which each member last led, or took in a message from the member it then followed. */
  readonly #heardLeader = new Map<NodeId, number>();
  /**
   * True time at which each member was last seen on a wire protocol below 2, whose heartbeats say
   * nothing of its answers: its lease then counts from the leader's messages (Member.holdsLease).
   */
  readonly #leaseByMessages = new Map<NodeId, number>();
  /** True time at which each member last led. */
  readonly #led = new Map<NodeId, number>();
  /** True time at which each member sent the latest of its messages that a member leading took in. */
  readonly #answered = new Map<NodeId, number>();
  /** Per member, the process lives that were stopped (crashed). */
  readonly #stopped = new Map<NodeId, number>();
  /** Per member, the latest process life whose member stopped for good (removed, or failed) while its process went on. */
  readonly #failed = new Map<NodeId, number>();

  constructor(members: readonly SimMember[]) {
    this.#members = new Map(members.map((m) => [m.id, m]));
  }

  /** A member joined the run. */
  add(m: SimMember): void {
    this.#members.set(m.id, m);
  }

  member(id: NodeId): SimMember | undefined {
    return this.#members.get(id);
  }

  /** After every event: stalls begun or made longer, and leaders. */
  observe(t: number): void {
    for (const m of this.#members.values()) {
      if (m.pausedUntil > (this.#pauseEnd.get(m.id) ?? 0)) this.#pauseEnd.set(m.id, m.pausedUntil);
      if (m.up && m.driver?.node.role === 'leader') {
        this.#heardLeader.set(m.id, t);
        this.#led.set(m.id, t);
      }
      if (m.up && m.member !== null && m.member.protocol < 2) this.#leaseByMessages.set(m.id, t);
    }
  }

  /** True time at which `id` last held its lease by its leader's messages alone (protocol 1), if ever. */
  leaseByMessages(id: NodeId): number | undefined {
    return this.#leaseByMessages.get(id);
  }

  /**
   * `id` took in a message from `from` (after any stall), sent at true time `sentT`: from its
   * leader, it renews its contact; taken in by a leader, it is an answer a leader heard.
   */
  onReceived(t: number, id: NodeId, from: NodeId, sentT: number | undefined): void {
    const node = this.#members.get(id)?.driver?.node;
    if (node === undefined) return;
    if (node.leader === from) this.#heardLeader.set(id, t);
    if (node.role === 'leader' && sentT !== undefined && sentT > (this.#answered.get(from) ?? Number.NEGATIVE_INFINITY)) this.#answered.set(from, sentT);
  }

  /** True time at which `id` last led, if ever. */
  led(id: NodeId): number | undefined {
    return this.#led.get(id);
  }

  /** True time at which `id` sent the latest of its messages that a leader took in, if any. */
  answered(id: NodeId): number | undefined {
    return this.#answered.get(id);
  }

  /** Its process life `incarnation` is stopping (a crash): its runs must end at once. */
  onStop(id: NodeId, incarnation: number): void {
    this.#stopped.set(id, incarnation);
  }

  /** Its member stopped for good in process life `incarnation` (CRONRAFT_REMOVED, a fatal error): it starts nothing more. */
  onFatal(id: NodeId, incarnation: number): void {
    this.#failed.set(id, incarnation);
  }

  /**
   * Whether the member of process life `incarnation` of `id` stopped or is stopping: the life is
   * over, the member stopped for good in it, or its graceful stop began (which may wait for the
   * app's runExclusive tasks after its member handed its work over, as Cluster.stop() does).
   */
  isStopped(id: NodeId, incarnation: number): boolean {
    return this.isOver(id, incarnation) || (this.#failed.get(id) ?? 0) >= incarnation || this.#members.get(id)?.stoppingIncarnation === incarnation;
  }

  /** Whether `incarnation` of `id` is over (stopped or replaced by a later one). */
  isOver(id: NodeId, incarnation: number): boolean {
    const m = this.#members.get(id);
    return (this.#stopped.get(id) ?? 0) >= incarnation || m === undefined || m.incarnation !== incarnation || !m.up;
  }

  /** True time at which the latest stall of `id` ends (0 if none). */
  pauseEnd(id: NodeId): number {
    return this.#pauseEnd.get(id) ?? 0;
  }

  /** Whether `id` is stalled now. */
  paused(id: NodeId, t: number): boolean {
    return t < this.pauseEnd(id);
  }

  /** True time at which `id` last led or heard from its leader, if ever. */
  heardLeader(id: NodeId): number | undefined {
    return this.#heardLeader.get(id);
  }
}
