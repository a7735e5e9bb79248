/**
 * A small app that embeds one cronraft member. Run three of them with the same peer list and
 * they form one cluster:
 *
 *   node dist/examples/member.js --listen 127.0.0.1:7001 --peers 127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003
 *
 * It logs leader changes and, every --propose-every ms, appends a line to the replicated log.
 */
import { parseArgs } from 'node:util';
import { Cluster, type CronraftError } from 'cronraft';

const { values } = parseArgs({
  options: {
    listen: { type: 'string', default: '127.0.0.1:7001' },
    peers: { type: 'string', default: '' },
    'data-dir': { type: 'string' },
    'propose-every': { type: 'string', default: '2000' },
    name: { type: 'string' },
  },
});

const peers = values.peers === '' ? [] : values.peers.split(',');
const cluster = new Cluster(peers, {
  listen: values.listen,
  ...(values['data-dir'] === undefined ? {} : { dataDir: values['data-dir'] }),
});
const name = values.name ?? cluster.id;
const proposeEveryMs = Number(values['propose-every']);
const report = (event: Record<string, unknown>): void => {
  process.send?.(event);
};

cluster.on('leader', ({ leader, term }) => {
  console.log(leader === null ? `no leader (term ${term}): an election is under way` : `leader is ${leader === cluster.id ? 'me' : leader} (term ${term})`);
  report({ event: 'leader', leader, term });
});
cluster.on('error', (error) => console.log(`stopped by a fatal error: ${error.message}`));

await cluster.start();
const state = cluster.state();
console.log(`started as ${cluster.id}, libp2p peer id ${state.peerId ?? '?'}, log holds ${state.lastIndex} entries`);
report({ event: 'started', id: cluster.id });

let counter = 0;
const timer = setInterval(() => {
  const text = `${name} says hello #${++counter}`;
  const t0 = performance.now();
  cluster.propose(text).then(
    ({ index }) => console.log(`committed #${index} "${text}" in ${(performance.now() - t0).toFixed(1)} ms`),
    (error: CronraftError) => console.log(`proposal failed: ${error.code} ${error.message}`),
  );
}, proposeEveryMs);

const shutdown = async (): Promise<void> => {
  clearInterval(timer);
  console.log('stopping (a leader hands over first)');
  await cluster.stop();
  process.exit(0);
};
process.on('SIGINT', () => void shutdown());
process.on('SIGTERM', () => void shutdown());
process.on('message', (m) => {
  if (m === 'stop') void shutdown();
});
