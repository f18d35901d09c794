import type { Browser, Page } from 'playwright-core';
import { ManualClock, memoryBackend, Rheo, RheoDashboardModule, type RheoDashboardOptions, RheoModule } from '../../lib';
import { until } from '../support/until';
import { call, type DashboardApp, serveDashboard } from './apps';
import { launchChromium, openGroup, postFromPage } from './browser';

// Skipping and rescheduling waiting deliveries from the dashboard, in real headless
// Chromium, over the memory backend on a manual clock (the store's time moves only
// when the test says so): the Skip form ends a waiting retry and leaves a delivery in
// flight alone, naming its lease's expiry; the Reschedule form moves a retry's due
// time, by a delay or to a time; Cancel delayed stops every group running a delayed
// event; the view shows the group's skips; a read-only
// dashboard has no forms and refuses the routes.

jest.setTimeout(90_000);

const STREAM = 'orders';
const GROUP = 'billing';
const MINUTE = 60_000;
const LONG_LEASE = 60 * MINUTE;

let browser: Browser;
const opened: DashboardApp[] = [];

async function serve(dashboard: RheoDashboardOptions): Promise<{ s: DashboardApp; rheo: Rheo; clock: ManualClock }> {
  // Near the real time, so a time picked in the browser is within the year a reschedule allows.
  const clock = new ManualClock(Date.now());
  const s = await serveDashboard('express', {
    imports: [
      RheoModule.forRoot({ backend: memoryBackend({ clock }), streams: [{ name: STREAM, partitions: 1 }] }),
      RheoDashboardModule.forRoot(dashboard),
    ],
  });
  opened.push(s);
  const rheo = s.app.get(Rheo);
  await rheo.createGroup(STREAM, GROUP);
  return { s, rheo, clock };
}

/** One line of the last skip's or reschedule's answer. */
function result(page: Page, eventId: string) {
  return page.locator(`[data-testid=waiting-result][data-event-id="${eventId}"]`);
}

beforeAll(async () => {
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  for (const s of opened) await s.app.close();
});

describe('with actions enabled', () => {
  let s: DashboardApp;
  let rheo: Rheo;
  let clock: ManualClock;
  let page: Page;

  beforeAll(async () => {
    ({ s, rheo, clock } = await serve({ readOnly: false }));
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  });

  afterAll(() => page?.close());

  it('skips a waiting retry and leaves a delivery in flight alone, naming when its lease expires', async () => {
    await rheo.append(STREAM, { payload: { n: 1 } });
    await rheo.append(STREAM, { payload: { n: 2 } });
    const [waiting, held] = await rheo.fetch(STREAM, GROUP, { limit: 2, leaseMs: LONG_LEASE });
    await rheo.nack(waiting, { delayMs: MINUTE });
    expect((await rheo.groupInfo(STREAM, GROUP)).lag.lag).toBe(2);

    await openGroup(page, s.url, GROUP);
    expect(await page.locator('[data-testid=skip-state]').isHidden()).toBe(true);
    await page.locator('[data-testid=skip-ids]').fill(`${waiting.event.id}\n${held.event.id}`);
    await page.locator('[data-testid=skip-reason]').fill('quote expired');
    await page.locator('[data-testid=skip]').click();
    await page.locator('[data-testid=notice]', { hasText: 'Skipped 1 of 2' }).waitFor();

    expect(await result(page, waiting.event.id).getAttribute('data-ok')).toBe('true');
    expect(await result(page, waiting.event.id).textContent()).toBe(`skipped ${waiting.event.id}`);
    const refused = result(page, held.event.id);
    expect(await refused.getAttribute('data-ok')).toBe('false');
    expect(await refused.getAttribute('data-code')).toBe('lease_held');
    expect(await refused.textContent()).toContain(held.expiresAt.toISOString());

    const info = await rheo.groupInfo(STREAM, GROUP);
    expect(info.skipped).toEqual({ count: 1, lastReason: 'quote expired', lastAt: new Date(clock.now()) });
    expect(info.lag.lag).toBe(1);
    const state = page.locator('[data-testid=skip-state]');
    await state.waitFor();
    expect(await state.locator('[data-testid=skipped-count]').textContent()).toBe('1');
    expect(await state.locator('[data-testid=skipped-reason]').textContent()).toBe('quote expired');
    expect(await state.locator('[data-testid=skipped-at]').getAttribute('datetime')).toBe(new Date(clock.now()).toISOString());
    expect(await page.locator('[data-testid=group-figures]').textContent()).toContain('· skipped 1');

    // Past the retry's delay: the skipped event is never offered again (the other is still held).
    clock.advance(MINUTE + 1);
    expect(await rheo.fetch(STREAM, GROUP, { limit: 10 })).toEqual([]);
    await rheo.ack(held);
  });

  it('reschedules a waiting retry by a delay: it is due then, not at its old time, its attempt kept', async () => {
    await rheo.append(STREAM, { payload: { n: 3 } });
    const [lease] = await rheo.fetch(STREAM, GROUP, { limit: 1 });
    await rheo.nack(lease, { delayMs: MINUTE });

    await page.locator('[data-testid=reschedule-ids]').fill(lease.event.id);
    await page.locator('[data-testid=reschedule-when]').fill('300');
    await page.locator('[data-testid=reschedule]').click();
    await page.locator('[data-testid=notice]', { hasText: 'Rescheduled 1 of 1' }).waitFor();
    expect(await result(page, lease.event.id).textContent()).toBe(`rescheduled ${lease.event.id}`);

    clock.advance(MINUTE + 1);
    expect(await rheo.fetch(STREAM, GROUP)).toEqual([]);
    clock.advance(5 * MINUTE - (MINUTE + 1) - 1);
    expect(await rheo.fetch(STREAM, GROUP)).toEqual([]);
    clock.advance(1);
    const [again] = await rheo.fetch(STREAM, GROUP);
    expect({ id: again.event.id, attempt: again.attempt }).toEqual({ id: lease.event.id, attempt: 2 });
    await rheo.ack(again);
  });

  it('reschedules a waiting retry to a time picked in the browser', async () => {
    await rheo.append(STREAM, { payload: { n: 4 } });
    const [lease] = await rheo.fetch(STREAM, GROUP, { limit: 1 });
    await rheo.nack(lease, { delayMs: 10 * MINUTE });
    // Two minutes from the store's now, on whole seconds, written as the browser's local time.
    const at = Math.ceil((clock.now() + 2 * MINUTE) / 1000) * 1000;
    const local = await page.evaluate((ms) => {
      const d = new Date(ms);
      const p = (n: number) => String(n).padStart(2, '0');
      return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
    }, at);

    await page.locator('[data-testid=reschedule-mode]').selectOption('time');
    await page.locator('[data-testid=reschedule-ids]').fill(lease.event.id);
    await page.locator('[data-testid=reschedule-when]').fill(local);
    await page.locator('[data-testid=reschedule]').click();
    await until('the answer of the second reschedule', async () => (await result(page, lease.event.id).count()) === 1);

    clock.set(at - 1);
    expect(await rheo.fetch(STREAM, GROUP)).toEqual([]);
    clock.set(at);
    const [again] = await rheo.fetch(STREAM, GROUP);
    expect({ id: again.event.id, attempt: again.attempt }).toEqual({ id: lease.event.id, attempt: 2 });
    await rheo.ack(again);
  });

  it('cancels a delayed event from the form: no group runs it, and the group counts it skipped', async () => {
    const later = await rheo.append(STREAM, { payload: { remind: true }, delayMs: 10 * MINUTE });
    await page.locator('[data-testid=cancel-delayed-id]').fill(later.id);
    await page.locator('[data-testid=cancel-delayed-reason]').fill('order cancelled');
    await page.locator('[data-testid=cancel-delayed]').click();
    await page.locator('[data-testid=notice]', { hasText: `Cancelled ${later.id}: 1 group(s) had it still to run` }).waitFor();
    expect((await rheo.groupInfo(STREAM, GROUP)).skipped).toMatchObject({ count: 2, lastReason: 'order cancelled' });
    await until('the view shows the second skip', async () => (await page.locator('[data-testid=skipped-count]').textContent()) === '2');
    clock.advance(10 * MINUTE);
    expect(await rheo.fetch(STREAM, GROUP)).toEqual([]);
  });

  it('shows a refused request (no ids, unconfirmed) as a failed notice, changing nothing', async () => {
    await page.locator('[data-testid=reschedule-mode]').selectOption('delay');
    await page.locator('[data-testid=skip-ids]').fill(' , ');
    await page.locator('[data-testid=skip]').click();
    await page.locator('[data-testid=notice].failed', { hasText: 'eventIds' }).waitFor();
    expect(await page.locator('[data-testid=waiting-results]').isHidden()).toBe(true);
    const path = `/rheo/api/streams/${STREAM}/groups/${GROUP}/skip`;
    expect(await postFromPage(page, path, { eventIds: ['x'] })).toBe(428);
    expect((await rheo.groupInfo(STREAM, GROUP)).skipped.count).toBe(2);
  });
});

describe('read-only (the default)', () => {
  it('shows the skips without the forms, and refuses skip, reschedule and cancel-delayed with 403', async () => {
    const { s, rheo } = await serve({});
    const e = await rheo.append(STREAM, { payload: { n: 1 } });
    const [lease] = await rheo.fetch(STREAM, GROUP);
    await rheo.nack(lease, { delayMs: MINUTE });
    await rheo.skip(STREAM, GROUP, [e.id], { reason: 'duplicate order' });
    const page = await browser.newPage();
    try {
      await openGroup(page, s.url, GROUP);
      const state = page.locator('[data-testid=skip-state]');
      await state.waitFor();
      expect(await state.locator('[data-testid=skipped-reason]').textContent()).toBe('duplicate order');
      for (const form of ['skip-form', 'reschedule-form', 'cancel-delayed-form', 'waiting-results'])
        expect(await page.locator(`[data-testid=${form}]`).count()).toBe(0);
      const group = `/rheo/api/streams/${STREAM}/groups/${GROUP}`;
      expect(await postFromPage(page, `${group}/skip`, { eventIds: [e.id], confirm: true })).toBe(403);
      expect(await postFromPage(page, `${group}/reschedule`, { eventIds: [e.id], delayMs: 0, confirm: true })).toBe(403);
      expect(await postFromPage(page, `/rheo/api/streams/${STREAM}/cancel-delayed`, { eventId: e.id, confirm: true })).toBe(403);
      const refused = await call(s.url, `${group}/skip`, { method: 'POST', body: { eventIds: [e.id], confirm: true } });
      expect(refused.status).toBe(403);
      expect((await rheo.groupInfo(STREAM, GROUP)).skipped.count).toBe(1);
    } finally {
      await page.close();
    }
  });
});
