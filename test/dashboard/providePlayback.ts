/**
 * No blank page: on Provide compute, switching the top bar to a recorded run (or pressing `l`) blanked the whole
 * app ("Cannot convert NaN to a BigInt"). The page must keep rendering, with no page error, on either switch.
 */
import { expect } from "chai";
import { rmSync } from "node:fs";
import path from "node:path";
import type { Browser, Page } from "playwright-core";
import type { DashboardServer } from "../../dashboard/server/server.ts";
import { requireChromium } from "./browser.ts";
import { offlineDeployment, servedDashboard } from "./helpers.ts";
import { priceUnits } from "../../sdk/words/format.ts";
import { baseUnits } from "../../dashboard/src/format.ts";

const RECORDING = "char-transformer.jsonl";
/** Run time inside char-transformer.jsonl where the providers have sent their registration but it has not landed. */
const REGISTERING_MS = 6000;

describe("dashboard: Provide compute survives a switch to a recorded run", function () {
  this.timeout(180_000);
  const dir = path.join(".gpuchain", `dash-provide-playback-${process.pid}`);
  let server: DashboardServer;
  let browser: Browser;
  let page: Page;
  const errors: string[] = [];

  before(async function () {
    requireChromium(this);
    ({ server, browser, page } = await servedDashboard({ deploymentFile: offlineDeployment(dir) }));
    page.on("pageerror", (e) => errors.push(e.message));
  });

  after(async function () {
    await browser?.close();
    await server?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  beforeEach(() => {
    errors.length = 0;
  });

  /**
   * The recording's providers logged "registry register sent" (its price as "0.000800 USDC/step") before their
   * ProviderRegistered events landed: between the two (run time 5.8 s to 6.9 s of char-transformer.jsonl) the page
   * crashed. Playback at 8× passes that span in about 140 ms, so the test pauses there instead of racing it.
   */
  async function pauseInsideRegistration() {
    await page.locator(".pb-time", { hasText: / \/ (?!0:00$)/ }).waitFor({ timeout: 15_000 }); // the recording is in
    const pause = page.getByRole("button", { name: "Pause" });
    if (await pause.isVisible()) await pause.click({ timeout: 5_000 });
    // React hears a range input's change through the native value setter and an input event.
    await page.getByLabel("Playback position").evaluate(
      (el, v) => {
        const set = Object.getOwnPropertyDescriptor(Object.getPrototypeOf(el), "value")!.set!; // HTMLInputElement's
        set.call(el, v);
        el.dispatchEvent(new Event("input", { bubbles: true }));
      },
      String(REGISTERING_MS),
      { timeout: 5_000 },
    );
    await page.waitForFunction(`new URL(location.href).searchParams.get("t") === "${REGISTERING_MS}"`, undefined, {
      timeout: 5_000,
    });
    await page.waitForTimeout(500); // a render or two at that moment
  }

  /** Paused inside the registration, the Provide page is still there (its headings), and nothing was thrown. */
  async function stillRendered(how: string) {
    try {
      await pauseInsideRegistration();
    } catch (e) {
      expect(errors, `page errors after ${how}`).to.deep.equal([]); // a blank app has no playback bar to seek
      throw e;
    }
    expect(errors, `page errors after ${how}`).to.deep.equal([]);
    expect(await page.locator(".page-head .badge-recorded").textContent(), how).to.equal("Recorded");
    expect(await page.locator("h1").textContent(), how).to.equal("Provide compute");
    expect(await page.getByRole("heading", { name: "Your offer" }).isVisible(), how).to.equal(true);
    expect(await page.getByTestId("provide-probation").isVisible(), how).to.equal(true);
    // What it can show: the providers, with the price each logged when it sent its registration (0.001000 USDC).
    const price = page.getByTestId("provider-alice").locator("td").nth(2); // Badges, Device, Price / step
    expect(await price.textContent(), how).to.equal("0.001000");
  }

  it("switching the top bar from live to a recorded run keeps the page", async function () {
    await page.goto(`${server.url}?page=provide`);
    await page.getByRole("heading", { name: "Your offer" }).waitFor();
    await page.getByLabel("Live or recorded run").selectOption(RECORDING);
    await stillRendered("choosing the recorded run in the top bar");
  });

  it("pressing l keeps the page, both ways", async function () {
    await page.goto(`${server.url}?page=provide`);
    await page.getByRole("heading", { name: "Your offer" }).waitFor();
    await page.locator("body").press("l");
    // `l` goes to the server's first recording (names in order): char-transformer.jsonl.
    expect(await page.getByLabel("Live or recorded run").inputValue()).to.equal(RECORDING);
    await stillRendered("pressing l");
    await page.locator("body").press("l");
    await page.locator(".page-head .badge-recorded").waitFor({ state: "detached" });
    await page.getByRole("heading", { name: "Your offer" }).waitFor();
    expect(errors, "page errors after pressing l again").to.deep.equal([]);
  });
});

describe("dashboard: prices read without NaN", function () {
  it("reads formatPrice's text, a bare amount or a number; null for what is not a price", function () {
    expect(priceUnits("0.000800 USDC/step")).to.equal(800n);
    expect(priceUnits("0.0008")).to.equal(800n);
    expect(priceUnits("0.001 USDC")).to.equal(1000n);
    expect(priceUnits(0.0012)).to.equal(1200n);
    for (const bad of ["NaN", "cheap", "", "0", "-1", "1.2.3", "0.0000001", NaN, Infinity, 0, undefined, null, {}]) {
      expect(priceUnits(bad), String(bad)).to.equal(null);
    }
    expect(baseUnits("800")).to.equal(800n);
    expect(baseUnits(800)).to.equal(800n);
    for (const bad of ["NaN", "undefined", "0.5", "", NaN, 0.5, undefined, null]) {
      expect(baseUnits(bad as string), String(bad)).to.equal(null);
    }
  });
});
