import type { Retention } from '../../core/types';

/**
 * A stream's retention as the meta hash stores it (`ra` maxAgeMs, `re` maxEvents,
 * `rd` deadLetterMaxAgeMs; keys.ts META_FIELDS), as script arguments: '' for a limit
 * that is not set (the scripts then remove its field; includes/retention.ts).
 */
export function retentionArgs(retention: Retention | undefined): string[] {
  const r = retention ?? {};
  return [r.maxAgeMs, r.maxEvents, r.deadLetterMaxAgeMs].map((v) => (v === undefined ? '' : String(v)));
}

/** The retention from the stored `ra`, `re`, `rd` values (in that order); undefined when none is set. */
export function decodeRetention(values: ReadonlyArray<string | null | undefined>): Retention | undefined {
  const [ra, re, rd] = values;
  const r: Retention = {};
  if (ra !== null && ra !== undefined) r.maxAgeMs = Number(ra);
  if (re !== null && re !== undefined) r.maxEvents = Number(re);
  if (rd !== null && rd !== undefined) r.deadLetterMaxAgeMs = Number(rd);
  return Object.keys(r).length > 0 ? r : undefined;
}

/** Only the limits that are set, or undefined when none is (StreamInfo.retention's form). */
export function setLimits(retention: Retention | undefined): Retention | undefined {
  return decodeRetention(retentionArgs(retention).map((v) => (v === '' ? null : v)));
}
