import { fileURLToPath } from 'node:url';
import { Command, CommanderError } from 'commander';
import { CronraftError } from '../errors.js';
import { generateSecret } from '../transport/cluster-secret.js';
import { EXIT, type CliOutput } from './exit-codes.js';
import { RequestFailedError } from './http-client.js';
import { addOpsCommands } from './ops-commands.js';
import { addSimulateCommand } from './simulate-command.js';

/** The script `cronraft` runs (main.js beside this file): a parallel sweep runs it again. */
const MAIN_SCRIPT = fileURLToPath(new URL('./main.js', import.meta.url));

/**
 * Runs the `cronraft` command on `argv` (the arguments after the script), writing to `io`, and
 * resolves with its exit code (exit-codes.ts): it never exits the process itself.
 */
export async function runCli(argv: readonly string[], io: CliOutput): Promise<number> {
  let code: number = EXIT.ok;
  const exit = (c: number): void => {
    code = c;
  };
  const program = new Command('cronraft')
    .description('Operate a cronraft cluster over HTTP, run the simulator, or make a cluster secret.')
    .exitOverride()
    .showHelpAfterError('(cronraft help <command> for its options)')
    .configureOutput({ writeOut: (s) => io.out(s.replace(/\n$/, '')), writeErr: (s) => io.err(s.replace(/\n$/, '')) });
  program
    .command('secret')
    .description('print a new random cluster secret: the `secret` option of every member')
    .action(() => io.out(generateSecret()));
  addSimulateCommand(program, io, { script: MAIN_SCRIPT, argv }, exit);
  addOpsCommands(program, io, exit);
  try {
    await program.parseAsync([...argv], { from: 'user' });
    return code;
  } catch (error) {
    return exitCodeOf(error, io);
  }
}

function exitCodeOf(error: unknown, io: CliOutput): number {
  if (error instanceof CommanderError) {
    // Commander has printed what went wrong (or the help asked for) already. Its own exit code
    // tells the help asked for (`--help`, `help`, `help <command>`: 0) from the help shown for a
    // command missing (1); `help <command>` ends as 'commander.help', not 'commander.helpDisplayed'.
    return error.exitCode === 0 ? EXIT.ok : EXIT.usage;
  }
  if (error instanceof RequestFailedError) {
    io.err(`cronraft: ${error.message}`);
    return EXIT.failed;
  }
  if (error instanceof CronraftError && error.code === 'CRONRAFT_INVALID_ARGUMENT') {
    io.err(`cronraft: ${error.message}`);
    return EXIT.usage;
  }
  io.err(`cronraft: ${error instanceof Error ? error.message : String(error)}`);
  return EXIT.failed;
}
