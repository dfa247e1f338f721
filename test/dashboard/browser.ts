/**
 * The system Chromium under playwright-core (Playwright's own browser download cannot work here). Without it a
 * test fails in CI (CI=true) with the install command, and is skipped with the same message elsewhere.
 */
import { existsSync } from "node:fs";
import { chromium, type Browser } from "playwright-core";

export const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
export const MISSING = `Chromium not found at ${CHROMIUM}: install it (apt-get install -y chromium) or set CHROMIUM_PATH`;

export function chromiumMissing(): boolean {
  return !existsSync(CHROMIUM);
}

export async function launch(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking"],
  });
}

/** In a mocha `before`: fail in CI, skip elsewhere, when there is no Chromium. */
export function requireChromium(ctx: Mocha.Context): void {
  if (!chromiumMissing()) return;
  if (process.env.CI) throw new Error(MISSING);
  console.log(`      (skipped: ${MISSING})`);
  ctx.skip();
}
