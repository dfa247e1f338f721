/**
 * The system Chromium under playwright-core, for the dashboard's tests and bench (Playwright's own browser
 * download cannot work here): CHROMIUM_PATH, else Debian's /usr/bin/chromium.
 */
import { existsSync } from "node:fs";
import { chromium, type Browser } from "playwright-core";

export const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
export const MISSING =
  `Chromium not found at ${CHROMIUM}: install it (apt-get install -y chromium) or set ` + `CHROMIUM_PATH`;

export function chromiumMissing(): boolean {
  return !existsSync(CHROMIUM);
}

export async function launch(): Promise<Browser> {
  if (chromiumMissing()) throw new Error(MISSING);
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking"],
  });
}
