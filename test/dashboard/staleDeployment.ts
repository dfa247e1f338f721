/**
 * A new-user walkthrough: `gpuchain dashboard` given a deployment file from a chain that was restarted said "Chain not
 * answering" — the chain answered; the contracts were gone. Real chain (anvil, the protocol deployed through
 * Ignition, then taken back with evm_revert as a restart does), the real dashboard server and a real Chromium:
 * - started on the stale file, the page says the chain answers and the file is stale, with the CLI's own line
 *   (sdk/node/contracts.ts checkDeploymentOn, redeploy advice included) wherever it said "not answering";
 * - redeployed (to new addresses, the file rewritten), the page follows by itself, without a reload;
 * - with a GPU provider beating from another machine (a coordinator listing each beat's machine identity), it
 *   shows "Real, separate machine" for that one only;
 * - the chain restarted under the running dashboard: stale again, then the next deployment's events, none of the old;
 * - the Provide compute and Help pages describe the agent's device choice (WebGPU, else CUDA, else CPU).
 */
import { expect } from "chai";
import { rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { HDNodeWallet, Mnemonic, Wallet, type JsonRpcProvider } from "ethers";
import type { Browser, Page } from "playwright-core";
import { startDashboardServer, type DashboardServer } from "../../dashboard/server/server.ts";
import { DEVICE_CHOICE } from "../../dashboard/src/model/deviceChoice.ts";
import { deployLocal, freePort, startAnvil, TEST_KEYS } from "../../demo/chain.ts";
import { ProcessGroup } from "../../demo/processes.ts";
import { checkDeploymentOn, connectProtocol, rpcProvider } from "../../sdk/node/contracts.ts";
import { DeploymentError, loadDeployment } from "../../sdk/node/deployment.ts";
import { machineId } from "../../sdk/run/machine.ts";
import { requireChromium, launch } from "./browser.ts";
import { runGpuchain } from "../helpers/cli.ts";

const wallets = [20, 21, 22, 23].map((i) =>
  HDNodeWallet.fromMnemonic(
    Mnemonic.fromPhrase("test test test test test test test test test test test junk"),
    `m/44'/60'/0'/0/${i}`,
  ),
);

describe("dashboard: a stale deployment file (the chain restarted), then a redeploy, in a real browser", function () {
  this.timeout(400_000);
  const group = new ProcessGroup(() => {});
  const deploymentId = `dash-stale-${process.pid}`;
  let rpc: string;
  let chain: JsonRpcProvider;
  let file: string;
  let fresh: string; // an evm_snapshot of the chain before any deployment: reverting to it is a restart
  let coordinator: Server;
  let beats: Record<string, unknown>[] = [];
  let server: DashboardServer;
  let browser: Browser;
  let page: Page;

  /** The chain as it was before any deployment (a restarted node), with a new snapshot to restart to again. */
  async function restart() {
    expect(await chain.send("evm_revert", [fresh])).to.equal(true);
    fresh = await chain.send("evm_snapshot", []);
  }

  /** The CLI's own line for this file on this chain (what the page must say), from checkDeploymentOn. */
  async function cliLine(): Promise<string> {
    const err = await checkDeploymentOn(chain, loadDeployment(file), rpc, 31337n).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).to.be.instanceOf(DeploymentError);
    return (err as Error).message;
  }

  async function register(w: HDNodeWallet, name: string, kind: 0 | 1, model: string) {
    await chain.send("anvil_setBalance", [w.address, "0x56BC75E2D63100000"]);
    const p = connectProtocol(loadDeployment(file), w.connect(chain));
    await (await p.registry.register(name, 1_000n, kind, model, 4096)).wait();
  }

  const deploymentBanner = () => page.getByTestId("deployment-problem");
  const unreachable = () => page.getByRole("alert").filter({ hasText: "Chain unreachable" });

  before(async function () {
    requireChromium(this);
    rpc = await startAnvil(group, await freePort(0), {}, "dash-stale-chain");
    chain = rpcProvider(rpc, 50);
    fresh = await chain.send("evm_snapshot", []);
    file = await deployLocal(rpc, deploymentId);
    await restart(); // the file now names addresses without code: stale
    coordinator = createServer((req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      const now = Date.now();
      res.end(JSON.stringify(req.url === "/heartbeats" ? { now, beats } : { unassignments: [] }));
    });
    await new Promise<void>((r) => coordinator.listen(0, "127.0.0.1", () => r()));
    server = await startDashboardServer({
      rpc,
      deploymentFile: file,
      coordinatorUrl: `http://127.0.0.1:${(coordinator.address() as AddressInfo).port}`,
      collectorUrl: `http://127.0.0.1:${await freePort(0)}`,
    });
    browser = await launch();
    page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
  });

  after(async function () {
    await browser?.close();
    await server?.close();
    await new Promise<void>((r) => (coordinator ? coordinator.close(() => r()) : r()));
    chain?.destroy();
    await group.stopAll(3_000);
    rmSync(path.join("ignition", "deployments", deploymentId), { recursive: true, force: true });
  });

  it("started on the stale file: the chain answers, the file is stale, in the CLI's words — never 'not answering'", async function () {
    const line = await cliLine();
    expect(line).to.match(/is stale \(was the chain restarted\?\); deploy again with `/);
    const cli = await runGpuchain(["reserves", "--rpc", rpc, "--deployment", file]);
    expect(cli.code).to.equal(1);
    expect(cli.stderr, "the CLI says the same line").to.contain(line);

    await page.goto(`${server.url}?page=status`);
    await deploymentBanner().waitFor({ timeout: 20_000 });
    const banner = (await deploymentBanner().textContent())!;
    expect(banner).to.contain("Deployment file is stale");
    expect(banner).to.contain(`The chain at ${rpc} answers, but ${line}.`);
    expect(await page.locator(".topbar").textContent()).to.contain("Local chain · 31337");
    await page
      .getByTestId("no-jobs")
      .filter({ hasText: "the chain answers, but the deployment file is stale" })
      .waitFor();
    expect(await page.getByTestId("health-chain (RPC)").textContent()).to.contain("answers, but the deployment file");

    await page.getByRole("link", { name: /On-chain/ }).click();
    await page
      .getByRole("region", { name: "Proof of reserves, live" })
      .getByText("Unknown: the chain answers, but the deployment file is stale")
      .waitFor({ timeout: 20_000 });
    await page.getByTestId("safe-owners").filter({ hasText: "unknown: the chain answers" }).waitFor();
    const text = (await page.locator("body").textContent())!;
    expect(text).to.not.match(/not answering/i);
    expect(await unreachable().count()).to.equal(0);
  });

  it("redeployed at new addresses: the page follows the rewritten file by itself, without a reload", async function () {
    const old = loadDeployment(file).escrow;
    // another deployer nonce, as any transaction before the deployment would leave: new addresses
    await chain.send("anvil_setNonce", [new Wallet(TEST_KEYS.owner).address, "0x20"]);
    await deployLocal(rpc, deploymentId);
    const d = loadDeployment(file);
    expect(d.escrow).to.not.equal(old);
    await page.getByTestId("reserves-held").waitFor({ timeout: 30_000 });
    await deploymentBanner().waitFor({ state: "detached", timeout: 10_000 });
    expect(await page.locator(".contracts").textContent()).to.contain(d.escrow);
    await page.getByTestId("safe-owners").filter({ hasText: "owners must sign" }).waitFor({ timeout: 20_000 });
    expect(await unreachable().count()).to.equal(0);
  });

  it("'Real, separate machine' only for the GPU provider beating from another machine", async function () {
    await register(wallets[0], "gpu-away", 1, "NVIDIA H200");
    await register(wallets[1], "gpu-here", 1, "NVIDIA L4");
    await register(wallets[2], "cpu-away", 0, "x86_64 CPU");
    const other = "0x" + "ab".repeat(16);
    const beat = (w: HDNodeWallet, machine: string) => ({
      provider: w.address,
      jobId: "0",
      epoch: "0",
      step: 0,
      loss: null,
      stepsPerSecond: null,
      ageMs: 100,
      machine,
    });
    beats = [beat(wallets[0], other), beat(wallets[1], machineId()), beat(wallets[2], other)];
    await page.getByRole("link", { name: /Provide compute/ }).click();
    const row = (name: string) => page.getByTestId(`provider-${name}`);
    await row("gpu-away").getByText("Real, separate machine").waitFor({ timeout: 20_000 });
    expect(await row("gpu-here").textContent()).to.contain("Real GPU");
    expect(await row("gpu-here").textContent()).to.not.contain("Real, separate machine");
    expect(await row("cpu-away").textContent()).to.not.contain("Real, separate machine");
    expect(await page.locator(".page-head .badges").textContent()).to.contain("Real, separate machine");
  });

  it("the chain restarted under the running dashboard: stale again, then only the next deployment's events", async function () {
    await restart();
    beats = [];
    await deploymentBanner().waitFor({ timeout: 20_000 });
    expect(await deploymentBanner().textContent()).to.contain(await cliLine());
    // the old chain's registrations are gone (a reorganisation from block 0); what the providers said stays theirs
    const old = page.getByTestId("provider-gpu-away");
    await old.getByText("Real, separate machine").waitFor({ state: "detached", timeout: 10_000 });
    expect(await old.textContent()).to.not.match(/registered at block|Real GPU/);
    await deployLocal(rpc, deploymentId); // nonce 0 again: the first deployment's addresses
    await register(wallets[3], "after-restart", 0, "x86_64 CPU");
    await page.getByTestId("provider-after-restart").getByText("registered at block").waitFor({ timeout: 30_000 });
    await deploymentBanner().waitFor({ state: "detached", timeout: 10_000 });
    for (const gone of ["gpu-away", "gpu-here", "cpu-away"]) {
      expect(await page.getByTestId(`provider-${gone}`).textContent(), gone).to.not.contain("registered at block");
    }
  });

  it("Provide compute and Help say the agent's device choice: WebGPU, else CUDA, else the CPU", async function () {
    await page.goto(`${server.url}?page=provide`);
    expect(await page.getByTestId("device-choice").textContent()).to.equal(DEVICE_CHOICE);
    await page.goto(`${server.url}?page=help`);
    const help = (await page.locator("main").textContent())!;
    expect(help).to.contain(DEVICE_CHOICE);
    expect(help).to.not.match(/first NVIDIA GPU|never shows this badge/);
  });
});
