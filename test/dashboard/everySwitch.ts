/**
 * "No blank page": every page survives every choice of the top bar's run selector (live and each
 * recording the server offers) and every keyboard shortcut, in a real Chromium, with no page error, no console
 * error and the app never blank. No chain or keepers run (the dashboard server watches closed loopback ports): the
 * live side is the dashboard with everything down, the recorded side needs nothing.
 */
import { expect } from "chai";
import { rmSync } from "node:fs";
import path from "node:path";
import type { Browser, Page } from "playwright-core";
import type { DashboardServer } from "../../dashboard/server/server.ts";
import { PAGES } from "../../dashboard/src/pageList.ts";
import { requireChromium } from "./browser.ts";
import { offlineDeployment, servedDashboard } from "./helpers.ts";

/** Every shortcut `?` lists (dashboard/src/keyboard.ts), as Playwright key presses; "g s" is two presses. */
const KEYS: string[] = [
  "?",
  "Escape",
  ...PAGES.map((p) => p.key),
  ...PAGES.map((p) => `g ${p.g}`),
  "/",
  "l",
  "Space",
  "ArrowLeft",
  "ArrowRight",
  "Home",
  "End",
  "[",
  "]",
];

/** Nothing focused (a key then reaches the page's shortcuts, not a field). */
const BLUR = "document.activeElement && document.activeElement.blur()";

describe("dashboard: every page survives every top-bar switch and every shortcut", function () {
  this.timeout(900_000);
  const dir = path.join(".gpuchain", `dash-every-switch-${process.pid}`);
  let server: DashboardServer;
  let browser: Browser;
  let page: Page;
  const errors: string[] = [];

  before(async function () {
    requireChromium(this);
    ({ server, browser, page } = await servedDashboard({ deploymentFile: offlineDeployment(dir) }));
    page.on("pageerror", (e) => errors.push(`pageerror: ${e.message}`));
    page.on("console", (m) => {
      if (m.type() === "error") errors.push(`console: ${m.text()}`);
    });
  });

  after(async function () {
    await browser?.close();
    await server?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** The app is there (a top bar, a page heading, text) and nothing was thrown or logged as an error. */
  async function alive(how: string) {
    // Two frames: a render that throws does so within them.
    await page.evaluate("new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))");
    // (A string: the tests' TypeScript has no DOM types.)
    const seen = await page.evaluate<{ children: number; text: number; h1: string; topbar: boolean }>(`(() => {
      const root = document.getElementById("root");
      return {
        children: root ? root.childElementCount : 0,
        text: root ? root.innerText.trim().length : 0,
        h1: document.querySelector("main h1")?.textContent ?? "",
        topbar: document.querySelector("header.topbar") !== null,
      };
    })()`);
    expect(errors, `errors after ${how}`).to.deep.equal([]);
    expect(seen.children, `app root children after ${how}`).to.be.greaterThan(0);
    expect(seen.text, `app text after ${how}`).to.be.greaterThan(100);
    expect(seen.h1, `page heading after ${how}`).to.not.equal("");
    expect(seen.topbar, `top bar after ${how}`).to.equal(true);
  }

  const runSelect = () => page.getByLabel("Live or recorded run");

  /** Back to `pageId` with `choice` in the top bar, the overlay closed and nothing focused. */
  async function restore(pageId: string, choice: string) {
    await page.keyboard.press("Escape");
    await page.evaluate(BLUR);
    if ((await runSelect().inputValue()) !== choice) await runSelect().selectOption(choice);
    await page.evaluate(BLUR);
    const want = PAGES.find((p) => p.id === pageId)!;
    if ((new URL(page.url()).searchParams.get("page") ?? "status") !== pageId) await page.keyboard.press(want.key);
    await page.locator("main h1", { hasText: want.title }).waitFor({ timeout: 10_000 });
  }

  it("pages × top-bar choices × shortcuts: no page error, never blank", async function () {
    await page.goto(server.url);
    await page.locator("main h1").waitFor();
    // The top bar's choices: live ("") and every recording the server lists (once its config is in).
    await runSelect().locator("option").nth(1).waitFor({ state: "attached", timeout: 15_000 });
    const choices = await runSelect()
      .locator("option")
      .evaluateAll((os) => os.map((o) => (o as unknown as { value: string }).value));
    expect(choices.length, "live and at least one recording").to.be.greaterThan(1);
    let presses = 0;
    for (const { id } of PAGES) {
      for (const choice of choices) {
        await page.goto(`${server.url}?page=${id}`);
        await page.locator("main h1").waitFor();
        await alive(`opening ${id}`);
        await runSelect().selectOption(choice);
        await page.waitForTimeout(300); // a recording loads and starts playing
        await alive(`${id}: top bar → ${choice || "live"}`);
        // …and back to live and to the choice again, from the page itself.
        for (const other of choices.filter((c) => c !== choice)) {
          await runSelect().selectOption(other);
          await alive(`${id}: top bar ${choice || "live"} → ${other || "live"}`);
          await runSelect().selectOption(choice);
          await alive(`${id}: top bar ${other || "live"} → ${choice || "live"}`);
        }
        await page.evaluate(BLUR);
        for (const key of KEYS) {
          for (const k of key.split(" ")) await page.keyboard.press(k);
          presses++;
          await page.waitForTimeout(60);
          await alive(`${id} on ${choice || "live"}: key ${key}`);
          await restore(id, choice).catch((e: Error) => {
            throw new Error(`back to ${id} on ${choice || "live"} after key ${key}: ${e.message}`);
          });
          await alive(`${id} on ${choice || "live"}: after key ${key}, back`);
        }
      }
    }
    expect(presses).to.equal(PAGES.length * choices.length * KEYS.length);
    console.log(`      ${PAGES.length} pages × ${choices.length} top-bar choices × ${KEYS.length} shortcuts`);
  });

  it("every page at every second of every recording: no page error, never blank", async function () {
    await page.goto(server.url);
    await runSelect().locator("option").nth(1).waitFor({ state: "attached", timeout: 15_000 });
    const recordings = (
      await runSelect()
        .locator("option")
        .evaluateAll((os) => os.map((o) => (o as unknown as { value: string }).value))
    ).filter(Boolean);
    let seeks = 0;
    for (const name of recordings) {
      for (const { id } of PAGES) {
        await page.goto(`${server.url}?page=${id}&run=${encodeURIComponent(name)}&t=0`);
        const time = page.locator(".pb-time", { hasText: / \/ (?!0:00$)/ });
        await time.waitFor({ timeout: 15_000 });
        const duration = Number(await page.getByLabel("Playback position").getAttribute("max"));
        expect(duration, `${name} duration`).to.be.greaterThan(0);
        // Forward a second at a time, then back to the start (a backwards seek folds again from the start).
        for (const t of [...Array.from({ length: Math.floor(duration / 1000) + 1 }, (_, i) => i * 1000), 0]) {
          await page.getByLabel("Playback position").evaluate((el, v) => {
            const set = Object.getOwnPropertyDescriptor(Object.getPrototypeOf(el), "value")!.set!;
            set.call(el, v);
            el.dispatchEvent(new Event("input", { bubbles: true }));
          }, String(t));
          seeks++;
          await alive(`${id} on ${name} at ${t} ms`);
        }
      }
    }
    console.log(`      ${seeks} positions checked`);
  });
});
