import { describe, expect, it } from 'vitest';
import { parsePeerAddress } from '../../src/transport/address.js';
import { MemberAddresses } from '../../src/transport/member-addresses.js';

const PINNED = '12D3KooWNpEjHiwXBKhVJvQy5aGA5n6TgqSEAHMAbkjYZj9nVKPL';

describe('where a transport dials each member (MemberAddresses)', () => {
  it('takes the pinned peer id, else the bound one, else one held until the configuration binds one', () => {
    const given = new Map([['10.0.0.1:7001', parsePeerAddress(`10.0.0.1:7001/p2p/${PINNED}`, 'peer')]]);
    const addresses = new MemberAddresses(given);
    addresses.holdUntilBound('10.0.0.2:7001', 'held');
    const unreachable: string[] = [];
    const of = (bound: string | null): Map<string, unknown> =>
      addresses.of('10.0.0.3:7001', [{ id: '10.0.0.1:7001', peerId: 'bound' }, { id: '10.0.0.2:7001', peerId: bound }, { id: '10.0.0.3:7001', peerId: null }, { id: 'no address', peerId: null }], (id) => unreachable.push(id));
    const first = of(null);
    expect(first.get('10.0.0.1:7001')).toMatchObject({ peerId: PINNED });
    expect(first.get('10.0.0.2:7001')).toMatchObject({ peerId: 'held' });
    expect(first.has('10.0.0.3:7001')).toBe(false);
    expect(unreachable).toEqual(['no address']);
    // Once the configuration binds it, the held one is gone for good.
    expect(of('bound-2').get('10.0.0.2:7001')).toMatchObject({ peerId: 'bound-2' });
    expect(of(null).get('10.0.0.2:7001')).toMatchObject({ peerId: null });
  });
});
