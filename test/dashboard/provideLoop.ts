/**
 * The provider's whole loop, in a real Chromium against a real chain (anvil, the protocol deployed
 * through Ignition): the Provide page's command is copied and run exactly as shown (through `sh`, npx included) from
 * a folder outside the repository; its paths are absolute, so it registers with the key under this installation and
 * leaves nothing in that folder. Once it is registered, "cheaper than" compares it with the other providers only. A
 * client's job is assigned to it; each checkpoint it reports is accepted with real 2-of-3 Safe owner signatures,
 * then the verdict; the page follows it to "Credited … withdrawable from T" (T: the verdict's window end + 1 s, the
 * escrow's rule) and the agent's own terminal says the same credits and the same withdraw command; once the job is
 * settled the page's withdraw command, run from that folder, pays the provider.
 */
import { expect } from "chai";
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { Wallet, type ContractTransactionResponse, type JsonRpcProvider } from "ethers";
import type { Browser, Page } from "playwright-core";
import { startDashboardServer, type DashboardServer } from "../../dashboard/server/server.ts";
import { deployLocal, freePort, startAnvil, TEST_KEYS } from "../../demo/chain.ts";
import { ProcessGroup } from "../../demo/processes.ts";
import { connectProtocol, rpcProvider, type Protocol } from "../../sdk/node/contracts.ts";
import { loadDeployment } from "../../sdk/node/deployment.ts";
import { formatTime } from "../../sdk/words/format.ts";
import { loadKey } from "../../sdk/run/keys.ts";
import { sleep } from "../../sdk/run/retry.ts";
import { checkpointDecisionDigest, escrowDomain, verdictDigest } from "../../sdk/rules/verifierSignatures.ts";
import { loadTemplate } from "../../workloads/index.ts";
import { safeSignatures } from "../helpers/cli.ts";
import { launch, requireChromium } from "./browser.ts";
import { screenshot } from "./helpers.ts";

const REPO = path.resolve(".");
const WINDOW = 3_600n;

/** The environment a person's shell has: this Node first on PATH, none of the npm variables mocha ran under. */
function personEnv(): NodeJS.ProcessEnv {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k)));
  return { ...env, PATH: `${path.dirname(process.execPath)}${path.delimiter}${env.PATH ?? ""}` };
}

/** Runs `command` through sh in `cwd`, in its own process group (npx starts children). */
function shell(command: string, cwd: string): { child: ChildProcess; out: () => string; code: Promise<number> } {
  const child = spawn("sh", ["-c", command], {
    cwd,
    env: personEnv(),
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stdout!.on("data", (d) => (out += d));
  child.stderr!.on("data", (d) => (out += d));
  const code = new Promise<number>((resolve) => child.on("close", (c) => resolve(c ?? -1)));
  return { child, out: () => out, code };
}

describe("dashboard: Provide compute follows a provider's whole loop", function () {
  this.timeout(600_000);
  const group = new ProcessGroup(() => {});
  const deploymentId = `provide-loop-${process.pid}`;
  const runDir = path.join(".gpuchain", `provide-loop-${process.pid}`);
  const name = `loop-${process.pid}`;
  const elsewhere = mkdtempSync(path.join(tmpdir(), "gpuchain-elsewhere-"));
  let rpc: string;
  let chain: JsonRpcProvider;
  let server: DashboardServer;
  let browser: Browser;
  let page: Page;
  let as: (key: string) => Protocol;
  let agent: ReturnType<typeof shell> | undefined;
  let command = "";
  let address = "";
  let send: (tx: Promise<ContractTransactionResponse>) => Promise<unknown>;

  before(async function () {
    requireChromium(this);
    rpc = await startAnvil(group, await freePort(0), {}, "provide-loop-chain");
    const file = await deployLocal(rpc, deploymentId); // relative to the repository: the server is given it so
    chain = rpcProvider(rpc, 50);
    const d = loadDeployment(file);
    as = (key: string) => connectProtocol(d, new Wallet(key, chain));
    send = async (tx) => (await tx).wait();
    await send(as(TEST_KEYS.owner).escrow.setTemplateApproval(loadTemplate("blobs-tiny").templateId, true));
    // Another provider, dearer: the one "cheaper than" compares with.
    const other = as(TEST_KEYS.arbiter);
    await send(other.registry.register("other", 2_000n, 0, "x86_64 CPU", 4096));
    const dead = `http://127.0.0.1:${await freePort(0)}`;
    server = await startDashboardServer({
      rpc,
      deploymentFile: file,
      coordinatorUrl: dead,
      collectorUrl: dead,
      store: path.join(runDir, "store"), // a folder, relative to the repository
    });
    browser = await launch();
    page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
  });

  after(async function () {
    if (agent?.child.pid) {
      try {
        process.kill(-agent.child.pid, "SIGTERM");
      } catch {
        /* already gone */
      }
      await Promise.race([agent.code, sleep(10_000)]);
    }
    await browser?.close();
    await server?.close();
    chain?.destroy();
    await group.stopAll(3_000);
    rmSync(path.join("ignition", "deployments", deploymentId), { recursive: true, force: true });
    rmSync(path.join(".gpuchain", "providers", name), { recursive: true, force: true });
    rmSync(runDir, { recursive: true, force: true });
    rmSync(elsewhere, { recursive: true, force: true });
  });

  afterEach(async function () {
    if (this.currentTest?.state === "failed") {
      await screenshot(page, `provide-loop-${this.currentTest.title.slice(0, 30).replace(/\W+/g, "-")}`);
      if (agent) console.log(agent.out().split("\n").slice(-40).join("\n"));
    }
  });

  it("the copied command names absolute paths and, run from another folder, registers with this installation's key", async function () {
    await page.goto(`${server.url}?page=provide`);
    await page.getByLabel("Name").fill(name);
    await page.getByLabel("Price per step (USDC)").fill("0.0001");
    // The page says it: any folder.
    expect(await page.getByText(/Run this on the machine that will train, from any folder/).count()).to.equal(1);
    await page.getByRole("button", { name: "Copy command" }).click();
    command = (await page.getByTestId("provide-command").textContent())!;
    const key = path.join(REPO, ".gpuchain", "providers", name, "key");
    expect(command).to.contain(`npx --prefix ${REPO} gpuchain provide --name ${name} --price 0.0001`);
    expect(command).to.contain(`--key ${key}`);
    expect(command).to.contain(`--deployment ${path.join(REPO, "ignition", "deployments", deploymentId)}/`);
    expect(command).to.contain(`--store ${path.join(REPO, runDir, "store")}`);
    expect(command).to.contain(`--rpc ${rpc}`);

    agent = shell(command, elsewhere);
    await page.getByTestId("follow-registered").getByText("Registered at block").waitFor({ timeout: 180_000 });
    expect(existsSync(key), "the key under this installation").to.equal(true);
    address = loadKey(key).address;
    expect(await page.getByTestId("follow-registered").textContent()).to.contain(address);
    expect(readdirSync(elsewhere), "nothing written where it ran").to.deep.equal([]);
  });

  it("once registered, 'cheaper than' compares it with the other providers only", async function () {
    expect(address, "registered in the test before").to.not.equal("");
    await page.getByTestId(`provider-${name}`).waitFor({ timeout: 30_000 });
    const standing = (await page.getByTestId("price-standing").textContent())!;
    expect(standing, standing).to.match(
      /you are cheaper than 1 of 1 current providers \(they ask 0\.002000 USDC\/step\)/,
    );
  });

  it("follows it to 'credited X, withdrawable from T' and the withdraw command, as its terminal says, and the command pays", async function () {
    expect(address, "registered in the test before").to.not.equal("");
    const { chainId } = await chain.getNetwork();
    const d = as(TEST_KEYS.keeper);
    const domain = escrowDomain(chainId, String(d.escrow.target));
    const safe = loadDeployment(
      path.join("ignition", "deployments", deploymentId, "deployed_addresses.json"),
    ).verifierSafe;
    const sign2 = (digest: string) => safeSignatures(chainId, safe, digest, [TEST_KEYS.verifier1, TEST_KEYS.verifier2]);
    // The agent waits for its stake before it takes work.
    for (let i = 0; i < 240 && (await d.registry.stakeOf(address)).deposited === 0n; i++) await sleep(500);
    const client = as(TEST_KEYS.client);
    const clientAddress = new Wallet(TEST_KEYS.client).address;
    await send(client.usdc.mint(clientAddress, 100_000n));
    await send(client.usdc.approve(String(client.escrow.target), 100_000n));
    const templateId = loadTemplate("blobs-tiny").templateId;
    await send(
      client.escrow.createJob({
        templateId,
        totalSteps: 8,
        checkpointInterval: 4,
        maxPricePerStep: 1_000n,
        budget: 8_000n,
        disputeWindow: WINDOW,
      }),
    );
    const jobId = await d.escrow.jobCount();
    await send(as(TEST_KEYS.coordinator).escrow.assign(jobId, address));
    const accept = async (step: bigint) => {
      for (let i = 0; i < 360 && (await d.escrow.jobOf(jobId)).pendingStep !== step; i++) await sleep(500);
      const j = await d.escrow.jobOf(jobId);
      expect(j.pendingStep, `reported step ${step}`).to.equal(step);
      const m = { jobId, epoch: j.pendingEpoch, step: Number(step), checkpointHash: j.pendingHash, accept: true };
      const sigs = await sign2(checkpointDecisionDigest(domain, m));
      await send(d.escrow.acceptCheckpoint(jobId, j.pendingEpoch, step, j.pendingHash, sigs));
    };
    await accept(4n);
    const credited = page.getByTestId(`follow-credited-${jobId}`);
    await credited.getByText("Credited 0.000400 USDC").waitFor({ timeout: 60_000 });
    expect(await credited.textContent()).to.equal(
      `Credited 0.000400 USDC on job ${jobId}, withdrawable after settlement: the job's verdict after step 8, ` +
        "then its 1 h dispute window",
    );
    await accept(8n);
    const acceptedHash = (await d.escrow.jobOf(jobId)).acceptedHash;
    const verdict = { jobId, modelHash: acceptedHash, metric: 9_000n, passed: true };
    await send(d.escrow.submitVerdict(jobId, acceptedHash, 9_000n, true, await sign2(verdictDigest(domain, verdict))));
    const from = (await d.escrow.verdictOf(jobId)).submittedAt + WINDOW + 1n;
    await credited.getByText(`withdrawable from ${formatTime(from)}`).waitFor({ timeout: 60_000 });
    expect(await credited.textContent()).to.match(
      new RegExp(
        `^Credited 0\\.000800 USDC on job ${jobId}, withdrawable from ${formatTime(from)} \\(in (59 min|1 h)[^)]*, on ` +
          "this computer's clock\\), when its dispute window ends, once the job is settled$",
      ),
    );
    const withdraw = (await page.getByTestId("withdraw-command").textContent())!;
    const key = path.join(REPO, ".gpuchain", "providers", name, "key");
    expect(withdraw).to.equal(
      `npx --prefix ${REPO} gpuchain withdraw --key ${key} --rpc ${rpc} --deployment ` +
        path.join(REPO, "ignition", "deployments", deploymentId, "deployed_addresses.json"),
    );

    // The agent's own terminal: each credit as the chain holds it, and the same command.
    for (let i = 0; i < 60 && !agent!.out().includes("verdict is in"); i++) await sleep(500);
    const out = agent!.out();
    expect(out).to.contain(
      `checkpoint at step 4 accepted: credited 0.000400 USDC (total 0.000400 USDC on job ${jobId}); ` +
        "withdrawable after settlement: the job's verdict after step 8, then its 1 h dispute window",
    );
    expect(out).to.contain(
      `checkpoint at step 8 accepted: credited 0.000400 USDC (total 0.000800 USDC on job ${jobId})`,
    );
    expect(out).to.contain(
      `job ${jobId}'s verdict is in: your 0.000800 USDC on it is withdrawable from ${formatTime(from)}, once the job ` +
        `is settled (the finalizer keeper settles it; anyone may: gpuchain settle ${jobId}); then run: ${withdraw}`,
    );

    // Settled at the first second past the window: the page says withdrawable now; its command, run elsewhere, pays.
    await chain.send("evm_setNextBlockTimestamp", [Number(from)]);
    await send(d.escrow.settle(jobId));
    await credited.getByText("withdrawable now").waitFor({ timeout: 60_000 });
    const before = await d.usdc.balanceOf(address);
    const paid = shell(withdraw, elsewhere);
    expect(await paid.code, paid.out()).to.equal(0);
    expect(paid.out()).to.contain(`withdrew 0.000800 USDC to ${address}`);
    expect((await d.usdc.balanceOf(address)) - before).to.equal(800n);
    await page.getByTestId("follow-withdraw").getByText(`Withdrawn 0.000800 USDC to ${address}`).waitFor({
      timeout: 60_000,
    });
    expect(readdirSync(elsewhere), "nothing written where they ran").to.deep.equal([]);
  });
});
