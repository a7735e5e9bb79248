import { InvalidArgumentError } from '../src/errors.js';

const UNITS_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/**
 * Parses `500ms`, `30s`, `10m` or `2h`. A number without its unit is refused: taken as
 * milliseconds, a stranger's `--duration 30` ran for 30 ms, not the 30 s meant.
 */
export function parseDurationMs(value: string, option: string): number {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h)$/.exec(value.trim());
  const amount = match === null ? Number.NaN : Number(match[1]);
  const unit = UNITS_MS[match?.[2] ?? 'ms'] ?? 1;
  const ms = Math.round(amount * unit);
  // Checked once rounded: 0.4ms is no time at all, as 0ms is.
  if (!Number.isFinite(ms) || ms < 1 || ms > Number.MAX_SAFE_INTEGER) throw new InvalidArgumentError(option, value, 'a duration with its unit, like 500ms, 30s, 10m or 2h');
  return ms;
}
