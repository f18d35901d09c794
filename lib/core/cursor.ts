import { RheoError } from './errors';

/** Position of the last event of a query page, in the (sequence, partition) order. */
export interface QueryPosition {
  sequence: number;
  partition: number;
}

/** Opaque page cursor: base64url of `"<sequence>.<partition>"`. */
export function encodeCursor(p: QueryPosition): string {
  return Buffer.from(`${p.sequence}.${p.partition}`).toString('base64url');
}

export function decodeCursor(cursor: unknown): QueryPosition {
  if (typeof cursor !== 'string' || cursor.length === 0 || cursor.length > 64)
    throw RheoError.invalid('cursor', 'is not a cursor this library issued');
  const m = /^(\d{1,15})\.(\d{1,5})$/.exec(Buffer.from(cursor, 'base64url').toString());
  if (!m) throw RheoError.invalid('cursor', 'is not a cursor this library issued');
  return { sequence: Number(m[1]), partition: Number(m[2]) };
}
