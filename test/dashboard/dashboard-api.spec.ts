import { type CanActivate, type ExecutionContext, Injectable, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { memoryBackend, Rheo, RheoDashboardModule, type RheoDashboardOptions, RheoError, RheoModule } from '../../lib';
import { DEFAULT_RETRY } from '../../lib/core/backoff';
import { NO_FLOW_LIMITS } from '../../lib/core/flow';
import { MAX_BATCH } from '../../lib/core/limits';
import { ACTION, type Adapter, call, type DashboardApp, serveDashboard } from './apps';

// The dashboard's JSON API and its security, on both HTTP adapters, over the
// memory backend (the browser spec runs the page on PostgreSQL).

const STREAM = 'orders';
const GROUP = 'billing';
const GROUPS = `/rheo/api/streams/${STREAM}/groups`;

interface Seeded {
  deadId: string;
  deadKey: string;
  deadPayload: unknown;
}

/** 5 events; the first fetched is dead-lettered by `billing` (rejected), the others wait. */
async function seed(rheo: Rheo): Promise<Seeded> {
  await rheo.createGroup(STREAM, GROUP);
  for (let n = 0; n < 5; n++) await rheo.append(STREAM, { key: `o${n}`, type: 'order', payload: { n } });
  const [lease] = await rheo.fetch(STREAM, GROUP, { limit: 1 });
  await rheo.reject(lease, { reason: 'order is invalid' });
  return { deadId: lease.event.id, deadKey: lease.event.key as string, deadPayload: lease.event.payload };
}

async function start(adapter: Adapter, dashboard: RheoDashboardOptions, globalPrefix?: string): Promise<DashboardApp & Seeded> {
  const served = await serveDashboard(
    adapter,
    {
      imports: [
        RheoModule.forRoot({ backend: memoryBackend(), streams: [{ name: STREAM, partitions: 2 }] }),
        RheoDashboardModule.forRoot(dashboard),
      ],
    },
    { globalPrefix },
  );
  return { ...served, ...(await seed(served.app.get(Rheo))) };
}

describe.each<Adapter>(['express', 'fastify'])('dashboard JSON API on %s', (adapter) => {
  describe('read-only (the default)', () => {
    let s: DashboardApp & Seeded;
    beforeAll(async () => (s = await start(adapter, {})));
    afterAll(() => s?.app.close());

    it('serves the overview: streams with high watermarks, groups with lag and dead letters', async () => {
      const res = await call(s.url, '/rheo/api/overview');
      expect(res.status).toBe(200);
      expect(res.headers.get('cache-control')).toBe('no-store');
      const overview = res.body as { at: string; streams: Array<Record<string, unknown> & { groups: Array<Record<string, unknown>> }> };
      expect(Number.isNaN(Date.parse(overview.at))).toBe(false);
      expect(overview.streams).toHaveLength(1);
      expect(overview.streams[0]).toMatchObject({ name: STREAM, partitions: 2, highWatermark: 5 });
      expect(overview.streams[0].groups).toEqual([
        expect.objectContaining({ stream: STREAM, group: GROUP, lag: 4, inflight: 0, deadLetters: 1, maxAttempts: 5 }),
      ]);
      // No RheoServer runs here: no local consumer state.
      expect(overview.streams[0].groups[0].consumer).toBeUndefined();
    });

    it('serves streams, groups and one group', async () => {
      expect((await call(s.url, '/rheo/api/streams')).body).toEqual([expect.objectContaining({ name: STREAM, highWatermark: 5 })]);
      expect((await call(s.url, GROUPS)).body).toEqual([expect.objectContaining({ group: GROUP, lag: 4 })]);
      const one = await call(s.url, `${GROUPS}/${GROUP}`);
      expect(one.body).toMatchObject({ group: GROUP, lag: 4, deadLetters: 1 });
      expect((one.body as { partitions: unknown[] }).partitions).toHaveLength(2);
    });

    it('lists dead letters without payloads unless showPayloads', async () => {
      const res = await call(s.url, `${GROUPS}/${GROUP}/dead-letters`);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        items: [
          {
            eventId: s.deadId,
            partition: expect.any(Number),
            sequence: expect.any(Number),
            reason: 'order is invalid',
            attempt: 1,
            deadLetteredAt: expect.any(String),
            type: 'order',
            key: s.deadKey,
          },
        ],
        next: null,
      });
    });

    it('records the lag of each overview read for the chart', async () => {
      await call(s.url, '/rheo/api/overview');
      const res = await call(s.url, '/rheo/api/lag-history');
      const history = res.body as { windowMs: number; series: Array<{ stream: string; group: string; points: Array<[number, number]> }> };
      expect(history.windowMs).toBe(600_000);
      expect(history.series).toEqual([{ stream: STREAM, group: GROUP, points: expect.any(Array) }]);
      expect(history.series[0].points.length).toBeGreaterThan(0);
      expect(history.series[0].points.every(([at, lag]) => at > 0 && lag === 4)).toBe(true);
    });

    it('refuses every action with 403, header or not, and changes nothing', async () => {
      for (const [path, body] of [
        ['redrive', { eventIds: [s.deadId] }],
        ['replay', { afterSequence: 0 }],
        ['reset', { confirm: GROUP }],
        ['pause', { confirm: true }],
        ['resume', { confirm: true }],
        ['skip', { eventIds: [s.deadId], confirm: true }],
        ['reschedule', { eventIds: [s.deadId], delayMs: 0, confirm: true }],
        ['cancel-delayed', { eventId: s.deadId, confirm: true }],
      ] as const) {
        // A delayed event's cancel is the stream's route, the others the group's.
        const route = path === 'cancel-delayed' ? `/rheo/api/streams/${STREAM}/${path}` : `${GROUPS}/${GROUP}/${path}`;
        const res = await call(s.url, route, { method: 'POST', body, headers: ACTION });
        expect(res.status).toBe(403);
        expect(res.body).toMatchObject({ message: expect.stringContaining('read-only') });
      }
      expect((await call(s.url, `${GROUPS}/${GROUP}`)).body).toMatchObject({
        deadLetters: 1,
        lag: 4,
        paused: null,
        skipped: { count: 0, lastReason: null, lastAt: null },
      });
    });

    it('answers 400 with the field for bad input, 404 for a stream that does not exist', async () => {
      const bad = await call(s.url, `${GROUPS}/${GROUP}/dead-letters?limit=lots`);
      expect(bad.status).toBe(400);
      expect(bad.body).toEqual({ statusCode: 400, error: 'invalid_argument', message: 'limit must be a positive integer', field: 'limit' });
      const missing = await call(s.url, '/rheo/api/streams/nope/groups');
      expect(missing.status).toBe(404);
      expect(missing.body).toMatchObject({ error: 'stream_not_found' });
    });

    it('serves the page with a strict Content-Security-Policy, and its assets', async () => {
      const page = await call(s.url, '/rheo');
      expect(page.status).toBe(200);
      expect(page.headers.get('content-type')).toMatch(/^text\/html/);
      expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
      expect(page.headers.get('x-frame-options')).toBe('DENY');
      expect(page.text).toContain('data-read-only="true"');
      expect(page.text).toContain('src="/rheo/assets/dashboard.js"');
      const js = await call(s.url, '/rheo/assets/dashboard.js');
      expect(js.headers.get('content-type')).toMatch(/^text\/javascript/);
      expect(() => new Function(js.text)).not.toThrow(); // it parses
      expect((await call(s.url, '/rheo/assets/dashboard.css')).headers.get('content-type')).toMatch(/^text\/css/);
    });
  });

  describe('with actions enabled and payloads shown', () => {
    let s: DashboardApp & Seeded;
    beforeAll(async () => (s = await start(adapter, { path: '/ops/events', readOnly: false, showPayloads: true })));
    afterAll(() => s?.app.close());
    const groups = `/ops/events/api/streams/${STREAM}/groups`;

    it('answers every API route, success or error, with X-Content-Type-Options: nosniff', async () => {
      const api = '/ops/events/api';
      const answers: Array<[string, number]> = [];
      const check = async (path: string, init?: Parameters<typeof call>[2]) => {
        const res = await call(s.url, path, init);
        answers.push([`${init?.method ?? 'GET'} ${path}`, res.status]);
        expect([path, res.status, res.headers.get('x-content-type-options')]).toEqual([path, res.status, 'nosniff']);
        // JSON, never something a browser could sniff into a page.
        expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      };
      // The reads: each answered (200), and each refused or missing (400, 404).
      await check(`${api}/overview`);
      await check(`${api}/overview?limit=lots`);
      await check(`${api}/lag-history`);
      await check(`${api}/streams`);
      await check(`${groups}`);
      await check(`${api}/streams/nope/groups`);
      await check(`${groups}/${GROUP}`);
      await check(`${groups}/nope`);
      await check(`${groups}/${GROUP}/dead-letters`);
      await check(`${groups}/${GROUP}/dead-letters?limit=lots`);
      // The actions: without the header (403, the action guard), bad input (400), unconfirmed (428), done (200).
      await check(`${groups}/${GROUP}/redrive`, { method: 'POST', body: { eventIds: ['nope'] } });
      await check(`${groups}/${GROUP}/redrive`, { method: 'POST', body: { eventIds: [] }, headers: ACTION });
      await check(`${groups}/${GROUP}/redrive`, { method: 'POST', body: { all: true }, headers: ACTION });
      await check(`${groups}/${GROUP}/redrive`, { method: 'POST', body: { eventIds: ['nope'] }, headers: ACTION });
      await check(`${groups}/${GROUP}/replay`, { method: 'POST', body: { from: 'yesterday' }, headers: ACTION });
      await check(`${groups}/nope/replay`, { method: 'POST', body: { afterSequence: 99 }, headers: ACTION });
      await check(`${groups}/${GROUP}/reset`, { method: 'POST', body: { confirm: 'other' }, headers: ACTION });
      expect(answers.map(([, status]) => status)).toEqual([
        200, 400, 200, 200, 200, 404, 200, 404, 200, 400, 403, 400, 428, 200, 400, 404, 428,
      ]);
    });

    it('shows payload previews', async () => {
      const res = await call(s.url, `${groups}/${GROUP}/dead-letters?limit=10`);
      expect((res.body as { items: unknown[] }).items).toEqual([expect.objectContaining({ eventId: s.deadId, payload: s.deadPayload })]);
    });

    it('refuses an action POST without the custom header (no CSRF by a plain form)', async () => {
      const res = await call(s.url, `${groups}/${GROUP}/redrive`, { method: 'POST', body: { eventIds: [s.deadId] } });
      expect(res.status).toBe(403);
      expect(res.body).toMatchObject({ message: expect.stringContaining('x-rheo-dashboard') });
      // What a cross-site form can send: urlencoded, no header.
      const form = await fetch(`${s.url}${groups}/${GROUP}/redrive`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: 'all=true&confirm=true',
      });
      expect(form.status).toBe(403);
      expect((await call(s.url, `${groups}/${GROUP}`)).body).toMatchObject({ deadLetters: 1 });
    });

    it('answers 400 naming the field for a malformed action body', async () => {
      const res = await call(s.url, `${groups}/${GROUP}/redrive`, { method: 'POST', body: { eventIds: [] }, headers: ACTION });
      expect(res.status).toBe(400);
      expect(res.body).toEqual({
        statusCode: 400,
        error: 'invalid_argument',
        message: 'eventIds must be a non-empty array of event ids',
        field: 'eventIds',
      });
      const time = await call(s.url, `${groups}/${GROUP}/replay`, { method: 'POST', body: { from: 'yesterday' }, headers: ACTION });
      expect(time.status).toBe(400);
      expect(time.body).toMatchObject({ field: 'from', message: expect.stringContaining('ISO 8601') });
    });

    it('redrives all only when confirmed, and one by id', async () => {
      const unconfirmed = await call(s.url, `${groups}/${GROUP}/redrive`, { method: 'POST', body: { all: true }, headers: ACTION });
      expect(unconfirmed.status).toBe(428);
      expect(unconfirmed.body).toMatchObject({ error: 'confirm_required', field: 'confirm' });
      const res = await call(s.url, `${groups}/${GROUP}/redrive`, { method: 'POST', body: { eventIds: [s.deadId] }, headers: ACTION });
      expect(res).toMatchObject({ status: 200, body: { redriven: 1 } });
      expect((await call(s.url, `${groups}/${GROUP}`)).body).toMatchObject({ deadLetters: 0, lag: 5 });
    });

    it('replays after a sequence and from a time', async () => {
      const rheo = s.app.get(Rheo);
      const all = await rheo.fetch(STREAM, GROUP, { limit: 10 });
      for (const lease of all) await rheo.ack(lease);
      expect((await call(s.url, `${groups}/${GROUP}`)).body).toMatchObject({ lag: 0 });
      const bySequence = await call(s.url, `${groups}/${GROUP}/replay`, { method: 'POST', body: { afterSequence: 0 }, headers: ACTION });
      expect(bySequence).toMatchObject({ status: 200, body: { replayed: 5 } });
      for (const lease of await rheo.fetch(STREAM, GROUP, { limit: 10 })) await rheo.ack(lease);
      const byTime = await call(s.url, `${groups}/${GROUP}/replay`, {
        method: 'POST',
        body: { from: '2000-01-01T00:00:00Z' },
        headers: ACTION,
      });
      expect(byTime).toMatchObject({ status: 200, body: { replayed: 5 } });
    });

    it('resets only with the group name typed as confirmation', async () => {
      const wrong = await call(s.url, `${groups}/${GROUP}/reset`, { method: 'POST', body: { confirm: 'billings' }, headers: ACTION });
      expect(wrong.status).toBe(428);
      expect(wrong.body).toMatchObject({ error: 'confirm_required', field: 'confirm' });
      const flag = await call(s.url, `${groups}/${GROUP}/reset`, { method: 'POST', body: { confirm: true }, headers: ACTION });
      expect(flag.status).toBe(428);
      const badStart = await call(s.url, `${groups}/${GROUP}/reset`, {
        method: 'POST',
        body: { confirm: GROUP, start: 'soon' },
        headers: ACTION,
      });
      expect(badStart.status).toBe(400);
      expect(badStart.body).toMatchObject({ field: 'start' });
      const res = await call(s.url, `${groups}/${GROUP}/reset`, {
        method: 'POST',
        body: { confirm: GROUP, start: 'end' },
        headers: ACTION,
      });
      expect(res).toMatchObject({ status: 200, body: { reset: true } });
      expect((await call(s.url, `${groups}/${GROUP}`)).body).toMatchObject({ lag: 0, inflight: 0, deadLetters: 0 });
    });
    it('pauses (confirmed, until a duration or an ISO time, reason and by) and resumes; the group shows the pause', async () => {
      const rheo = s.app.get(Rheo);
      const pausePath = `${groups}/${GROUP}/pause`;
      const unconfirmed = await call(s.url, pausePath, { method: 'POST', body: { reason: 'x' }, headers: ACTION });
      expect(unconfirmed.status).toBe(428);
      expect(unconfirmed.body).toMatchObject({ error: 'confirm_required', field: 'confirm' });
      const unknown = await call(s.url, pausePath, { method: 'POST', body: { confirm: true, why: 'x' }, headers: ACTION });
      expect(unknown.status).toBe(400);
      const notText = await call(s.url, pausePath, { method: 'POST', body: { confirm: true, by: 7 }, headers: ACTION });
      expect(notText).toMatchObject({ status: 400, body: { field: 'by', message: 'by must be a string' } });
      const soon = await call(s.url, pausePath, { method: 'POST', body: { confirm: true, until: 'soon' }, headers: ACTION });
      expect(soon).toMatchObject({ status: 400, body: { field: 'until' } });
      const past = await call(s.url, pausePath, {
        method: 'POST',
        body: { confirm: true, until: '2000-01-01T00:00:00Z' },
        headers: ACTION,
      });
      expect(past).toMatchObject({ status: 400, body: { field: 'until', message: expect.stringContaining('must be after now') } });
      expect((await rheo.groupInfo(STREAM, GROUP)).paused).toBeNull();

      const until = new Date(Date.now() + 3_600_000).toISOString();
      const body = { confirm: true, until, reason: 'card API down', by: 'ana' };
      const paused = await call(s.url, pausePath, { method: 'POST', body, headers: ACTION });
      expect(paused).toMatchObject({ status: 200, body: { pausedAt: expect.any(String), until, reason: 'card API down', by: 'ana' } });
      const stored = (await rheo.groupInfo(STREAM, GROUP)).paused!;
      expect(paused.body).toEqual({ pausedAt: stored.pausedAt.toISOString(), until, reason: 'card API down', by: 'ana' });
      expect((await call(s.url, `${groups}/${GROUP}`)).body).toMatchObject({ paused: paused.body });
      const overview = (await call(s.url, '/ops/events/api/overview')).body as { streams: Array<{ groups: Array<{ paused: unknown }> }> };
      expect(overview.streams[0].groups[0].paused).toEqual(paused.body);

      const resumePath = `${groups}/${GROUP}/resume`;
      expect(await call(s.url, resumePath, { method: 'POST', body: {}, headers: ACTION })).toMatchObject({ status: 428 });
      expect(await call(s.url, resumePath, { method: 'POST', body: { confirm: true }, headers: ACTION })).toMatchObject({
        status: 200,
        body: { resumed: true },
      });
      expect((await rheo.groupInfo(STREAM, GROUP)).paused).toBeNull();
      expect(await call(s.url, resumePath, { method: 'POST', body: { confirm: true }, headers: ACTION })).toMatchObject({
        status: 200,
        body: { resumed: false },
      });
      expect(await call(s.url, `${groups}/nope/resume`, { method: 'POST', body: { confirm: true }, headers: ACTION })).toMatchObject({
        status: 404,
      });
    });

    it('skips and reschedules per id (done, lease_held naming the expiry, settled or unknown), refusing bad input whole', async () => {
      const rheo = s.app.get(Rheo);
      await rheo.createGroup(STREAM, 'ledger', { start: 'end' });
      for (let n = 0; n < 4; n++) await rheo.append(STREAM, { key: 'same', payload: { n } });
      const [waiting, held, settled, moved] = await rheo.fetch(STREAM, 'ledger', { limit: 4, leaseMs: 600_000 });
      await rheo.nack(waiting, { delayMs: 600_000 });
      await rheo.ack(settled);
      await rheo.nack(moved, { delayMs: 600_000 });
      const ledger = `${groups}/ledger`;
      const post = (path: string, body: unknown, headers: Record<string, string> = ACTION) =>
        call(s.url, `${ledger}/${path}`, { method: 'POST', body, headers });

      // Refused whole, nothing changed: no header, unconfirmed, unknown key, bad shapes, too many ids.
      expect(await post('skip', { eventIds: [waiting.event.id], confirm: true }, {})).toMatchObject({ status: 403 });
      expect(await post('skip', { eventIds: [waiting.event.id] })).toMatchObject({
        status: 428,
        body: { error: 'confirm_required', field: 'confirm' },
      });
      expect(await post('skip', { eventIds: [waiting.event.id], confirm: true, why: 'x' })).toMatchObject({
        status: 400,
        body: { message: expect.stringContaining('why') },
      });
      expect(await post('skip', { eventIds: [], confirm: true })).toMatchObject({ status: 400, body: { field: 'eventIds' } });
      expect(await post('skip', { eventIds: [waiting.event.id], reason: 7, confirm: true })).toMatchObject({
        status: 400,
        body: { field: 'reason' },
      });
      expect(await post('skip', { eventIds: [waiting.event.id], reason: 'x'.repeat(1001), confirm: true })).toMatchObject({
        status: 400,
        body: { field: 'reason' },
      });
      const tooMany = Array.from({ length: MAX_BATCH + 1 }, (_, i) => `e${i}`);
      expect(await post('skip', { eventIds: tooMany, confirm: true })).toMatchObject({ status: 400, body: { field: 'eventIds' } });
      expect(await post('skip', { eventIds: [waiting.event.id, waiting.event.id], confirm: true })).toMatchObject({
        status: 400,
        body: { field: 'ids[1]' },
      });
      expect(await post('reschedule', { eventIds: [moved.event.id], confirm: true })).toMatchObject({
        status: 400,
        body: { field: 'delayMs' },
      });
      expect(
        await post('reschedule', { eventIds: [moved.event.id], delayMs: 1, deliverAt: '2030-01-01T00:00:00Z', confirm: true }),
      ).toMatchObject({ status: 400, body: { field: 'delayMs' } });
      expect(await post('reschedule', { eventIds: [moved.event.id], deliverAt: 'soon', confirm: true })).toMatchObject({
        status: 400,
        body: { field: 'deliverAt' },
      });
      expect(await post('reschedule', { eventIds: [moved.event.id], delayMs: -1, confirm: true })).toMatchObject({
        status: 400,
        body: { field: 'delayMs' },
      });
      expect((await rheo.groupInfo(STREAM, 'ledger')).skipped.count).toBe(0);

      const ids = [waiting.event.id, held.event.id, settled.event.id, 'no-such-event'];
      const skipped = await post('skip', { eventIds: ids, reason: 'quote expired', confirm: true });
      expect(skipped.status).toBe(200);
      expect(skipped.body).toEqual({
        done: 1,
        results: [
          { eventId: waiting.event.id, ok: true },
          { eventId: held.event.id, ok: false, code: 'lease_held', message: expect.stringContaining(held.expiresAt.toISOString()) },
          { eventId: settled.event.id, ok: false, code: 'invalid_argument', message: expect.any(String) },
          { eventId: 'no-such-event', ok: false, code: 'invalid_argument', message: expect.any(String) },
        ],
      });
      const info = (await call(s.url, ledger)).body as { skipped: { count: number; lastReason: string; lastAt: string }; lag: number };
      expect(info.skipped).toEqual({ count: 1, lastReason: 'quote expired', lastAt: expect.any(String) });

      // Made due now, its attempt kept: the next fetch has it (the other waiting one is 10 min away).
      const now = await post('reschedule', { eventIds: [moved.event.id], delayMs: 0, confirm: true });
      expect(now).toMatchObject({ status: 200, body: { done: 1, results: [{ eventId: moved.event.id, ok: true }] } });
      const [again] = await rheo.fetch(STREAM, 'ledger', { limit: 4 });
      expect({ id: again.event.id, attempt: again.attempt }).toEqual({ id: moved.event.id, attempt: 2 });
      const refused = await post('reschedule', { eventIds: [again.event.id], deliverAt: '2000-01-01T00:00:00Z', confirm: true });
      expect(refused.body).toMatchObject({ done: 0, results: [{ eventId: again.event.id, ok: false, code: 'lease_held' }] });
      await rheo.ack(again);
      await rheo.ack(held);
    });

    it('cancels a delayed event in every group of the stream, refusing it unconfirmed or unknown', async () => {
      const rheo = s.app.get(Rheo);
      const cancel = (body: unknown) =>
        call(s.url, `/ops/events/api/streams/${STREAM}/cancel-delayed`, { method: 'POST', body, headers: ACTION });
      const later = await rheo.append(STREAM, { payload: { remind: true }, delayMs: 3_600_000 });
      expect(await cancel({ eventId: later.id })).toMatchObject({ status: 428 });
      expect(await cancel({ eventId: later.id, confirm: true, why: 'x' })).toMatchObject({ status: 400 });
      expect(await cancel({ confirm: true })).toMatchObject({ status: 400, body: { field: 'eventId' } });
      expect(await cancel({ eventId: 'no-such-event', confirm: true })).toMatchObject({ status: 400, body: { field: 'id' } });
      const groupsBefore = (await rheo.listGroups(STREAM)).length;
      expect(await cancel({ eventId: later.id, reason: 'order cancelled', confirm: true })).toMatchObject({
        status: 200,
        body: { groups: groupsBefore },
      });
      expect(await cancel({ eventId: later.id, confirm: true })).toMatchObject({ status: 200, body: { groups: 0 } });
    });
  });

  it('follows a global prefix: the page points at its assets and API under it', async () => {
    const s = await start(adapter, {}, 'admin');
    try {
      const page = await call(s.url, '/admin/rheo');
      expect(page.text).toContain('data-base="/admin/rheo"');
      expect(page.text).toContain('href="/admin/rheo/assets/dashboard.css"');
      expect((await call(s.url, '/admin/rheo/api/overview')).status).toBe(200);
    } finally {
      await s.app.close();
    }
  });

  it('reads names holding "/" and spaces from encoded path segments', async () => {
    const s = await start(adapter, {});
    try {
      const rheo = s.app.get(Rheo);
      // New names may not hold '/' any more; ones a store already has are written straight through the backend.
      await rheo.init();
      await rheo.backend.createStream('eu/orders v2', 1);
      const retry = { ...DEFAULT_RETRY };
      await rheo.backend.createGroup({
        stream: 'eu/orders v2',
        group: 'audit/2',
        start: { kind: 'beginning' },
        maxAttempts: 5,
        retry,
        ordering: 'none',
        ...NO_FLOW_LIMITS,
      });
      const res = await call(s.url, `/rheo/api/streams/${encodeURIComponent('eu/orders v2')}/groups/${encodeURIComponent('audit/2')}`);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ stream: 'eu/orders v2', group: 'audit/2', lag: 0 });
    } finally {
      await s.app.close();
    }
  });
});

describe.each<Adapter>(['express', 'fastify'])('the guard option on %s', (adapter) => {
  /** Lets a request in when it carries the ops token: a guard class with a dependency from `imports`. */
  @Injectable()
  class OpsToken {
    readonly value = 'let-me-in';
  }
  @Module({ providers: [OpsToken], exports: [OpsToken] })
  class AuthModule {}
  @Injectable()
  class OpsOnly implements CanActivate {
    constructor(private readonly token: OpsToken) {}
    canActivate(context: ExecutionContext): boolean {
      return context.switchToHttp().getRequest<{ headers: Record<string, string> }>().headers['x-ops-token'] === this.token.value;
    }
  }
  let s: DashboardApp;
  beforeAll(async () => {
    s = await serveDashboard(adapter, {
      imports: [
        RheoModule.forRoot({ backend: memoryBackend(), streams: [{ name: STREAM }] }),
        RheoDashboardModule.forRoot({ readOnly: false, guard: OpsOnly, imports: [AuthModule] }),
      ],
    });
  });
  afterAll(() => s?.app.close());

  it('refuses page, assets, API reads and actions with 403', async () => {
    for (const path of ['/rheo', '/rheo/assets/dashboard.js', '/rheo/api/overview', `${GROUPS}/${GROUP}/dead-letters`]) {
      const res = await call(s.url, path);
      // The refusal too is never sniffed into something else.
      expect([path, res.status, res.headers.get('x-content-type-options')]).toEqual([path, 403, 'nosniff']);
    }
    const post = await call(s.url, `${GROUPS}/${GROUP}/replay`, { method: 'POST', body: { afterSequence: 0 }, headers: ACTION });
    expect(post.status).toBe(403);
    expect(post.headers.get('x-content-type-options')).toBe('nosniff');
  });

  it('lets in what it accepts', async () => {
    const headers = { 'x-ops-token': 'let-me-in' };
    expect((await call(s.url, '/rheo', { headers })).status).toBe(200);
    expect((await call(s.url, '/rheo/api/overview', { headers })).status).toBe(200);
  });
});

describe('RheoDashboardModule options', () => {
  it.each([
    [{ path: '/rheo/:stream' }, 'path'],
    [{ path: 'rheo' }, 'path'],
    [{ readOnly: 'no' }, 'readOnly'],
    [{ showPayloads: 1 }, 'showPayloads'],
    [{ guard: { allow: true } }, 'guard'],
    [{ instance: '' }, 'instance'],
    [{ readonly: false }, 'readonly'],
  ])('refuses %j naming the field', (options, field) => {
    let error: unknown;
    try {
      RheoDashboardModule.forRoot(options as never);
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(RheoError);
    expect(error).toMatchObject({ code: 'invalid_argument', field, message: expect.stringMatching(/^RheoDashboardModule: /) });
  });

  it('fails the boot when the instance has no RheoModule', async () => {
    const ref = await Test.createTestingModule({
      imports: [RheoModule.forRoot({ backend: memoryBackend() }), RheoDashboardModule.forRoot({ instance: 'audit' })],
    }).compile();
    const app = ref.createNestApplication({ logger: false });
    await expect(app.init()).rejects.toMatchObject({ field: 'instance', message: expect.stringContaining('instance "audit"') });
    await app.close();
  });
});
