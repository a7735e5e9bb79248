import { execFileSync } from 'node:child_process';

/**
 * Real-process tests run members from the compiled output (dist/), so the tests always build
 * first: a stale build would test old code.
 */
export default function setup(): void {
  execFileSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.build.json'], { stdio: 'inherit' });
}
