#!/usr/bin/env node
/**
 * The `cronraft` command (program.ts): `status`, `members`, `jobs`, `history` and
 * `remove-member`, which operate a running cluster through a member's `http` option; `simulate`,
 * which runs the deterministic simulator; `secret`, which prints a new cluster secret.
 */
import { runCli } from './program.js';

runCli(process.argv.slice(2), { out: (text) => console.log(text), err: (text) => console.error(text) }).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  },
);
