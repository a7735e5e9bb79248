import { Option, type Command } from 'commander';
import { InvalidArgumentError } from '../errors.js';
import { HTTP_TOKEN_FORM, isHttpToken } from '../http/http-options.js';
import { isoInstantMs } from '../http/iso-instant.js';
import { validateName } from '../job-options.js';
import { MAX_HTTP_HISTORY_LIMIT } from '../http/routes.js';
import { EXIT, type CliOutput } from './exit-codes.js';
import { answeredError, ask, memberUrl, RequestFailedError, type Answer } from './http-client.js';
import { historyTable, jobsTable, membersTable, printable, statusText, type HistoryJson, type StateJson } from './tables.js';

/** What a person reads: every control character written out but line breaks (the tables escape theirs, cell by cell). */
const human = (text: string): string => printable(text, true);

/** The options every command that talks to a member takes. */
interface MemberFlags {
  readonly url: string;
  readonly token?: string;
  readonly json: boolean;
}

/**
 * The commands that operate a running cluster through a member's `http` option: `status`,
 * `members`, `jobs`, `history`, `remove-member`, and a job's `pause`, `resume`, `trigger` and
 * `cancel`. Tables for people, `--json` (the member's
 * JSON as it answered) for scripts; exit codes in exit-codes.ts.
 */
export function addOpsCommands(program: Command, io: CliOutput, exit: (code: number) => void): void {
  const memberCommand = (name: string, description: string): Command =>
    program
      .command(name)
      .description(description)
      .addOption(new Option('--url <url>', "a member's http address, e.g. http://127.0.0.1:9464 (or CRONRAFT_URL)").env('CRONRAFT_URL'))
      .addOption(new Option('--token <token>', 'the http.token, for actions (or CRONRAFT_TOKEN, kept out of the process list)').env('CRONRAFT_TOKEN'))
      .option('--json', 'print the JSON the member answered', false)
      // Checked here rather than as a mandatory option: commander's message for one does not
      // say that the variable would do as well.
      .hook('preAction', (command) => {
        if (command.opts<Partial<MemberFlags>>().url === undefined) command.error("error: required option '--url <url>' not specified, nor CRONRAFT_URL set", { exitCode: EXIT.usage, code: 'commander.missingMandatoryOptionValue' });
      });

  memberCommand('status', "the member's view: role, term, leader, indexes, clock; exits 3 when it is not ready").action(async (flags: MemberFlags) => {
    const url = memberUrl(flags.url);
    const [readiness, state] = await Promise.all([ask(url, '/readyz'), ask(url, '/v1/state')]);
    const body = succeeded(state, ['status', 'role', 'term', 'clock', 'members']) as StateJson;
    // 503 is an answer too: not ready, and why.
    const { ready, reason } = (readiness.status === 503 ? shaped(readiness.body, ['ready']) : succeeded(readiness, ['ready'])) as { ready: boolean; reason?: string };
    io.out(flags.json ? JSON.stringify({ ready, reason: reason ?? null, state: body }) : human(statusText(body, { ready, reason: reason ?? null })));
    exit(ready ? EXIT.ok : EXIT.notReady);
  });

  memberCommand('members', 'the members of the configuration: role, reachability, lag, clock offset').action(async (flags: MemberFlags) => {
    const body = succeeded(await ask(memberUrl(flags.url), '/v1/members'), ['leader', 'members']) as { leader: string | null; members: StateJson['members'] };
    io.out(flags.json ? JSON.stringify(body) : human(membersTable(body.leader, body.members)));
  });

  memberCommand('jobs', 'the jobs the cluster knows: spec, next slot, last outcome, missed and skipped slots').action(async (flags: MemberFlags) => {
    const body = succeeded(await ask(memberUrl(flags.url), '/v1/jobs'), ['jobs']) as { jobs: StateJson['jobs'] };
    io.out(flags.json ? JSON.stringify(body) : human(jobsTable(body.jobs)));
  });

  memberCommand('history', 'recent slots and their outcomes, newest first')
    .option('--job <name>', 'one job only', jobName)
    .option('--limit <n>', `at most this many slots, up to ${MAX_HTTP_HISTORY_LIMIT}`, historyLimit, 20)
    .action(async (flags: MemberFlags & { job?: string; limit: number }) => {
      const query = new URLSearchParams({ limit: String(flags.limit), ...(flags.job === undefined ? {} : { job: flags.job }) });
      const body = succeeded(await ask(memberUrl(flags.url), `/v1/history?${query}`), ['history']) as { history: HistoryJson[] };
      io.out(flags.json ? JSON.stringify(body) : human(historyTable(body.history)));
    });

  memberCommand('remove-member', 'remove a member from the configuration (needs --token); resolves once applied')
    .argument('<id>', "the member's id (host:port), as `members` shows it")
    .action(async (id: string, flags: MemberFlags) => {
      needToken(flags);
      const body = succeeded(await ask(memberUrl(flags.url), `/v1/members/${encodeURIComponent(id)}/remove`, { method: 'POST', token: flags.token }), ['index']) as { index: number };
      io.out(flags.json ? JSON.stringify(body) : human(`removed ${id} (the change applied at index ${body.index})`));
    });

  for (const [operation, help] of [
    ['pause', "pause a job (needs --token): its slots are recorded skipped, 'paused', until it is resumed"],
    ['resume', 'resume a paused job (needs --token)'],
    ['trigger', 'run one extra slot of a job now, claimed once across the cluster (needs --token)'],
  ] as const) {
    memberCommand(operation, help)
      .argument('<job>', "the job's name", jobName)
      .action(async (job: string, flags: MemberFlags) => {
        needToken(flags);
        const body = succeeded(await ask(memberUrl(flags.url), `/v1/jobs/${encodeURIComponent(job)}/${operation}`, { method: 'POST', token: flags.token }), ['job']) as { job: string; paused?: boolean; slot?: string; fencingToken?: number };
        io.out(flags.json ? JSON.stringify(body) : human(operation === 'trigger' ? `triggered ${job}: slot ${body.slot} under fencing token ${body.fencingToken}` : `${job} ${body.paused === true ? 'paused' : 'resumed'}`));
      });
  }

  memberCommand('cancel', "cancel a job's runs in progress across the cluster, or only one slot's (needs --token); never retried")
    .argument('<job>', "the job's name", jobName)
    .option('--slot <iso>', 'only the run of this slot, an ISO 8601 instant as `history` shows it', isoInstant)
    .action(async (job: string, flags: MemberFlags & { slot?: string }) => {
      needToken(flags);
      const path = `/v1/jobs/${encodeURIComponent(job)}/cancel`;
      const body = succeeded(await ask(memberUrl(flags.url), path, { method: 'POST', token: flags.token, ...(flags.slot === undefined ? {} : { json: { slot: flags.slot } }) }), ['job', 'cancelled']) as CancelJson;
      io.out(flags.json ? JSON.stringify(body) : human(cancelText(body)));
    });
}

/** What `POST /v1/jobs/:name/cancel` answers (CancelledRuns as JSON). */
interface CancelJson {
  readonly job: string;
  readonly cancelled: ReadonlyArray<{ readonly slot: string; readonly fencingToken: number; readonly running: readonly string[] }>;
}

function cancelText(body: CancelJson): string {
  if (body.cancelled.length === 0) return `${body.job}: nothing was running, nothing cancelled`;
  const lines = body.cancelled.map((c) => `  slot ${c.slot} (fencing token ${c.fencingToken})${c.running.length === 0 ? '' : ` running on ${c.running.join(', ')}`}`);
  return [`cancelled ${body.cancelled.length} slot${body.cancelled.length === 1 ? '' : 's'} of ${body.job}:`, ...lines].join('\n');
}

/**
 * The body of a successful answer, an object with each of `fields`.
 * @throws RequestFailedError with the member's code and message otherwise, or saying that what
 * answered is no member: an app's own port answered JSON of another shape, and the command
 * failed with JavaScript's own error (Cannot read properties of undefined (reading 'map')).
 */
function succeeded(answer: Answer, fields: readonly string[]): unknown {
  const error = answeredError(answer);
  if (error !== null) throw error;
  return shaped(answer.body, fields);
}

/** `body`, an object with each of `fields`. @throws RequestFailedError saying that what answered is no member */
function shaped(body: unknown, fields: readonly string[]): unknown {
  const missing = fields.find((field) => typeof body !== 'object' || body === null || Array.isArray(body) || !(field in body));
  if (missing !== undefined) throw new RequestFailedError(`the answer is no cronraft member's (it has no "${missing}"): is --url a member's http address (its http.listen)?`);
  return body;
}

/**
 * Actions need the member's token; an empty CRONRAFT_TOKEN is no token. One no member could hold
 * is a usage error that never quotes it: with a newline in it, fetch's error printed it whole.
 */
function needToken(flags: MemberFlags): void {
  if (flags.token === undefined || flags.token === '') throw new InvalidArgumentError('--token', undefined, 'the http.token of the member (or CRONRAFT_TOKEN): actions need it');
  if (!isHttpToken(flags.token)) throw new InvalidArgumentError('--token', `${flags.token.length} characters`, `a member's http.token: ${HTTP_TOKEN_FORM}`);
}

/** A job's name, checked here as the member checks it: a usage error (exit 2), not a path the member has no route for. */
function jobName(value: string): string {
  validateName(value);
  return value;
}

/** `--slot`, checked here as the member checks it: a usage error, not a refusal, and never a day that does not exist. */
function isoInstant(value: string): string {
  if (isoInstantMs(value) === null) throw new InvalidArgumentError('--slot', value, 'an ISO 8601 instant such as 2026-01-01T00:00:00.000Z');
  return value;
}

/** `--limit`, checked here within the member's bound: a usage error (exit 2), as a bad --slot is. */
function historyLimit(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || n < 1 || n > MAX_HTTP_HISTORY_LIMIT) throw new InvalidArgumentError('--limit', value, `an integer from 1 to ${MAX_HTTP_HISTORY_LIMIT}`);
  return n;
}
