/** An ISO 8601 instant with its offset (a time with none would be read in the server's zone). */
const ISO_INSTANT = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(?:Z|[+-](\d{2}):(\d{2}))$/;

/**
 * The instant `text` names, or null when it is not an ISO 8601 instant of a day and time that
 * exist: Date.parse rolls 2027-02-30 over to March 2nd, and a cancel would end that slot's run.
 */
export function isoInstantMs(text: string): number | null {
  const m = ISO_INSTANT.exec(text);
  if (m === null) return null;
  const [year, month, day, hour, minute, second = '0', offsetHours = '0', offsetMinutes = '0'] = m.slice(1);
  const date = new Date(0);
  date.setUTCFullYear(Number(year), Number(month) - 1, Number(day));
  const exists = date.getUTCMonth() === Number(month) - 1 && date.getUTCDate() === Number(day);
  if (!exists || Number(hour) > 23 || Number(minute) > 59 || Number(second) > 59 || Number(offsetHours) > 23 || Number(offsetMinutes) > 59) return null;
  const ms = Date.parse(text);
  return Number.isFinite(ms) ? ms : null;
}
