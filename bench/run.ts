/**
 * The benchmark entry point: `npm run bench -- <name> [--quick] [--no-peers] [--no-failover] [--jobs-only]`.
 * Prints a table and a JSON line, and writes the JSON to bench-results/<name>.json. Unless
 * --no-peers is given, the raft bench also measures etcd 3.4 the same way (bench/etcd.ts) and
 * prints both side by side. --no-failover skips the kill -9 runs, for quicker measurements of
 * latency and throughput alone. --scrape-only runs only the scheduler bench's scraping of members
 * with 10,000 jobs (bench/scrape-lateness.ts). --no-probe leaves out the raft bench's second cluster, whose
 * serial phases are probed for the breakdown of the slow commits (bench/tail.ts). --jobs-only runs only the
 * scheduler bench's rows of many jobs registered (bench/jobs-registered.ts). `codec` measures
 * the hand-written CBOR paths against cborg alone (bench/codec.ts), which the raft bench also
 * does, after its clusters. `membership` measures a new instance's way to voter and commit latency
 * with learners (bench/membership.ts). `fanout` measures fan-out's items/s, emit-to-start latency
 * and re-delivery after kill -9 of a consumer, beside BullMQ with Redis unless --no-peers
 * (bench/fanout.ts, bench/bullmq.ts).
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { cpus, loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { benchCodec, CODEC_HEADERS, codecRows } from './codec.js';
import { benchDisk, type DiskBaseline } from './disk.js';
import { benchBullmq } from './bullmq.js';
import { comparisonRows, etcdLabel, startEtcd, type EtcdBenchResult, type EtcdSession } from './etcd.js';
import { benchFanout, FANOUT_HEADERS, fanoutRows, FULL_SIZES, healthLines, QUICK_SIZES, STEADY_RATE } from './fanout.js';
import { benchRaft, COLD_COMMITS, LOAD_WARMUP_MS, raftRows } from './raft.js';
import { benchJobsRegistered, jobsRegisteredRows } from './jobs-registered.js';
import { benchMembership, membershipRows } from './membership.js';
import { benchScheduler, schedulerRows } from './scheduler.js';
import { benchScrapeManyJobs, scrapeManyJobsRows } from './scrape-lateness.js';
import { WINDOW_COMMITS } from './serial-sides.js';
import { fmt, printTable } from './stats.js';
import { printAttribution } from './tail.js';

/** Keys of the scrape bench's raw timings, left out of its JSON record (see below). */
const RAW_TIMINGS = new Set(['answers', 'ownStalls', 'stalls', 'gc']);

const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: {
    quick: { type: 'boolean', default: false },
    // Node 20's parseArgs has no negated options, so "no-peers" is the option's literal name.
    'no-peers': { type: 'boolean', default: false },
    'no-failover': { type: 'boolean', default: false },
    'no-probe': { type: 'boolean', default: false },
    'jobs-only': { type: 'boolean', default: false },
    'scrape-only': { type: 'boolean', default: false },
  },
});
const name = positionals[0] ?? 'raft';

/** What became of a peer's comparison (etcd, BullMQ); `failed` makes the bench exit non-zero. */
type PeerOutcome<T> = T | { skipped: string } | { failed: string };

/**
 * Runs a peer's side of a comparison after cronraft's (one after the other, never at once: the
 * two would compete for CPU and disk), unless --no-peers. A peer bench that breaks is reported
 * as failed and fails the bench: cronraft's figures are still worth printing.
 */
async function peerRun<T>(run: () => Promise<T | { skipped: string }>): Promise<PeerOutcome<T>> {
  if (values['no-peers']) return { skipped: '--no-peers' };
  try {
    return await run();
  } catch (e) {
    process.exitCode = 1;
    return { failed: e instanceof Error ? e.message : String(e) };
  }
}

async function main(): Promise<void> {
  if (name === 'scheduler') {
    const startedAt = Date.now();
    const scrapeOnly = values['scrape-only'];
    const loadAtStart = loadavg()[0] ?? Number.NaN;
    const lateness = values['jobs-only'] || scrapeOnly
      ? null
      : await benchScheduler(values.quick ? { idleSeconds: 8, loadSeconds: 5, loadJobs: 1000 } : { idleSeconds: 30, loadSeconds: 15, loadJobs: 1000 });
    const loadBeforeScrape = loadavg()[0] ?? Number.NaN;
    const scrape = values['jobs-only'] ? null : await benchScrapeManyJobs(values.quick ? 8 : 20);
    const loadBefore = loadavg()[0] ?? Number.NaN;
    const jobs = scrapeOnly ? null : await benchJobsRegistered([1000, 3000, 10_000]);
    if (lateness !== null) {
      console.log('\ncronraft scheduler: three processes on 127.0.0.1, level with sync on, default settings; croner alone on one process');
      console.log(`load average (1 min) at the start: ${fmt(loadAtStart)}, on ${cpus().length} CPUs\n`);
      printTable(['measure', 'cronraft', 'croner (1 process)', 'target'], schedulerRows(lateness));
    }
    if (scrape !== null) {
      console.log(`\nscraping many jobs: three processes on 127.0.0.1 (level with sync on, default settings, http on), each registering the same ${scrape.jobs} jobs ({ every: 1h })`);
      console.log('and the same few every 1 s; a scraper in a process of its own GETs /metrics then /v1/state of every member every 100 ms (each member at its own offset in the 100 ms, as Prometheus spreads its targets) in alternate 2 s windows');
      console.log(`load average (1 min) before: ${fmt(loadBeforeScrape)}, after: ${fmt(loadavg()[0] ?? Number.NaN)}, on ${cpus().length} CPUs\n`);
      printTable(['measure', 'cronraft', 'target'], scrapeManyJobsRows(scrape));
    }
    if (jobs !== null) {
      console.log('\nmany jobs: three members in one process (level with sync on, default settings), each registering the same jobs ({ every: 1h });');
      console.log('croner registering them alone on one process; heap used after a full GC, less the same before the first schedule(); each size a fresh process');
      // Wall-clock figures (stalls above all) stretch with what else the machine runs.
      console.log(`load average (1 min) before: ${fmt(loadBefore)}, after: ${fmt(loadavg()[0] ?? Number.NaN)}, on ${cpus().length} CPUs\n`);
      printTable(['measure', 'cronraft (3 members)', 'croner (1 process)', 'target', 'ratio to target (<= 1 meets it)'], jobsRegisteredRows(jobs));
    }
    console.log(`\nbench took ${((Date.now() - startedAt) / 1000).toFixed(1)} s`);
    // The scrape's raw timings (every answer, every stall seen) are for the rows above, not the record.
    const json = JSON.stringify({ bench: name, node: process.version, at: new Date().toISOString(), result: { ...lateness, scrape, jobs } }, (key, value: unknown) => (RAW_TIMINGS.has(key) && Array.isArray(value) ? undefined : value));
    console.log(`\n${json}`);
    await mkdir('bench-results', { recursive: true });
    await writeFile(`bench-results/${name}.json`, `${json}\n`);
    return;
  }
  if (name === 'codec') {
    console.log('\nthe hand-written CBOR paths against cborg alone, alternating windows of one process\n');
    const codec = await benchCodec();
    printTable(CODEC_HEADERS, codecRows(codec));
    const json = JSON.stringify({ bench: name, node: process.version, at: new Date().toISOString(), result: codec });
    console.log(`\n${json}`);
    await mkdir('bench-results', { recursive: true });
    await writeFile(`bench-results/${name}.json`, `${json}\n`);
    return;
  }
  if (name === 'membership') {
    const startedAt = Date.now();
    const loadBefore = loadavg()[0] ?? Number.NaN;
    const membership = await benchMembership();
    console.log('\ncronraft membership: each member in its own process on 127.0.0.1, level with sync on, default settings but the learner\'s stable time (none)');
    console.log('(a) 4 voters (voters: 5) hold the jobs, one new empty instance is started; (b) 3 voters, then 12 more join: 5 voters and 10 learners, the same leader');
    console.log(`load average (1 min) before: ${fmt(loadBefore)}, after: ${fmt(loadavg()[0] ?? Number.NaN)}, on ${cpus().length} CPUs\n`);
    printTable(['measure', 'cronraft', 'target'], membershipRows(membership));
    console.log(`\nbench took ${((Date.now() - startedAt) / 1000).toFixed(1)} s`);
    const json = JSON.stringify({ bench: name, node: process.version, at: new Date().toISOString(), result: membership, load: { before: loadBefore, after: loadavg()[0] ?? Number.NaN } });
    console.log(`\n${json}`);
    await mkdir('bench-results', { recursive: true });
    await writeFile(`bench-results/${name}.json`, `${json}\n`);
    return;
  }
  if (name === 'fanout') {
    await fanout();
    return;
  }
  if (name !== 'raft') {
    console.error(`Unknown benchmark "${name}". Available: raft, scheduler, codec, membership, fanout`);
    process.exitCode = 2;
    return;
  }
  const sizes = values.quick
    ? { warmupMs: 2000, serialCount: 500, coldLoadMs: 1000, loadWarmupMs: 1000, loadSeconds: 2, failoverRuns: 3 }
    : { warmupMs: 8000, serialCount: 3000, coldLoadMs: 3000, loadWarmupMs: LOAD_WARMUP_MS - 3000, loadSeconds: 10, failoverRuns: 5 };
  const options = { ...sizes, failoverRuns: values['no-failover'] ? 0 : sizes.failoverRuns, probe: !values['no-probe'] };
  const startedAt = Date.now();
  const loadBefore = loadavg()[0] ?? Number.NaN;
  // The disk, before and after: it bounds the serial latency and its speed drifts (bench/disk.ts).
  const diskMs = values.quick ? 1000 : 2000;
  const diskBefore = await benchDisk(diskMs);
  // etcd's cluster runs beside cronraft's through the serial phases, which alternate windows of
  // the two (bench/serial-sides.ts); its load and failovers come after cronraft's.
  const started = await peerRun(() => startEtcd());
  const session = 'side' in started ? started : null;
  let raft: Awaited<ReturnType<typeof benchRaft>>;
  try {
    raft = await benchRaft(options, session?.side);
  } catch (e) {
    await session?.abort();
    throw e;
  }
  const { result, phases, peerSerial } = raft;
  const finishEtcd = async (s: EtcdSession): Promise<PeerOutcome<EtcdBenchResult>> => {
    if (peerSerial !== null) return peerRun(() => s.finish(options, peerSerial));
    await s.abort();
    return { failed: 'no serial phases measured' };
  };
  const etcd: PeerOutcome<EtcdBenchResult> = 'side' in started ? await finishEtcd(started) : started;

  // The codec's own figures, in this same run, with no cluster running beside them.
  const codec = await benchCodec();
  const diskAfter = await benchDisk(diskMs);
  const disk = { before: diskBefore, after: diskAfter };
  const warmup = [
    diskLine(disk),
    // Wall-clock figures, the tails above all, stretch with what else the machine runs.
    `load average (1 min) before: ${fmt(loadBefore)}, after: ${fmt(loadavg()[0] ?? Number.NaN)}, on ${cpus().length} CPUs`,
    `each workload measured after a warm-up: the cold commits, then ${options.warmupMs / 1000} s serial; ${(options.coldLoadMs + options.loadWarmupMs) / 1000} s concurrent, then ${options.loadSeconds} s measured`,
    `the cold rows are the first ${COLD_COMMITS} commits after start and the first ${options.coldLoadMs / 1000} s of concurrent load`,
  ].join('\n');
  if ('serial' in etcd) {
    console.log(`\ncronraft vs ${etcdLabel(etcd)} (${etcd.version}): three processes each on 127.0.0.1, sync on, default settings`);
    console.log('cronraft proposes inside the leader process; etcd is driven from the bench process through its HTTP/JSON gateway');
    console.log(`both clusters run through the serial phases (cold, warm-up, serial), which alternate windows of ${WINDOW_COMMITS} commits of each; then each one's concurrent load alone`);
    console.log(`${warmup}\n`);
    printTable(['measure', 'cronraft', etcdLabel(etcd), 'ratio (> 1: cronraft better)', 'target'], comparisonRows(result, etcd));
  } else {
    console.log('\ncronraft: three processes on 127.0.0.1, level with sync on, default settings');
    console.log(`${warmup}\n`);
    printTable(['measure', 'cronraft', 'target'], raftRows(result));
    if ('skipped' in etcd) console.log(`\netcd comparison skipped: ${etcd.skipped}`);
    else console.error(`\netcd comparison failed: ${etcd.failed}`);
  }
  for (const phase of phases) printAttribution(phase);
  console.log('\nthe hand-written CBOR paths against cborg alone, alternating windows of the bench process\n');
  printTable(CODEC_HEADERS, codecRows(codec));
  console.log(`\nbench took ${((Date.now() - startedAt) / 1000).toFixed(1)} s`);
  const json = JSON.stringify({ bench: name, node: process.version, at: new Date().toISOString(), result, peers: { etcd }, disk, codec });
  console.log(`\n${json}`);
  await mkdir('bench-results', { recursive: true });
  await writeFile(`bench-results/${name}.json`, `${json}\n`);
}

/** `fanout`: cronraft's fan-out, then BullMQ with Redis, one after the other (never at once: they would compete for the CPU). */
async function fanout(): Promise<void> {
  const startedAt = Date.now();
  const loadBefore = loadavg()[0] ?? Number.NaN;
  const sizes = values.quick ? QUICK_SIZES : FULL_SIZES;
  const { measures: ours, health } = await benchFanout(sizes);
  const peer = await peerRun(() => benchBullmq(sizes));
  const measured = 'bulk' in peer ? peer : null;
  console.log('\ncronraft fan-out: three member processes on 127.0.0.1, level with sync on, default settings; a slot emits 100-byte items, consumers do nothing (parallelism 64 each)');
  if (measured !== null) {
    console.log(`BullMQ ${measured.bullmqVersion} with Redis ${measured.redisVersion} (append-only file, fsync every second): addBulk from the bench process, three worker processes (concurrency 64), defaults otherwise`);
  }
  console.log(`the steady run: ${STEADY_RATE.toLocaleString('en-US')} items/s for ${sizes.steadySeconds} s; re-delivery: one consumer holds its items and is killed once the others did the rest`);
  console.log(`load average (1 min) before: ${fmt(loadBefore)}, after: ${fmt(loadavg()[0] ?? Number.NaN)}, on ${cpus().length} CPUs\n`);
  printTable(FANOUT_HEADERS, fanoutRows(ours, measured));
  console.log('\ncronraft members meanwhile (the leader also samples the members it may not give work to, every 20 ms):');
  for (const line of [...healthLines('end to end', health.bulk), ...healthLines('steady', health.steady)]) console.log(`  ${line}`);
  if ('skipped' in peer) console.log(`\nBullMQ comparison skipped: ${peer.skipped}`);
  else if ('failed' in peer) console.error(`\nBullMQ comparison failed: ${peer.failed}`);
  console.log(`\nbench took ${((Date.now() - startedAt) / 1000).toFixed(1)} s`);
  const json = JSON.stringify({ bench: name, node: process.version, at: new Date().toISOString(), result: ours, health, peers: { bullmq: peer }, load: { before: loadBefore, after: loadavg()[0] ?? Number.NaN } });
  console.log(`\n${json}`);
  await mkdir('bench-results', { recursive: true });
  await writeFile(`bench-results/${name}.json`, `${json}\n`);
}

/** What the disk did, before the benches and after them. */
function diskLine(disk: { readonly before: DiskBaseline; readonly after: DiskBaseline }): string {
  const at = (d: DiskBaseline): string => `${fmt(d.alone.p50)} ms alone, ${fmt(d.threeWriters.p50)} ms with three writers`;
  return `the disk: a synced LevelDB write of one entry took (p50) ${at(disk.before)} before the benches; ${at(disk.after)} after`;
}

await main();
