import { execFileSync } from 'node:child_process';

/**
 * Real-process tests run members from the compiled output (dist/), so the tests always build
 * first: a stale build would test old code. The build is incremental (tsconfig.build.json, its
 * record in dist/ beside the output, so removing dist/ removes both): after `npm ci`, whose
 * prepare script built already, only what changed since is compiled again.
 */
export default function setup(): void {
  execFileSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.build.json'], { stdio: 'inherit' });
}
