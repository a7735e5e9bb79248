/** The exit codes of the `cronraft` command, for scripts. */
export const EXIT = {
  ok: 0,
  /** A request failed or was refused (the member unreachable, an error answered), or a simulation violated an invariant. */
  failed: 1,
  /** The command line was wrong: an unknown command or option, a missing or bad value. */
  usage: 2,
  /** `status`: the member answered but is not ready (no leader known, or its clock not synced). */
  notReady: 3,
} as const;

/** Where a command writes: stdout and stderr, injected so that tests can read them. */
export interface CliOutput {
  readonly out: (text: string) => void;
  readonly err: (text: string) => void;
}
