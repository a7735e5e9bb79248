import { SeededRandom } from '../src/time/random.js';
import { injectAckPowerCuts, injectClockFaults, injectCrashes, injectDeploy, injectLostAnswers, injectPartitions, injectPauses, injectUpgrades, LOST_ANSWERS_EVERY_MS, MAX_ACK_POWER_CUTS, type FaultContext } from './faults.js';
import { barriersRandom, startBarriers } from './barriers.js';
import { deployRandom } from './deploys.js';
import { startOutsideEmits } from './fanout.js';
import { SimMember } from './member.js';
import { MembershipFaults, membershipRandom } from './membership.js';
import type { RunLoop } from './run-loop.js';
import { notesRandom, startNotes, upgradeRandom } from './upgrades.js';
import type { SimWorld } from './world.js';

/**
 * A run's first phase, where safety is checked: the founding members start, application
 * proposals come from random members, every fault the switches allow is scheduled at the rates
 * the seed drew (partitions, crashes and power cuts, clock faults, pauses, a rolling upgrade,
 * a rolling deploy of changed jobs, configuration changes), and the run goes on for `durationMs`, checked after every event.
 * Faults that draw from streams of their own leave every other fault where it was.
 */
export async function runFaultPhase(world: SimWorld, loop: RunLoop): Promise<void> {
  const { scheduler, network, random, members, ids, drawn, switches, seed, record, restart, onCrash } = world;
  for (const m of members) await m.start(network, world.config, world.hooks);

  // The workload: application proposals from random members for the whole run.
  if (world.options.proposals !== false) {
    let proposals = 0;
    const workload = (): void => {
      world.propose(`p${++proposals}`);
      scheduler.after(random.int(1, drawn.proposeEveryMs), workload);
    };
    scheduler.after(random.int(1, drawn.proposeEveryMs), workload);
  }

  if (world.readChecks !== null) startBarriers(scheduler, barriersRandom(seed), () => world.members, world.durationMs, world.readChecks);
  if (world.fanout !== null) startOutsideEmits(scheduler, world.fanoutRandom, world.fanout, () => world.members, () => world.fanoutEmitting);

  const faultContext: FaultContext = { scheduler, network, random, members, ids, untilMs: world.durationMs, record, trace: (line: string) => world.trace.update(`${scheduler.nowMs} ${line}\n`) };
  // Whether each partition closes its connections or leaves them open, from a stream of its own.
  if (switches.partitions) {
    injectPartitions(faultContext, drawn.partitionEveryMs, new SeededRandom(seed * 6271 + 29));
    const lost = new SeededRandom(seed * 7727 + 41);
    injectLostAnswers({ ...faultContext, random: lost }, lost.int(LOST_ANSWERS_EVERY_MS[0], LOST_ANSWERS_EVERY_MS[1]));
  }
  if (switches.crashes) {
    injectCrashes(faultContext, drawn.crashEveryMs, restart, onCrash);
    // From a stream of their own, so that they leave every other fault where it was.
    const cuts = new SeededRandom(seed * 7919 + 17);
    injectAckPowerCuts({ ...faultContext, random: cuts }, cuts.int(1, MAX_ACK_POWER_CUTS), restart, onCrash);
  }
  if (switches.clocks) injectClockFaults(faultContext, drawn.clockEveryMs);
  if (switches.pauses) injectPauses(faultContext, drawn.pauseEveryMs);
  if (world.versionsMode === 'upgrade') {
    // From streams of their own, so that they leave every other fault where it was.
    injectUpgrades({ ...faultContext, random: upgradeRandom(seed) }, world.nextRelease, restart, onCrash);
    startNotes(scheduler, members, world.nextRelease.stateMachine.max, notesRandom(seed), world.versionChecks);
  }
  // From a stream of its own, so that it leaves every other fault where it was.
  if (world.deploy !== null) injectDeploy({ ...faultContext, random: deployRandom(seed) }, world.deploy.jobs, restart, onCrash);
  if (world.changes) {
    // From a stream of its own, so that it leaves every other fault where it was.
    const membership = new MembershipFaults(
      {
        ctx: { ...faultContext, members, ids, random: membershipRandom(seed) },
        checker: world.configurations,
        create: (id) => {
          const m = new SimMember(id, seed * 31 + members.length, scheduler);
          // A new instance runs the newest release in play: in a rolling upgrade, the next one.
          if (world.versionsMode === 'upgrade') m.versions = world.nextRelease;
          // And the jobs of the deploy in play (its app's newest code).
          if (world.deploy !== null) m.jobs = world.deploy.jobs;
          world.byId.set(id, m);
          world.runChecks.addMember(m);
          return m;
        },
        start: world.start,
        onStop: world.onStop,
        removedGraceMs: 2 * world.settings.timing.electionTimeoutMs,
      },
      world.membershipMode,
    );
    world.membership = membership;
    membership.inject();
  }

  await loop.run(world.durationMs);
}
