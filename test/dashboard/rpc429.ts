/**
 * The dashboard's "Chain unreachable" appears on HTTP 429 and clears by itself. Real chain (anvil, the
 * protocol deployed through Ignition) behind the real fault proxy (sdk/node/faultProxy.ts), the real dashboard server and
 * a real Chromium reading the chain through the proxy: every request answered 429 → the banner, naming the 429, with
 * the last good value kept; the proxy calm again → the banner goes by itself.
 */
import { expect } from "chai";
import { rmSync } from "node:fs";
import path from "node:path";
import type { Browser, Page } from "playwright-core";
import type { DashboardServer } from "../../dashboard/server/server.ts";
import { deployLocal, freePort, startAnvil } from "../../demo/chain.ts";
import { ProcessGroup } from "../../demo/processes.ts";
import { startFaultProxy, type FaultProxy } from "../../sdk/node/faultProxy.ts";
import { requireChromium } from "./browser.ts";
import { servedDashboard } from "./helpers.ts";

describe("dashboard: 'Chain unreachable' on real 429s from the RPC, cleared by itself", function () {
  this.timeout(300_000);
  const group = new ProcessGroup(() => {});
  const deploymentId = `dash-429-${process.pid}`;
  let proxy: FaultProxy;
  let server: DashboardServer;
  let browser: Browser;
  let page: Page;

  before(async function () {
    requireChromium(this);
    const rpc = await startAnvil(group, await freePort(0), {}, "dash-429-chain");
    const file = await deployLocal(rpc, deploymentId);
    proxy = await startFaultProxy({ target: rpc, seed: 9 });
    // no keepers: only the chain matters here
    ({ server, browser, page } = await servedDashboard({ rpc: proxy.url, deploymentFile: file }));
  });

  after(async function () {
    await browser?.close();
    await server?.close();
    await proxy?.stop();
    await group.stopAll(3_000);
    rmSync(path.join("ignition", "deployments", deploymentId), { recursive: true, force: true });
  });

  it("all 429 → the banner names the 429 and keeps the last value; calm → it clears without a click", async function () {
    await page.goto(`${server.url}?page=onchain`);
    const held = page.getByTestId("reserves-held");
    await held.waitFor({ timeout: 30_000 });
    const banner = page.getByRole("alert").filter({ hasText: "Chain unreachable" });
    expect(await banner.count()).to.equal(0);
    const good = await held.textContent();
    const before429 = proxy.counts.http429;
    proxy.set({ rate429: 1 });
    await banner.waitFor({ timeout: 20_000 });
    expect(await banner.textContent()).to.contain("429");
    expect(await held.textContent()).to.equal(good); // the last good value, not a zero or a blank
    expect(proxy.counts.http429).to.be.above(before429);
    proxy.set({ rate429: 0 });
    await banner.waitFor({ state: "detached", timeout: 45_000 });
    expect(await held.textContent()).to.equal(good);
  });
});
