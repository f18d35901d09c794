// Headless Chromium for the browser tests: Debian's package, driven by
// playwright-core. Never a downloaded browser (.ci/run installs the package).
import { type Browser, chromium } from 'playwright-core';

export const CHROMIUM = '/usr/bin/chromium';

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, headless: true });
}
