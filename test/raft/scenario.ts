import type { ConfChange } from '../../src/raft/conf-change.js';
import type { Message } from '../../src/raft/types.js';
import { TestNetwork } from './network.js';

/**
 * Runs a Raft scenario script (after etcd-raft's testdata/*.txt) and returns its trace: each
 * command, then what it caused. A new scenario is a new text file, not new test code.
 *
 *   nodes a b c [election=10 heartbeat=1]   create the network (must come first)
 *   campaign a                             a starts an election (pre-vote first)
 *   tick a [n] / tick-all [n]              advance logical time (tick-all also delivers)
 *   propose a <text>                       propose on a
 *   transfer a b                           a hands leadership to b
 *   read a <ctx>                           a linearizable read on a
 *   stabilize                              deliver messages until quiet, printing each
 *   isolate a / cut a b / drop a b / recover   partitions
 *   restart a                              a restarts from what it persisted
 *   add-node d                             start d empty, outside the configuration
 *   conf a add-learner|promote|remove d    propose a change of the configuration on a
 *   config                                 each node's configuration
 *   status                                 role, term, leader, commit and last index of each node
 *   applied a                              what a applied
 *   # comment
 */
export function runScenario(script: string): string {
  let net: TestNetwork | null = null;
  const out: string[] = [];
  const need = (): TestNetwork => {
    if (net === null) throw new Error('the first command must be "nodes"');
    return net;
  };
  for (const raw of script.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) {
      out.push(raw);
      continue;
    }
    out.push(`> ${line}`);
    const [cmd, ...args] = line.split(/\s+/) as [string, ...string[]];
    const arg = (i: number): string => {
      const v = args[i];
      if (v === undefined) throw new Error(`${cmd}: argument ${i + 1} is missing`);
      return v;
    };
    switch (cmd) {
      case 'nodes': {
        const ids = args.filter((a) => !a.includes('='));
        const opt = (name: string, fallback: number): number => Number(args.find((a) => a.startsWith(`${name}=`))?.split('=')[1] ?? fallback);
        net = new TestNetwork(ids, { electionTicks: opt('election', 10), heartbeatTicks: opt('heartbeat', 1), seed: opt('seed', 1) });
        break;
      }
      case 'campaign':
        need().node(arg(0)).campaign();
        break;
      case 'tick':
        need().tick(arg(0), Number(args[1] ?? 1));
        break;
      case 'tick-all':
        for (let i = 0; i < Number(args[0] ?? 1); i++) {
          need().tickAll(1);
        }
        break;
      case 'propose':
        out.push(`  ${JSON.stringify(need().propose(arg(0), args.slice(1).join(' ')))}`);
        break;
      case 'transfer':
        out.push(`  target: ${need().node(arg(0)).transferLeadership(arg(1)) ?? 'none'}`);
        break;
      case 'read':
        out.push(`  accepted: ${need().node(arg(0)).readIndex(Number(arg(1)))}`);
        break;
      case 'stabilize':
        out.push(...stabilize(need()));
        break;
      case 'isolate':
        need().isolate(arg(0));
        break;
      case 'cut':
        need().cut(arg(0), arg(1));
        break;
      case 'drop':
        need().drop(arg(0), arg(1));
        break;
      case 'recover':
        need().recover();
        break;
      case 'restart':
        need().restart(arg(0));
        break;
      case 'add-node':
        need().addMember(arg(0));
        break;
      case 'conf':
        {
        // `conf <proposer> <type> <id> [peer id]`.
        const change = (args[3] === undefined ? { type: arg(1), id: arg(2) } : { type: arg(1), id: arg(2), peerId: args[3] }) as ConfChange;
        out.push(`  ${JSON.stringify(need().confChange(arg(0), change))}`);
        }
        break;
      case 'config':
        for (const id of need().ids) {
          const c = need().node(id).configuration;
          out.push(`  ${id}: voters=${c.voters.join(',')} learners=${c.learners.join(',') || '-'}${c.peerIds.length === 0 ? '' : ` peerIds=${c.peerIds.map(([m, p]) => `${m}=${p}`).join(',')}`}`);
        }
        break;
      case 'status':
        for (const id of need().ids) {
          const n = need().node(id);
          out.push(`  ${id}: ${n.role} term=${n.term} leader=${n.leader ?? '-'} commit=${n.log.committed} last=${n.log.lastIndex()} applied=${need().member(id).applied.length}`);
        }
        break;
      case 'applied':
        out.push(`  ${JSON.stringify(need().appliedTexts(arg(0)))}`);
        out.push(`  reads: ${JSON.stringify(need().member(arg(0)).readStates)}`);
        break;
      default:
        throw new Error(`unknown command: ${cmd}`);
    }
  }
  return out.join('\n');
}

/** Delivers until quiet and prints every message that arrived. */
function stabilize(net: TestNetwork): string[] {
  const lines: string[] = [];
  for (let round = 0; round < 1000; round++) {
    const before = net.delivered.length;
    const sent = net.deliverOnce();
    if (sent.length === 0) return lines;
    const arrived = new Set(net.delivered.slice(before));
    for (const m of sent) lines.push(`  ${describe(m)}${arrived.has(m) ? '' : '  (dropped)'}`);
  }
  throw new Error('did not stabilize');
}

function describe(m: Message): string {
  const head = `${m.from}->${m.to} ${m.type} term=${m.term}`;
  switch (m.type) {
    case 'prevote':
    case 'vote':
      return `${head} last=${m.lastIndex}@${m.lastTerm}`;
    case 'prevote-resp':
    case 'vote-resp':
      return `${head}${m.reject ? ' REJECT' : ''}`;
    case 'append':
      return `${head} prev=${m.prevIndex}@${m.prevTerm} entries=[${m.entries.map((e) => `${e.index}@${e.term}`).join(',')}] commit=${m.commit}`;
    case 'append-resp':
      return `${head} index=${m.index}${m.reject ? ` REJECT hint=${m.hintIndex}@${m.hintTerm}` : ''}`;
    case 'heartbeat':
      return `${head} commit=${m.commit}${m.readCtx > 0 ? ` read=${m.readCtx}` : ''}`;
    case 'heartbeat-resp':
      return `${head}${m.readCtx > 0 ? ` read=${m.readCtx}` : ''}`;
    case 'propose':
      return `${head} n=${m.proposals.length}`;
    case 'propose-resp':
      return `${head} index=${m.index}${m.reject ? ' REJECT' : ''}`;
    case 'read-index':
    case 'read-index-resp':
      return `${head} ctx=${m.ctx}`;
    case 'timeout-now':
      return head;
    case 'snapshot':
      return `${head} snapshot=${m.snapshot.index}@${m.snapshot.term} bytes=${m.snapshot.data.byteLength}`;
    case 'conf-propose':
      return `${head} ${m.change.type} ${m.change.id}`;
    case 'conf-propose-resp':
      return `${head} index=${m.index}${m.reason === null ? '' : ` REFUSED ${m.reason}`}`;
  }
}
