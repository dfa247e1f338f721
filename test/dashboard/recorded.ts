/**
 * The dashboard on the committed recording (recordings/sample.jsonl), in a real Chromium: playback reaches the
 * settlement with the Recorded badge on every page, the `?` overlay and shortcuts, a11y, bad requests.
 * No chain runs: a recording needs none.
 */
import { expect } from "chai";
import { readFileSync, rmSync } from "node:fs";
import path from "node:path";
import type { Browser, Page } from "playwright-core";
import type { DashboardServer } from "../../dashboard/server/server.ts";
import { requireChromium } from "./browser.ts";
import { offlineDeployment, PAGE_IDS, screenshot, seriousViolations, servedDashboard } from "./helpers.ts";

/** What the committed recording says, read from the file itself (a re-recorded sample changes times and keys). */
function sampleFacts() {
  const entries = readFileSync("recordings/sample.jsonl", "utf8")
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l));
  const end = Math.max(...entries.map((e: { ms: number }) => e.ms));
  const key = (name: string) =>
    entries.find(
      (e: { source: string; data: { msg?: string } }) => e.source === name && e.data?.msg === "using provider key",
    ).data.address as string;
  const clock = (ms: number) => `${Math.floor(ms / 60_000)}:${String(Math.floor(ms / 1000) % 60).padStart(2, "0")}`;
  const settledBlock = entries.find(
    (e: { kind: string; data: { name?: string } }) => e.kind === "event" && e.data.name === "JobSettled",
  ).data.blockNumber as number;
  // Verifiers whose refusal of the first refused checkpoint was logged before the refusal landed on chain: the
  // collector sends at 2 of 3, so a third signature may come after (it then does not count as signed).
  type Entry = { ms: number; kind: string; data: { name?: string; msg?: string; action?: string; step?: number } };
  const refusedAt = (entries as Entry[]).find((e) => e.kind === "event" && e.data.name === "CheckpointRefused")!.ms;
  const refusalSigners = (entries as Entry[]).filter(
    (e) => e.kind === "log" && e.data.msg === "checkpoint decided" && e.data.action === "refuse" && e.ms <= refusedAt,
  ).length;
  // The recording goes on past the settlement (the withdrawals): its last block is its last event's.
  const events = (entries as (Entry & { data: { blockNumber?: number } })[]).filter((e) => e.kind === "event");
  const lastBlock = Math.max(settledBlock, ...events.map((e) => e.data.blockNumber ?? 0));
  const reports = events.filter((e) => e.data.name === "CheckpointReported").length;
  return { end, bob: key("bob"), duration: `${clock(end)} / ${clock(end)}`, lastBlock, refusalSigners, reports };
}

describe("dashboard: the recorded run in a real browser", function () {
  this.timeout(300_000);
  const dir = path.join(".gpuchain", `dash-rec-${process.pid}`);
  let server: DashboardServer;
  let browser: Browser;
  let page: Page;
  const facts = sampleFacts();

  before(async function () {
    requireChromium(this);
    ({ server, browser, page } = await servedDashboard({ deploymentFile: offlineDeployment(dir) }));
  });

  after(async function () {
    await browser?.close();
    await server?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("plays the recording to the settlement, with the Recorded badge on every page", async function () {
    await page.goto(`${server.url}?run=sample.jsonl`);
    await page.getByRole("region", { name: "Recorded run playback" }).waitFor();
    await page.getByLabel("Playback speed").selectOption("32");
    await page
      .getByText("job 1 settled: providers paid 0.700000 USDC, client refund 0.200000 USDC")
      .first()
      .waitFor({ timeout: 30_000 });
    expect(await page.locator('.strip li[aria-current="step"]').textContent()).to.equal("Settled");
    expect(await page.getByTestId("accepted-steps").textContent()).to.equal("600 of 600");
    expect(await page.getByTestId("paid").textContent()).to.equal("0.700000 USDC");
    for (const id of PAGE_IDS) {
      await page.goto(`${server.url}?page=${id}&run=sample.jsonl&t=${facts.end}`);
      await page.locator(".page-head .badge-recorded").waitFor();
      expect(await page.locator(".page-head .badge-recorded").textContent()).to.equal("Recorded");
      await screenshot(page, `recorded-${id}`);
    }
  });

  it("saves a small picture of each page (docs/screenshots is copied from these)", async function () {
    const small = await browser.newContext({ viewport: { width: 1280, height: 860 }, deviceScaleFactor: 0.6 });
    const p = await small.newPage();
    for (const id of PAGE_IDS) {
      await p.goto(`${server.url}?page=${id}&run=sample.jsonl&t=${facts.end}`);
      await p.locator(".page-head .badge-recorded").waitFor();
      await p.waitForTimeout(500);
      await screenshot(p, `small-${id}`, false);
    }
    const phone = await browser.newContext({ viewport: { width: 390, height: 844 }, deviceScaleFactor: 1 });
    const q = await phone.newPage();
    await q.goto(`${server.url}?run=sample.jsonl&t=${facts.end}`);
    await q.locator(".page-head .badge-recorded").waitFor();
    await q.waitForTimeout(500);
    await screenshot(q, "small-phone-status", false);
    await small.close();
    await phone.close();
  });

  it("shows the failure story: the refusal, the failover and who signed", async function () {
    await page.goto(`${server.url}?run=sample.jsonl&t=${facts.end}`);
    await page.getByText("step 100: refused: mallory's step 100").waitFor();
    await page.getByText("step 100: failover: alice taken away by the coordinator").waitFor();
    const rows = page.getByRole("region", { name: "Checkpoints and signatures" }).locator("tbody tr");
    expect(await rows.count()).to.equal(facts.reports); // one row per reported checkpoint
    expect(await rows.first().textContent()).to.match(
      new RegExp(`mallory.*refused.*${facts.refusalSigners} of 3 signed.*replay-mismatch`),
    );
    await page.goto(`${server.url}?page=provide&run=sample.jsonl&t=${facts.end}`);
    expect(await page.getByTestId("provider-bob").textContent()).to.match(/Capped profile.*500.*0\.600000/);
    expect(await page.getByTestId("provider-mallory").textContent()).to.match(/Injected fault/);
    // No provider in this run reported a GPU or another machine: those badges never show.
    expect(await page.locator(".badge-real-gpu, .badge-real-separate-machine").count()).to.equal(0);
  });

  it("says where a typed price stands: strictly cheaper only, 6 decimals, nothing for a price that is not one", async () => {
    // The recording's providers ask 0.000800, 0.001000 and 0.001200 USDC/step; the form starts at 0.0010.
    await page.goto(`${server.url}?page=provide&run=sample.jsonl&t=${facts.end}`);
    const standing = page.getByTestId("price-standing");
    expect(await standing.textContent()).to.match(
      /^At 0\.001000 USDC\/step you are cheaper than 1 of 3 current providers \(they ask 0\.000800, 0\.001000, 0\.001200 USDC\/step\)/,
    );
    const price = page.getByLabel("Price per step (USDC)");
    await price.fill("0.0009");
    expect(await standing.textContent()).to.contain("At 0.000900 USDC/step you are cheaper than 2 of 3 current");
    for (const bad of ["-1", "0", ""]) {
      await price.fill(bad);
      expect(await standing.count(), `price "${bad}"`).to.equal(0);
    }
  });

  it("opens and closes the ? overlay; shortcuts navigate; typing ? into the wallet does not open it", async () => {
    await page.goto(`${server.url}?run=sample.jsonl&t=1000`);
    await page.locator("h1").waitFor();
    await page.keyboard.press("?");
    await page.getByRole("dialog", { name: "Keyboard shortcuts" }).waitFor();
    await page.keyboard.press("?");
    await page.getByRole("dialog").waitFor({ state: "detached" });
    await page.keyboard.press("?");
    await page.keyboard.press("Escape");
    await page.getByRole("dialog").waitFor({ state: "detached" });
    await page.keyboard.press("3");
    expect(await page.locator("h1").textContent()).to.equal("On-chain");
    await page.keyboard.press("g");
    await page.keyboard.press("p");
    expect(await page.locator("h1").textContent()).to.equal("Provide compute");
    await page.keyboard.press("/");
    expect(await page.locator("h1").textContent()).to.equal("On-chain");
    // the page renders, then its effect focuses the field: wait for it (a fixed read raced the render under load)
    await page.waitForFunction(`document.activeElement?.id === "wallet-input"`, undefined, { timeout: 5_000 });
    await page.keyboard.type("0x12?");
    expect(await page.getByLabel("Address").inputValue()).to.equal("0x12?");
    expect(await page.getByRole("dialog").count()).to.equal(0);
    expect(await page.getByText("not an address").count()).to.equal(1);
  });

  it("plays, pauses and seeks from the keyboard; the view lives in the URL", async function () {
    await page.goto(`${server.url}?run=sample.jsonl&t=0`);
    await page.getByRole("button", { name: "Play" }).waitFor();
    await page.locator(".pb-time", { hasText: ` / ${facts.duration.split(" / ")[1]}` }).waitFor(); // loaded
    await page.keyboard.press("End");
    await page.waitForFunction(`Number(new URL(location.href).searchParams.get("t")) > ${facts.end - 1000}`);
    expect(await page.locator(".pb-time").textContent()).to.equal(facts.duration);
    await page.keyboard.press("Home");
    await page.waitForFunction(`new URL(location.href).searchParams.get("t") === "0"`);
    await page.keyboard.press("]");
    expect(await page.getByLabel("Playback speed").inputValue()).to.equal("16");
    await page.keyboard.press(" ");
    await page.getByRole("button", { name: "Pause" }).waitFor();
    await page.keyboard.press(" ");
    await page.getByRole("button", { name: "Play" }).waitFor();
  });

  it("checks a wallet from the recording's events", async function () {
    await page.goto(`${server.url}?page=onchain&run=sample.jsonl&t=${facts.end}`);
    // The recording is fetched after the page: checked before it is in, the wallet is that of no events yet.
    await page.locator(".pb-time", { hasText: facts.duration }).waitFor();
    await page.getByLabel("Address").fill(facts.bob);
    await page.getByRole("button", { name: "Check" }).click();
    const result = page.getByTestId("wallet-result");
    await result.waitFor();
    // The recording holds the withdrawals after the settlement: bob's 0.6 USDC was paid out. Waited for, not read
    // once: the page folds the events in as they arrive, and the result follows them (CI: a click before the fold
    // reached the end kept "0.000000 USDC" for good while naming the last block).
    const withdrawn = page.getByTestId("wallet-withdrawn");
    await withdrawn.filter({ hasText: "0.600000 USDC" }).waitFor({ timeout: 15_000 });
    expect(await result.textContent()).to.match(
      /job 1 as provider: 500 steps accepted, 0 refused — paid for every step/,
    );
    expect(await result.textContent()).to.contain(`From the recording's events up to block ${facts.lastBlock}`);
    // The checked wallet follows the playback: at the recording's start nothing is withdrawn yet, at its end again
    // the 0.6 USDC (before, the figures stayed those of the moment Check was pressed).
    await page.locator("body").press("Home");
    await withdrawn.filter({ hasText: "0.000000 USDC" }).waitFor({ timeout: 15_000 });
    await page.locator("body").press("End");
    await withdrawn.filter({ hasText: "0.600000 USDC" }).waitFor({ timeout: 15_000 });
  });

  it("has no serious accessibility violation on any page, wide or phone-width", async function () {
    const found: string[] = [];
    for (const width of [1280, 390]) {
      await page.setViewportSize({ width, height: 900 });
      for (const id of PAGE_IDS) {
        await page.goto(`${server.url}?page=${id}&run=sample.jsonl&t=${facts.end}`);
        await page.locator("h1").waitFor();
        await page.waitForTimeout(300);
        for (const v of await seriousViolations(page)) found.push(`${id} @${width}px: ${v}`);
        if (width === 390) await screenshot(page, `phone-${id}`);
      }
    }
    expect(found).to.deep.equal([]);
  });

  it("answers bad requests with a 400 and the reason, and refuses anything but GET", async function () {
    const bad = await fetch(`${server.url}api/recordings/..%2Fpackage.json`);
    expect(bad.status).to.equal(400);
    expect(((await bad.json()) as { reason: string }).reason).to.match(/recording name/);
    const param = await fetch(`${server.url}api/status?x=1`);
    expect(param.status).to.equal(400);
    const post = await fetch(`${server.url}api/status`, { method: "POST", body: "{}" });
    expect(post.status).to.equal(405);
    expect(((await post.json()) as { reason: string }).reason).to.contain("read-only");
    const missing = await fetch(`${server.url}api/recordings/none.jsonl`);
    expect(missing.status).to.equal(404);
  });
});
