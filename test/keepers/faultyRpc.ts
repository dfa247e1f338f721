/**
 * RPC faults as a way of life (ARCHITECTURE.md, "RPC faults"): the real `gpuchain keeper reserves --strict` and
 * `gpuchain reserves` against anvil (protocol deployed through Ignition, stake in the registry so something is owed)
 * behind the fault proxy at a high fault rate (latency, 429, 5xx, dropped answers, truncated bodies: ~30 % of
 * requests). The keeper neither crashes nor mis-decides: every reserves line it logs carries the chain's true values,
 * none says the proof failed, no read of its even needed its own retry (no warn or error line), and it stops cleanly.
 */
import { expect } from "chai";
import { spawn } from "node:child_process";
import { rmSync } from "node:fs";
import path from "node:path";
import { Wallet, type JsonRpcProvider } from "ethers";
import { deployLocal, freePort, startAnvil, TEST_KEYS } from "../../demo/chain.ts";
import { ProcessGroup } from "../../demo/processes.ts";
import { connectProtocol, rpcProvider } from "../../sdk/node/contracts.ts";
import { loadDeployment } from "../../sdk/node/deployment.ts";
import { formatUsdc } from "../../sdk/words/format.ts";
import { startFaultProxy, type FaultProxy } from "../../sdk/node/faultProxy.ts";
import { runGpuchain } from "../helpers/cli.ts";

const FAULTS = {
  latencyMs: [5, 40] as [number, number],
  rate429: 0.15,
  rate5xx: 0.05,
  dropRate: 0.05,
  truncateRate: 0.05,
};

describe("keepers: through a faulty RPC (fault proxy, ~30 % of requests fail)", function () {
  this.timeout(300_000);
  const group = new ProcessGroup(() => {});
  const deploymentId = `faulty-rpc-${process.pid}`;
  let chain: JsonRpcProvider;
  let file: string;
  let proxy: FaultProxy;
  let held: bigint;
  let owes: bigint;

  before(async function () {
    const rpc = await startAnvil(group, await freePort(0), {}, "faulty-rpc-chain");
    file = await deployLocal(rpc, deploymentId);
    chain = rpcProvider(rpc, 50);
    // Something owed: a provider registers and stakes 5 USDC (open test mint).
    const provider = new Wallet(TEST_KEYS.verifier3, chain);
    const { registry, usdc, escrow } = connectProtocol(loadDeployment(file), provider);
    await (await registry.register("faulty-rpc", 1_000n, 1, "NVIDIA H200", 143_771)).wait();
    await (await usdc.mint(provider.address, 5_000_000n)).wait();
    await (await usdc.approve(await registry.getAddress(), 5_000_000n)).wait();
    await (await registry.depositStake(5_000_000n)).wait();
    [held, owes] = await escrow.reserves();
    expect(owes).to.equal(5_000_000n);
    proxy = await startFaultProxy({ target: rpc, seed: 11, ...FAULTS });
  });

  after(async function () {
    chain?.destroy();
    await proxy?.stop();
    await group.stopAll(3_000);
    rmSync(path.join("ignition", "deployments", deploymentId), { recursive: true, force: true });
  });

  it("`keeper reserves --strict` logs the true reserves at every block, never a failed proof, and stops cleanly", async function () {
    const before = { ...proxy.counts };
    const child = spawn(
      process.execPath,
      [
        path.resolve("cli/gpuchain.ts"),
        "keeper",
        "reserves",
        "--strict",
        "--interval-ms",
        "200",
        "--rpc",
        proxy.url,
        "--deployment",
        file,
      ],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    let [stdout, stderr] = ["", ""];
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    const closed = new Promise<number | null>((r) => child.on("close", (code) => r(code)));
    const reservesLines = () => stdout.split("\n").filter((l) => l.includes('"msg":"reserves"'));
    // New blocks for it to check: one every 300 ms, until it has logged 12 of them (or 60 s pass).
    const deadline = Date.now() + 60_000;
    while (reservesLines().length < 12 && Date.now() < deadline && child.exitCode === null) {
      await chain.send("evm_mine", []);
      await new Promise((r) => setTimeout(r, 300));
    }
    child.kill("SIGTERM");
    const code = await closed;
    expect(code, stderr + stdout.slice(-2_000)).to.equal(0);
    const lines = reservesLines().map((l) => JSON.parse(l) as { held: string; owed: string });
    expect(lines.length, stdout.slice(-2_000)).to.be.at.least(12);
    for (const l of lines) expect([l.held, l.owed]).to.deep.equal([String(held), String(owes)]);
    expect(stdout).to.not.contain("PROOF OF RESERVES FAILED");
    // The faults were absorbed under the keeper (sdk/node/rpc.ts): no read of its failed, none needed its own retries.
    const noisy = stdout.split("\n").filter((l) => /"level":"(warn|error)"/.test(l));
    expect(noisy, noisy.slice(0, 3).join("\n")).to.deep.equal([]);
    // Its own counters, logged as it stopped: the faults it met, retried under it, none given up on.
    const stopped = stdout
      .split("\n")
      .filter((l) => l.includes('"msg":"stopped"'))
      .map((l) => JSON.parse(l) as { rpc: { requests: number; retries: Record<string, number>; exhausted: number } });
    expect(stopped).to.have.length(1);
    const retries = Object.values(stopped[0].rpc.retries).reduce((a, b) => a + b, 0);
    expect(retries).to.be.above(0);
    expect(stopped[0].rpc.exhausted).to.equal(0);
    const injected = ["http429", "http5xx", "drop", "truncate"].reduce(
      (n, k) => n + proxy.counts[k as "drop"] - before[k as "drop"],
      0,
    );
    expect(injected, proxy.summary()).to.be.above(5);
  });

  it("`gpuchain reserves` through the faults prints what it prints without them", async function () {
    const rpc = chain._getConnection().url;
    const direct = await runGpuchain(["reserves", "--rpc", rpc, "--deployment", file]);
    expect(direct.code, direct.stderr).to.equal(0);
    for (let i = 0; i < 3; i++) {
      const faulty = await runGpuchain(["reserves", "--rpc", proxy.url, "--deployment", file]);
      expect(faulty.code, faulty.stderr).to.equal(0);
      expect(faulty.stdout).to.equal(direct.stdout);
    }
  });

  it("`gpuchain reserves --watch` rides out an outage (all 429 past --rpc-timeout-ms): said once, read again", async function () {
    const child = spawn(
      process.execPath,
      [
        path.resolve("cli/gpuchain.ts"),
        "reserves",
        "--watch",
        "--rpc",
        proxy.url,
        "--deployment",
        file,
        "--rpc-timeout-ms",
        "1000",
      ],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    let [stdout, stderr] = ["", ""];
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    const closed = new Promise<number | null>((r) => child.on("close", (code) => r(code)));
    const until = async (what: string, ok: () => boolean) => {
      const deadline = Date.now() + 60_000;
      while (!ok()) {
        if (Date.now() > deadline || child.exitCode !== null) throw new Error(`${what}: ${stdout}\n${stderr}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    };
    const blocks = () => stdout.split("\n").filter((l) => l.startsWith("block "));
    try {
      await until("a first block", () => blocks().length >= 1);
      proxy.set({ rate429: 1 });
      await chain.send("evm_mine", []);
      await until("the outage said", () => stderr.includes("chain unreachable"));
      proxy.set({ rate429: FAULTS.rate429 });
      const seen = blocks().length;
      await chain.send("evm_mine", []);
      await until("a block after the outage", () => blocks().length > seen && stderr.includes("answers again"));
    } finally {
      proxy.set({ rate429: FAULTS.rate429 });
      child.kill("SIGTERM");
    }
    expect(await closed, stderr).to.equal(0);
    expect(stderr.match(/chain unreachable/g)).to.have.length(1);
    const margin = `held ${formatUsdc(held)}, owed ${formatUsdc(owes)}, margin ${formatUsdc(held - owes)} HOLDS`;
    for (const l of blocks()) expect(l).to.contain(margin);
    expect(stdout).to.contain("smallest margin seen:");
  });
});
