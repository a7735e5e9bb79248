import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ClusterState } from '../../src/api/state.js';
import { ClusterMetrics } from '../../src/http/metrics.js';
import { MAX_SNAPSHOT_BYTES } from '../../src/transport/constants.js';
import { metricTypes } from '../fixtures/prometheus-text.js';

const file = readFileSync(join(import.meta.dirname, '..', '..', 'examples', 'alerts.yml'), 'utf8');

/** The rules of the file, read line by line: it keeps to one `key: value` a line (no YAML library is installed). */
function rules(text: string): Array<Record<string, string>> {
  const out: Array<Record<string, string>> = [];
  for (const line of text.split('\n')) {
    const alert = /^ {6}- alert: (\S+)$/.exec(line);
    if (alert !== null) {
      out.push({ alert: alert[1] as string });
      continue;
    }
    const field = /^ {8,12}(expr|for|severity|summary): (.+)$/.exec(line);
    const rule = out.at(-1);
    if (field !== null && rule !== undefined) rule[field[1] as string] = field[2] as string;
  }
  return out;
}

describe('examples/alerts.yml', () => {
  it('has a rule for each condition the issue names, each with an expression, a severity and a summary', () => {
    expect(file).toMatch(/^groups:\n {2}- name: cronraft\n {4}rules:$/m);
    const found = rules(file);
    expect(found.map((r) => r.alert)).toEqual(expect.arrayContaining(['CronraftNoLeader', 'CronraftMissedSlots', 'CronraftJobFailedAfterRetries', 'CronraftClockSkewed', 'CronraftMemberUnreachable']));
    for (const r of found) {
      expect(r, r.alert).toMatchObject({ expr: expect.any(String), severity: expect.stringMatching(/^(critical|warning)$/), summary: expect.stringMatching(/^".+"$/) });
      if (r.for !== undefined) expect(r.for).toMatch(/^\d+[smh]$/);
    }
    // Indentation is spaces only, as YAML requires.
    expect(file).not.toContain('\t');
  });

  it("warns of a snapshot at three quarters of what a member behind takes in (MAX_SNAPSHOT_BYTES)", () => {
    const rule = rules(file).find((r) => r.alert === 'CronraftSnapshotNearLimit');
    expect(rule?.expr).toBe(`cronraft_last_snapshot_bytes > ${(3 * MAX_SNAPSHOT_BYTES) / 4}`);
  });

  it('warns of a named bound nine tenths full that refuses or makes work wait once full, not of one full in its steady state', () => {
    const rule = rules(file).find((r) => r.alert === 'CronraftBoundNearLimit');
    expect(rule?.expr).toBe('cronraft_bound_used{when_full=~"refuses|waits"} / cronraft_bound_limit > 0.9');
  });

  it('uses only metrics that /metrics exports', async () => {
    const exported = new Set(metricTypes(await new ClusterMetrics({ state: () => ({ term: 0, leader: null, role: 'follower', commitIndex: 0, appliedIndex: 0, members: [], jobs: [], topics: [], transport: { sent: 0, received: 0, droppedQueueFull: 0, droppedMalformed: 0, droppedOversized: 0, droppedUnexpected: 0, droppedPeerIdMismatch: 0 }, clock: { synced: false }, log: { snapshotsTaken: 0, snapshotsInstalled: 0, lastSnapshot: null }, bounds: [] }) as unknown as ClusterState }).text()).keys());
    const used = [...file.matchAll(/\bcronraft_[a-z_]+/g)].map((m) => m[0].replace(/_(bucket|sum|count)$/, ''));
    expect(used.length).toBeGreaterThan(5);
    for (const name of used) expect(exported, name).toContain(name);
  });
});
