/**
 * "No untrue state" and "less to read", in a real Chromium:
 * - the chain down (nothing listens on the RPC's loopback port): "Chain unreachable" with what was tried, asking
 *   again, and the page follows the chain once a node (anvil) starts on that port; never "reading the chain…" for ever;
 * - a dashboard started before the keepers: the coordinator is "starting" (neutral), no red "Coordinator offline"
 *   banner, until it answered and stopped (or the grace after the server's start ran out);
 * - on a phone (390 × 844) the sticky top bar is one row (≤ 64 px);
 * - small untruths: a bad checksum is called one (not "0 more hex characters"), proof of reserves in a recording is
 *   "recorded at block N", the Provide command cannot be copied from a recording, and the chain chip of a recording
 *   says the chain the recording was made on from its first moment;
 * - axe: no violation on any page, desktop and phone, live and recorded.
 */
import { expect } from "chai";
import { createServer, type Server } from "node:http";
import { rmSync } from "node:fs";
import path from "node:path";
import type { Browser, Page } from "playwright-core";
import AxeBuilder from "@axe-core/playwright";
import { startDashboardServer, type DashboardServer } from "../../dashboard/server/server.ts";
import { coordinatorState, KEEPERS_GRACE_MS } from "../../dashboard/src/sources/config.ts";
import { PAGES } from "../../dashboard/src/pageList.ts";
import { freePort, startAnvil } from "../../demo/chain.ts";
import { ProcessGroup } from "../../demo/processes.ts";
import { launch, requireChromium } from "./browser.ts";
import { offlineDeployment, screenshot, servedDashboard } from "./helpers.ts";

const RECORDING = "sample.jsonl";

describe("dashboard: true states (chain down, keepers starting, phone top bar, small untruths)", function () {
  this.timeout(300_000);
  const dir = path.join(".gpuchain", `dash-true-states-${process.pid}`);
  let browser: Browser;
  let deploymentFile: string;
  const errors: string[] = [];

  before(async function () {
    requireChromium(this);
    deploymentFile = offlineDeployment(dir);
    browser = await launch();
  });

  after(async function () {
    await browser?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function desktopPage(): Promise<Page> {
    const page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
    errors.length = 0;
    page.on("pageerror", (e) => errors.push(e.message));
    return page;
  }

  it("the chain down: 'Chain unreachable' with what was tried, asked again, then followed when a node answers", async function () {
    const rpcPort = await freePort(0);
    const rpc = `http://127.0.0.1:${rpcPort}`;
    const dead = `http://127.0.0.1:${await freePort(0)}`;
    const server = await startDashboardServer({ rpc, deploymentFile, coordinatorUrl: dead, collectorUrl: dead });
    const group = new ProcessGroup(() => {});
    const page = await desktopPage();
    let configAsks = 0;
    page.on("request", (r) => {
      if (r.url().endsWith("/api/config")) configAsks++;
    });
    try {
      await page.goto(server.url);
      const banner = page.getByTestId("chain-unreachable");
      await banner.waitFor({ timeout: 10_000 });
      const text = (await banner.textContent())!;
      expect(text).to.contain("Chain unreachable");
      expect(text, "what it tried").to.contain(`eth_chainId from this dashboard's server to ${rpc}`);
      expect(text, "that it asks again").to.match(/Asking again in \d+ s/);
      const fresh = page.getByRole("status", { name: /^freshness:/ });
      expect(await fresh.textContent()).to.equal("chain unreachable");
      expect(await page.getByTestId("chain-chip").textContent()).to.equal("network unknown (chain not answering)");
      // It keeps asking (2 s, then 4 s …), and keeps saying so.
      const asked = configAsks;
      await page.waitForTimeout(7_000);
      expect(configAsks, "config asked again while the chain is down").to.be.greaterThan(asked);
      expect(await fresh.textContent()).to.equal("chain unreachable");
      expect(await page.getByText("reading the chain…").count()).to.equal(0);
      // "Read again" asks at once.
      const before = configAsks;
      await banner.getByRole("button", { name: "Read again" }).click();
      await page.waitForTimeout(500);
      expect(configAsks, "Read again asks the server").to.be.greaterThan(before);
      // A node starts on the port: the page follows by itself (the deployment file's contracts are not on this
      // fresh chain, so that is said instead: the chain answers).
      await startAnvil(group, rpcPort);
      await page.getByRole("status", { name: /^freshness: block \d+/ }).waitFor({ timeout: 30_000 });
      await banner.waitFor({ state: "detached", timeout: 10_000 });
      expect(await page.getByTestId("chain-chip").textContent()).to.match(/· 31337$/);
      expect(errors).to.deep.equal([]);
    } finally {
      await page.context().close();
      await group.stopAll(3_000);
      await server.close();
    }
  });

  it("the dashboard before the keepers: 'coordinator: starting', no red banner; offline only after it answered", async function () {
    const coordPort = await freePort(0);
    const dead = `http://127.0.0.1:${await freePort(0)}`;
    const server = await startDashboardServer({
      rpc: dead,
      deploymentFile,
      coordinatorUrl: `http://127.0.0.1:${coordPort}`,
      collectorUrl: dead,
    });
    const page = await desktopPage();
    let coordinator: Server | undefined;
    try {
      await page.goto(server.url);
      const chip = page.getByTestId("coordinator-chip");
      const offline = page.getByRole("alert").filter({ hasText: "Coordinator offline" });
      // Nothing listens on the coordinator's port yet: for the first seconds the server has asked it (and failed)
      // several times; the page says it is starting, never offline.
      const seen = new Set<string>();
      for (let i = 0; i < 16; i++) {
        seen.add((await chip.getAttribute("aria-label"))!);
        expect(await offline.count(), `no Coordinator offline banner at ${i * 250} ms`).to.equal(0);
        await page.waitForTimeout(250);
      }
      expect([...seen].filter((s) => s !== "coordinator: checking")).to.deep.equal(["coordinator: starting"]);
      // The keepers come up: a coordinator answering GET /heartbeats on that port (what the server reads of it).
      coordinator = createServer((req, res) => {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(req.url === "/heartbeats" ? JSON.stringify({ now: Date.now(), beats: [] }) : JSON.stringify({}));
      });
      await new Promise<void>((r) => coordinator!.listen(coordPort, "127.0.0.1", () => r()));
      await page
        .locator('[data-testid="coordinator-chip"][aria-label="coordinator online"]')
        .waitFor({ timeout: 15_000 });
      expect(await offline.count()).to.equal(0);
      // It stops answering after it was up: now that is offline, at once (no grace).
      await new Promise<void>((r) => coordinator!.close(() => r()));
      coordinator.closeAllConnections();
      coordinator = undefined;
      await offline.waitFor({ timeout: 15_000 });
      expect(await chip.getAttribute("aria-label")).to.equal("coordinator offline");
      expect(errors).to.deep.equal([]);
    } finally {
      coordinator?.close();
      await page.context().close();
      await server.close();
    }
  });

  it("a coordinator that never answered is offline once the grace after the server's start is over", function () {
    const start = 1_000_000;
    const at = (ms: number, reachable: boolean | null, lastOkAt: number | null = null) =>
      coordinatorState({
        recorded: false,
        snapshot: { at: start + ms, coordinator: { reachable, lastOkAt } },
        serverStartedAt: start,
      });
    expect(at(KEEPERS_GRACE_MS - 1, false)).to.equal("starting");
    expect(at(KEEPERS_GRACE_MS, false)).to.equal("offline");
    expect(at(KEEPERS_GRACE_MS + 1, false)).to.equal("offline");
    expect(at(KEEPERS_GRACE_MS - 1, null)).to.equal("starting");
    expect(at(KEEPERS_GRACE_MS + 1, null)).to.equal("offline");
    expect(at(1, false, start), "answered before and stopped: no grace").to.equal("offline");
    expect(at(1, true, start)).to.equal("online");
    expect(coordinatorState({ recorded: false, snapshot: null, serverStartedAt: start })).to.equal("checking");
    const snapshot = { at: start + 1, coordinator: { reachable: false, lastOkAt: null } };
    expect(coordinatorState({ recorded: false, snapshot, serverStartedAt: undefined }), "no config yet").to.equal(
      "checking",
    );
    expect(coordinatorState({ recorded: false, snapshotError: "x", snapshot, serverStartedAt: start })).to.equal(
      "offline",
    );
    expect(coordinatorState({ recorded: true, snapshot, serverStartedAt: start })).to.equal("recorded");
  });

  describe("served with nothing running", function () {
    let server: DashboardServer;
    let page: Page;

    before(async function () {
      let b: Browser;
      ({ server, browser: b, page } = await servedDashboard({ deploymentFile }));
      await b.close(); // this suite's own browser is used instead
      page = await desktopPage();
    });

    after(async function () {
      await page?.context().close();
      await server?.close();
    });

    it("a recording's chain chip says the chain it was made on from its first moment", async function () {
      await page.goto(`${server.url}?run=${RECORDING}&t=0`);
      await page.locator(".pb-time", { hasText: / \/ (?!0:00$)/ }).waitFor({ timeout: 15_000 });
      // At 0:00 its "Local chain" badge entry (14 s into the run) has not been played yet.
      expect(await page.locator(".page-head .badge").allTextContents()).to.not.include("Local chain");
      expect(await page.getByTestId("chain-chip").textContent()).to.equal("Local chain · 31337 (recorded)");
      expect(await page.locator("header.topbar").textContent()).to.not.contain("Public test network");
    });

    it("proof of reserves in a recording is 'recorded at block N', not 'live'", async function () {
      await page.goto(`${server.url}?page=onchain&run=${RECORDING}&t=0`);
      await page.locator(".pb-time", { hasText: / \/ (?!0:00$)/ }).waitFor({ timeout: 15_000 });
      // At 0:00 no sample has been played: nothing is "read" in a recording.
      expect(await page.locator("#reserves-h").textContent()).to.equal("Proof of reserves, recorded");
      await page.getByText("No reserves sample in the recording up to this moment.").waitFor({ timeout: 5_000 });
      expect(await page.getByText("Reading reserves()").count()).to.equal(0);
      await page.keyboard.press("End");
      const heading = page.locator("#reserves-h");
      await heading.filter({ hasText: /recorded at block \d+$/ }).waitFor({ timeout: 10_000 });
      const block = /block (\d+)$/.exec((await heading.textContent())!)![1];
      expect(await page.getByTestId("reserves-verdict").textContent()).to.contain(`at block ${block}`);
      expect(await page.getByText("Proof of reserves, live").count()).to.equal(0);
    });

    it("the Provide command cannot be copied from a recording, and the page says why", async function () {
      await page.goto(`${server.url}?page=provide&run=${RECORDING}`);
      const copy = page.getByRole("button", { name: "Copy command" });
      await copy.waitFor();
      expect(await copy.isDisabled()).to.equal(true);
      expect(await page.getByTestId("copy-recorded").textContent()).to.contain("switch the top bar to Live");
      await page.getByLabel("Live or recorded run").selectOption("");
      await page.locator(".page-head .badge-recorded").waitFor({ state: "detached" });
      expect(await copy.isDisabled(), "live: the command can be copied").to.equal(false);
      expect(await page.getByTestId("copy-recorded").count()).to.equal(0);
    });

    it("an address with a wrong checksum is called one, not '0 more hex characters'", async function () {
      await page.goto(`${server.url}?page=onchain`);
      const input = page.getByLabel("Address");
      const hint = page.locator("#wallet-hint");
      const good = "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"; // EIP-55's own example
      await input.fill(good.replace("aAeb", "aaeb")); // one capital changed: 40 hex characters, checksum wrong
      expect(await hint.textContent()).to.match(/^the checksum is wrong/);
      expect(await page.getByRole("button", { name: "Check" }).isDisabled()).to.equal(true);
      await input.fill(good.toLowerCase());
      expect(await hint.textContent()).to.equal("a valid address");
      await input.fill(good.slice(0, 41));
      expect(await hint.textContent()).to.equal("1 more hex character");
      await input.fill(good.slice(0, 30));
      expect(await hint.textContent()).to.equal("12 more hex characters");
    });

    it("Help says stake, probation and slashing, short", async function () {
      await page.goto(`${server.url}?page=help`);
      const s = page.getByTestId("help-stake");
      const text = (await s.textContent())!;
      expect(text).to.contain("Stake, probation and slashing");
      expect(text).to.match(/first accepted checkpoint ends probation/);
      expect(text).to.match(/lock goes to the job's client/);
      expect(text).to.match(/takes that job's lock, split between the client, the verifier who found it/);
      expect(text.length, "short").to.be.lessThan(1200);
    });

    it("on a phone (390 × 844) the sticky top bar is one row, ≤ 64 px, live and recorded, on every page", async function () {
      const phone = await (await browser.newContext({ viewport: { width: 390, height: 844 } })).newPage();
      try {
        for (const run of ["", `&run=${RECORDING}`]) {
          for (const { id } of PAGES) {
            await phone.goto(`${server.url}?page=${id}${run}`);
            await phone.locator("main h1").waitFor();
            await phone.waitForTimeout(run ? 1_500 : 4_000); // a recording plays; live: the config and its chain state
            const bar = await phone.locator("header.topbar").evaluate((el) => ({
              height: el.getBoundingClientRect().height,
              overflow: el.scrollWidth - el.clientWidth,
            }));
            console.log(`      phone top bar, ${id}${run ? " (recorded)" : ""}: ${bar.height} px`);
            expect(bar.height, `${id}${run}`).to.be.at.most(64);
            expect(bar.overflow, `${id}${run}: nothing cut off sideways`).to.be.at.most(0);
            const dots = await phone
              .locator("header.topbar .dot")
              .evaluateAll((ds) => ds.map((d) => Math.round(d.getBoundingClientRect().width)));
            expect(dots, `${id}${run}: the status dots are whole`).to.deep.equal([8, 8]);
            if (id === "onchain") await screenshot(phone, `phone-topbar${run ? "-recorded" : ""}`, false);
            // What it collapsed stays for screen readers.
            expect(await phone.getByTestId("chain-chip").textContent()).to.not.equal("");
          }
        }
      } finally {
        await phone.context().close();
      }
    });

    it("axe: no violations on any page, desktop and phone, live and recorded", async function () {
      const found: string[] = [];
      for (const viewport of [
        { width: 1280, height: 900 },
        { width: 390, height: 844 },
      ]) {
        const p = await (await browser.newContext({ viewport })).newPage();
        try {
          for (const run of ["", `&run=${RECORDING}`]) {
            for (const { id } of PAGES) {
              await p.goto(`${server.url}?page=${id}${run}`);
              await p.locator("main h1").waitFor();
              await p.waitForTimeout(1_000);
              const r = await new AxeBuilder({ page: p }).analyze();
              for (const v of r.violations)
                for (const n of v.nodes.slice(0, 2))
                  found.push(`${viewport.width}px ${id}${run}: ${v.id} (${v.impact}) ${n.target.join(" ")}`);
            }
          }
        } finally {
          await p.context().close();
        }
      }
      expect(found).to.deep.equal([]);
    });
  });
});
