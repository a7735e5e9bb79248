import { isIP } from 'node:net';
import type { PeerAddress } from './address.js';
import { lookupWithin, systemLookup, toPeerAddress, type Lookup } from './seed-resolver.js';

/**
 * How long the look-ups of a founding list's names may take, all at once, before a name counts
 * as unknown (and is not compared). A founding member waits for its peers far longer anyway.
 */
export const VOTER_LOOKUP_TIMEOUT_MS = 2_000;

/** Two addresses of one founding list that reach the same member, and the address they share. */
export interface VoterAlias {
  readonly first: string;
  readonly second: string;
  readonly address: string;
}

/**
 * The first two addresses of a founding list (the voters a cluster forms with: the peer list and
 * this member's own address) that reach one member: `127.0.0.1:7001` and `localhost:7001`, say.
 * Such a list makes a voter that no process answers as, so the cluster forms with one voter fewer
 * than it counts and loses its majority one failure early. A name is looked up, and compared by
 * the addresses it resolves to on its port; a name that does not resolve (in time) is not
 * compared, nor is one that resolves to several addresses of one family, which names a group
 * (a Kubernetes Service), not one member. Null when no two reach the same address.
 */
export async function voterAlias(voters: readonly PeerAddress[], options: { readonly lookup?: Lookup; readonly timeoutMs?: number } = {}): Promise<VoterAlias | null> {
  const lookup = options.lookup ?? systemLookup;
  const timeoutMs = options.timeoutMs ?? VOTER_LOOKUP_TIMEOUT_MS;
  const reached = await Promise.all(voters.map(async (voter) => addressesOf(voter, lookup, timeoutMs)));
  const firstAt = new Map<string, string>();
  for (let i = 0; i < voters.length; i++) {
    for (const address of reached[i] ?? []) {
      const first = firstAt.get(address);
      if (first === undefined) firstAt.set(address, voters[i]!.id);
      else if (first !== voters[i]!.id) return { first, second: voters[i]!.id, address };
    }
  }
  return null;
}

/**
 * `host:port` as compared: an IPv4-mapped IPv6 address (`[::ffff:127.0.0.1]:7001`, which the
 * address parser writes `[::ffff:7f00:1]:7001`) as the IPv4 address it reaches, so that a list
 * naming one member both ways is found (it formed with a voter no process answers as).
 */
function comparable(host: string, port: number, id: string): string {
  const mapped = /^::ffff:(?:(\d+\.\d+\.\d+\.\d+)|([0-9a-f]{1,4}):([0-9a-f]{1,4}))$/i.exec(host);
  if (mapped === null) return id;
  if (mapped[1] !== undefined) return `${mapped[1]}:${port}`;
  const high = parseInt(mapped[2] as string, 16);
  const low = parseInt(mapped[3] as string, 16);
  return `${high >> 8}.${high & 0xff}.${low >> 8}.${low & 0xff}:${port}`;
}

/** The addresses (`host:port` ids) `voter` reaches, or none when they are not known for one member. */
async function addressesOf(voter: PeerAddress, lookup: Lookup, timeoutMs: number): Promise<readonly string[]> {
  if (isIP(voter.host) !== 0) return [comparable(voter.host, voter.port, voter.id)];
  let answers;
  try {
    answers = await lookupWithin(lookup, voter.host, timeoutMs);
  } catch {
    return [];
  }
  const families = new Set<number>();
  const addresses: string[] = [];
  for (const answer of answers) {
    const address = toPeerAddress(answer, voter.port);
    if (address === null) continue;
    const family = isIP(address.host);
    if (families.has(family)) return [];
    families.add(family);
    addresses.push(comparable(address.host, address.port, address.id));
  }
  return addresses;
}
