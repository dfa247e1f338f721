/** Chromium for the dashboard tests: without it a test fails in CI (CI=true) and is skipped elsewhere. */
import { chromiumMissing, MISSING } from "../../dashboard/chromium.ts";

export { chromiumMissing, launch } from "../../dashboard/chromium.ts";

/** In a mocha `before`: fail in CI, skip elsewhere, when there is no Chromium. */
export function requireChromium(ctx: Mocha.Context): void {
  if (!chromiumMissing()) return;
  if (process.env.CI) throw new Error(MISSING);
  console.log(`      (skipped: ${MISSING})`);
  ctx.skip();
}
