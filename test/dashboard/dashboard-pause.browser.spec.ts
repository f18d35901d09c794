import type { Browser, Page } from 'playwright-core';
import { memoryBackend, Rheo, RheoDashboardModule, type RheoDashboardOptions, RheoModule } from '../../lib';
import { until } from '../support/until';
import { call, type DashboardApp, serveDashboard } from './apps';
import { launchChromium, openGroup, postFromPage } from './browser';

// Pausing a group from the dashboard, in real headless Chromium: the Pause form and
// the Resume button of the group view change the stored pause, the view shows what
// holds the group back (since, until, by, reason), and a read-only dashboard shows
// the pause without the buttons and refuses the routes.

jest.setTimeout(90_000);

const STREAM = 'orders';
const HOUR = 3_600_000;

let browser: Browser;
const opened: DashboardApp[] = [];

async function serve(dashboard: RheoDashboardOptions): Promise<DashboardApp> {
  const served = await serveDashboard('express', {
    imports: [RheoModule.forRoot({ backend: memoryBackend(), streams: [{ name: STREAM }] }), RheoDashboardModule.forRoot(dashboard)],
  });
  opened.push(served);
  const rheo = served.app.get(Rheo);
  await rheo.createGroup(STREAM, 'billing');
  await rheo.append(STREAM, { payload: { n: 1 } });
  return served;
}

/** The POST the group view's `action` button would send (see postFromPage): its status. */
function postAction(page: Page, action: string, body: unknown): Promise<number> {
  return postFromPage(page, `/rheo/api/streams/${STREAM}/groups/billing/${action}`, body);
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
  let page: Page;

  beforeAll(async () => {
    s = await serve({ readOnly: false });
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  });

  afterAll(() => page?.close());

  it('pauses the group from the form: the stored pause, and the view shows since, until, by and reason', async () => {
    const rheo = s.app.get(Rheo);
    await openGroup(page, s.url, 'billing');
    expect(await page.locator('[data-testid=pause-state]').isHidden()).toBe(true);
    expect(await page.locator('[data-testid=resume]').isHidden()).toBe(true);

    await page.locator('[data-testid=pause-until]').selectOption('1h');
    await page.locator('[data-testid=pause-reason]').fill('card API down');
    await page.locator('[data-testid=pause-by]').fill('ana');
    await page.locator('[data-testid=pause]').click();
    await page.locator('[data-testid=notice]', { hasText: 'Paused' }).waitFor();

    const { paused } = await rheo.groupInfo(STREAM, 'billing');
    expect(paused).toEqual({ pausedAt: expect.any(Date), until: expect.any(Date), reason: 'card API down', by: 'ana' });
    // One hour from the store's clock as the service read it, just before the store stamped pausedAt.
    expect(paused!.until!.getTime()).toBeGreaterThan(paused!.pausedAt.getTime());
    expect(paused!.until!.getTime()).toBeLessThanOrEqual(paused!.pausedAt.getTime() + HOUR);
    expect(await rheo.fetch(STREAM, 'billing')).toEqual([]);

    const state = page.locator('[data-testid=pause-state]');
    await state.waitFor();
    expect(await state.locator('[data-testid=pause-since]').getAttribute('datetime')).toBe(paused!.pausedAt.toISOString());
    expect(await state.locator('[data-testid=pause-until-time]').getAttribute('datetime')).toBe(paused!.until!.toISOString());
    expect(await state.locator('[data-testid=pause-by-name]').textContent()).toBe('ana');
    expect(await state.locator('[data-testid=pause-reason-text]').textContent()).toBe('card API down');
    expect(await page.locator('[data-testid=group-row][data-group="billing"] [data-testid=group-paused]').textContent()).toBe('paused');
    await page.locator('[data-testid=resume]').waitFor();
  });

  it('resumes the group with the button: nothing holds it back, and the view says so', async () => {
    const rheo = s.app.get(Rheo);
    await page.locator('[data-testid=resume]').click();
    await page.locator('[data-testid=notice]', { hasText: 'Resumed: the group claims again' }).waitFor();
    expect((await rheo.groupInfo(STREAM, 'billing')).paused).toBeNull();
    await until('the pause line hidden', () => page.locator('[data-testid=pause-state]').isHidden());
    expect(await page.locator('[data-testid=resume]').isHidden()).toBe(true);
    expect(await page.locator('[data-testid=group-paused]').count()).toBe(0);
  });

  it('refuses a pause without confirm, without the action header, or with an unknown key, pausing nothing', async () => {
    const rheo = s.app.get(Rheo);
    const path = `/rheo/api/streams/${STREAM}/groups/billing/pause`;
    expect(await postAction(page, 'pause', { reason: 'x' })).toBe(428);
    expect(await postAction(page, 'pause', { confirm: true, why: 'x' })).toBe(400);
    expect(await postAction(page, 'pause', { confirm: true, until: 'soon' })).toBe(400);
    const noHeader = await call(s.url, path, { method: 'POST', body: { confirm: true } });
    expect(noHeader.status).toBe(403);
    expect((await rheo.groupInfo(STREAM, 'billing')).paused).toBeNull();
  });
});

describe('read-only (the default)', () => {
  let s: DashboardApp;

  beforeAll(async () => {
    s = await serve({});
    await s.app.get(Rheo).pauseGroup(STREAM, 'billing', { reason: 'migrating the ledger', by: 'ops' });
  });

  it('shows the pause without Pause or Resume, and refuses both routes with 403', async () => {
    const rheo = s.app.get(Rheo);
    const page = await browser.newPage();
    try {
      await openGroup(page, s.url, 'billing');
      const state = page.locator('[data-testid=pause-state]');
      await state.waitFor();
      expect(await state.locator('[data-testid=pause-reason-text]').textContent()).toBe('migrating the ledger');
      expect(await state.locator('[data-testid=pause-until-time]').textContent()).toBe('until resumed');
      expect(await page.locator('[data-testid=pause-form]').count()).toBe(0);
      expect(await page.locator('[data-testid=resume]').count()).toBe(0);
      expect(await postAction(page, 'resume', { confirm: true })).toBe(403);
      expect(await postAction(page, 'pause', { confirm: true })).toBe(403);
      expect((await rheo.groupInfo(STREAM, 'billing')).paused).toMatchObject({ reason: 'migrating the ledger', by: 'ops' });
    } finally {
      await page.close();
    }
  });

  it("shows the group's stored settings, and a change made elsewhere (updateGroup) once the view refreshes", async () => {
    const rheo = s.app.get(Rheo);
    const page = await browser.newPage();
    try {
      await openGroup(page, s.url, 'billing');
      const figures = page.locator('[data-testid=group-figures]');
      expect(await figures.textContent()).toContain('max attempts 5 · retry 1000 ms ×2 up to 60000 ms · ordering none');
      await rheo.updateGroup(STREAM, 'billing', { maxAttempts: 9, retry: { initialMs: 250, factor: 3 } });
      await until('the new settings shown', async () =>
        (await figures.textContent())?.includes('max attempts 9 · retry 250 ms ×3 up to 60000 ms'),
      );
    } finally {
      await page.close();
    }
  });
});
