/**
 * A small app that embeds one cronraft member. Run three of them with the same peer list and
 * they form one cluster:
 *
 *   node dist/examples/member.js --listen 127.0.0.1:7001 --peers 127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003
 *
 * It logs leader changes and schedules a job every two seconds: each slot runs on exactly one
 * member, which prints it with its fencing token. On addresses other machines can reach, give
 * every member the same secret in CRONRAFT_SECRET (`npx cronraft secret` prints one).
 */
import { parseArgs } from 'node:util';
import { Cluster } from 'cronraft';

const { values } = parseArgs({
  options: {
    listen: { type: 'string', default: '127.0.0.1:7001' },
    peers: { type: 'string', default: '' },
    'data-dir': { type: 'string' },
    every: { type: 'string', default: '2s' },
    name: { type: 'string' }, // accepted for the demo's process list; the member's id is its address
  },
});

const peers = values.peers === '' ? [] : values.peers.split(',');
const cluster = new Cluster(peers, {
  listen: values.listen,
  dataDir: values['data-dir'],
  secret: process.env.CRONRAFT_SECRET,
});
const report = (event: Record<string, unknown>): void => {
  process.send?.(event);
};

cluster.on('leader', ({ leader, term }) => {
  console.log(leader === null ? `no leader (term ${term}): an election is under way` : `leader is ${leader === cluster.id ? 'me' : leader} (term ${term})`);
  report({ event: 'leader', leader, term });
});
cluster.on('error', (error) => console.log(`stopped by a fatal error: ${error.message}`));

cluster.schedule('report', { every: values.every }, (ctx) => {
  const lateMs = Date.now() - ctx.slot.getTime();
  console.log(`ran "${ctx.job}" for ${ctx.slot.toISOString().slice(11, 23)} (fencing token ${ctx.fencingToken}, attempt ${ctx.attempt}, ${lateMs} ms late)`);
});

await cluster.start();
const state = cluster.state();
console.log(`started as ${cluster.id}, libp2p peer id ${state.peerId ?? '?'}, log holds ${state.lastIndex} entries`);
report({ event: 'started', id: cluster.id });

const shutdown = async (): Promise<void> => {
  console.log('stopping (a leader hands over first)');
  await cluster.stop();
  process.exit(0);
};
process.on('SIGINT', () => void shutdown());
process.on('SIGTERM', () => void shutdown());
// Started by the demo (examples/demo.ts): once it is gone, however it went, so is this member.
process.on('disconnect', () => void shutdown());
process.on('message', (m) => {
  if (m === 'stop') void shutdown();
});
