/**
 * The benchmark entry point: `npm run bench -- <name> [--quick]`. Prints a table and a JSON
 * line, and writes the JSON to bench-results/<name>.json.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { benchRaft, raftRows } from './raft.js';
import { printTable } from './stats.js';

const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: { quick: { type: 'boolean', default: false } },
});
const name = positionals[0] ?? 'raft';

async function main(): Promise<void> {
  if (name !== 'raft') {
    console.error(`Unknown benchmark "${name}". Available: raft`);
    process.exitCode = 2;
    return;
  }
  const result = await benchRaft(
    values.quick ? { serialCount: 500, loadSeconds: 2, failoverRuns: 3 } : { serialCount: 3000, loadSeconds: 5, failoverRuns: 5 },
  );
  console.log('\ncronraft: three processes on 127.0.0.1, level with sync on, default settings\n');
  printTable(['measure', 'cronraft', 'target'], raftRows(result));
  const json = JSON.stringify({ bench: name, node: process.version, at: new Date().toISOString(), result });
  console.log(`\n${json}`);
  await mkdir('bench-results', { recursive: true });
  await writeFile(`bench-results/${name}.json`, `${json}\n`);
}

await main();
