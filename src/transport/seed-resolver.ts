import { lookup as dnsLookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { parsePeerAddress, type PeerAddress } from './address.js';
import { MAX_TIMER_DELAY_MS } from '../time/clock.js';

/**
 * The most addresses a seed list resolves to: a headless Service of a large Deployment names
 * every pod, and a joiner asks each in turn, so a name that answers with thousands of records
 * must not make it ask thousands.
 */
export const MAX_SEED_ADDRESSES = 64;

/**
 * How long one DNS look-up may take before its seed counts as unresolved. The system resolver
 * has its own retries, which can take far longer than a member should wait to start.
 */
export const SEED_LOOKUP_TIMEOUT_MS = 5_000;

/** One answer of a look-up: what `dns.promises.lookup(name, { all: true })` gives. */
export interface LookupAddress {
  readonly address: string;
  readonly family: number;
}

/** A DNS look-up of every address of a name; node:dns's by default, injected in tests. */
export type Lookup = (name: string) => Promise<readonly LookupAddress[]>;

export const systemLookup: Lookup = async (name) => dnsLookup(name, { all: true, verbatim: true });

export interface ResolvedSeeds {
  /** The addresses to ask, in the seeds' order, without repeats, at most MAX_SEED_ADDRESSES. */
  readonly addresses: readonly PeerAddress[];
  /** Seeds whose name did not resolve (or not in time), with why: asked by name as given. */
  readonly unresolved: ReadonlyArray<{ readonly seed: string; readonly reason: string }>;
}

/**
 * Turns a seed list into the addresses to ask for a running cluster. A seed given as an IP
 * address is kept; one given as a DNS name is looked up, and each address it resolves to is a
 * seed of its own on the same port (a Kubernetes headless Service resolves to every ready pod).
 * A name is looked up again on every call, so a joiner that retries sees pods that came up
 * meanwhile. A name that does not resolve is kept by name, for libp2p to dial as given. A pinned
 * peer id applies to one member, so a seed that pins one is never expanded.
 */
export async function resolveSeeds(
  seeds: readonly PeerAddress[],
  options: { readonly lookup?: Lookup; readonly timeoutMs?: number } = {},
): Promise<ResolvedSeeds> {
  const lookup = options.lookup ?? systemLookup;
  const timeoutMs = options.timeoutMs ?? SEED_LOOKUP_TIMEOUT_MS;
  const answers = await Promise.all(seeds.map(async (seed) => expand(seed, lookup, timeoutMs)));
  const seen = new Set<string>();
  const addresses: PeerAddress[] = [];
  const unresolved: Array<{ seed: string; reason: string }> = [];
  for (const answer of answers) {
    if ('reason' in answer) unresolved.push({ seed: answer.seed.id, reason: answer.reason });
    const list = 'reason' in answer ? [answer.seed] : answer.addresses;
    for (const address of list) {
      if (seen.has(address.id) || addresses.length >= MAX_SEED_ADDRESSES) continue;
      seen.add(address.id);
      addresses.push(address);
    }
  }
  return { addresses, unresolved };
}

type Expansion = { readonly addresses: readonly PeerAddress[] } | { readonly seed: PeerAddress; readonly reason: string };

/** `lookup(name)`, rejected once `timeoutMs` passes without its answer. */
export async function lookupWithin(lookup: Lookup, name: string, timeoutMs: number): Promise<readonly LookupAddress[]> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    // Node runs a longer delay after 1 ms (MAX_TIMER_DELAY_MS).
    timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), Math.min(timeoutMs, MAX_TIMER_DELAY_MS));
  });
  try {
    return await Promise.race([lookup(name), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

async function expand(seed: PeerAddress, lookup: Lookup, timeoutMs: number): Promise<Expansion> {
  if (isIP(seed.host) !== 0 || seed.peerId !== null) return { addresses: [seed] };
  try {
    const answers = await lookupWithin(lookup, seed.host, timeoutMs);
    const addresses: PeerAddress[] = [];
    for (const answer of answers) {
      if (addresses.length >= MAX_SEED_ADDRESSES) break;
      const address = toPeerAddress(answer, seed.port);
      if (address !== null) addresses.push(address);
    }
    return addresses.length > 0 ? { addresses } : { seed, reason: 'no usable address' };
  } catch (error) {
    return { seed, reason: error instanceof Error ? error.message : String(error) };
  }
}

/** An answer as a seed address, or null when it is not an IP address (a hostile resolver's). */
export function toPeerAddress(answer: LookupAddress, port: number): PeerAddress | null {
  if (typeof answer?.address !== 'string') return null;
  const family = isIP(answer.address);
  if (family === 0) return null;
  try {
    return parsePeerAddress(family === 6 ? `[${answer.address}]:${port}` : `${answer.address}:${port}`, 'seed');
  } catch {
    return null;
  }
}
