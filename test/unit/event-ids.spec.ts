import { newEventId } from '../../lib/core/ids';

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('newEventId', () => {
  it('makes RFC 9562 version 7 UUIDs carrying the time', () => {
    const at = Date.UTC(2026, 11, 1, 12, 0, 0, 123);
    const id = newEventId(at);
    expect(id).toMatch(UUID_V7);
    expect(parseInt(id.slice(0, 8) + id.slice(9, 13), 16)).toBeGreaterThanOrEqual(at);
  });

  it('sorts in creation order, within one millisecond too, and never repeats', () => {
    const ids = Array.from({ length: 20_000 }, () => newEventId(Date.UTC(2030, 0, 1)));
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
    // More than 4096 in one millisecond borrow the next milliseconds, still ascending.
    const later = newEventId(Date.UTC(2030, 0, 1) + 1);
    expect(later > ids[ids.length - 1]).toBe(true);
  });

  it('keeps 62 random bits: ids of one millisecond and counter differ in their random part', () => {
    const a = newEventId(Date.UTC(2031, 0, 1));
    const b = newEventId(Date.UTC(2031, 0, 1));
    expect(a.slice(19)).not.toEqual(b.slice(19));
  });
});
