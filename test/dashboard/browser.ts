// Headless Chromium for the browser tests: Debian's package, driven by
// playwright-core. Never a downloaded browser (.ci/run installs the package).
import { type Browser, chromium, type Page } from 'playwright-core';

export const CHROMIUM = '/usr/bin/chromium';

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, headless: true });
}

/** Open the dashboard at `url` and the view of `group` from the overview's row; resolves once its figures show. */
export async function openGroup(page: Page, url: string, group: string): Promise<void> {
  await page.goto(`${url}/rheo`);
  await page.locator(`[data-testid=group-row][data-group="${group}"] [data-testid=open-group]`).click();
  await page.locator('[data-testid=group-figures]').waitFor();
}

/** The POST a form or button would send, from the page itself (same origin, the action header set): its status. */
export function postFromPage(page: Page, path: string, body: unknown): Promise<number> {
  return page.evaluate(
    async ([to, payload]) => {
      const res = await fetch(to, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-rheo-dashboard': '1' },
        body: JSON.stringify(payload),
      });
      return res.status;
    },
    [path, body] as const,
  );
}
