/**
 * `gpuchain faucet` (before, a provider key on a local chain waited for gas forever and nothing said how to fund
 * it): the real CLI against anvil with the protocol deployed through Ignition, and against a JSON-RPC bridge that
 * answers like a public node (no balance-setting method): refused, nothing sent.
 */
import { runGpuchain } from "../helpers/cli.ts";
import { expect } from "chai";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { Wallet, parseEther, type JsonRpcProvider } from "ethers";
import { connectProtocol, rpcProvider } from "../../sdk/node/contracts.ts";
import { loadDeployment } from "../../sdk/node/deployment.ts";
import { deployLocal, freePort, startAnvil } from "../../demo/chain.ts";
import { ProcessGroup } from "../../demo/processes.ts";
import { rpcBridge } from "../helpers/rpcBridge.ts";
import { startFaultProxy } from "../../sdk/node/faultProxy.ts";

describe("gpuchain faucet: test ETH (and USDC) for a key on a development chain", function () {
  this.timeout(300_000);
  const group = new ProcessGroup(() => {});
  const deploymentId = `faucet-${process.pid}`;
  let chain: JsonRpcProvider;
  let rpc: string;
  let file: string;
  const fresh = Wallet.createRandom().address;

  before(async function () {
    rpc = await startAnvil(group, await freePort(0), {}, "faucet-chain");
    file = await deployLocal(rpc, deploymentId);
    chain = rpcProvider(rpc, 50);
  });

  after(async function () {
    chain?.destroy();
    await group.stopAll(3_000);
    rmSync(path.join("ignition", "deployments", deploymentId), { recursive: true, force: true });
  });

  it("adds 1 ETH by default, then more with --eth, and mints --usdc: a fresh key can pay for gas", async function () {
    const first = await runGpuchain(["faucet", fresh, "--rpc", rpc, "--deployment", file]);
    expect(first.code, first.stderr).to.equal(0);
    expect(first.stdout).to.equal(`gave ${fresh} 1.0 test ETH (now 1.0) on chain 31337\n`);
    const more = await runGpuchain([
      "faucet",
      fresh,
      "--eth",
      "0.5",
      "--usdc",
      "25",
      "--rpc",
      rpc,
      "--deployment",
      file,
    ]);
    expect(more.code, more.stderr).to.equal(0);
    expect(more.stdout).to.contain("0.5 test ETH (now 1.5) and 25.000000 USDC (now 25.000000 USDC)");
    expect(await chain.getBalance(fresh)).to.equal(parseEther("1.5"));
    const { usdc } = connectProtocol(loadDeployment(file), chain);
    expect(await usdc.balanceOf(fresh)).to.equal(25_000_000n);
  });

  it("bad amounts are one clear line, exit 2, nothing sent", async function () {
    const before = await chain.getBlockNumber();
    for (const [args, message] of [
      [["--eth", "0"], /--eth must be an amount of ETH above 0 and at most 100/],
      [["--eth", "1000"], /at most 100/],
      [["--usdc", "-3"], /--usdc/],
    ] as const) {
      const r = await runGpuchain(["faucet", fresh, ...args, "--rpc", rpc, "--deployment", file]);
      expect(r.code, r.stderr).to.equal(2);
      expect(r.stderr).to.match(message);
    }
    expect(await chain.getBlockNumber()).to.equal(before);
  });

  it("a node without a balance-setting method (a public network) is refused: nothing sent", async function () {
    // The same chain behind a bridge that answers like a public node: no anvil_/hardhat_ methods.
    const bridge = await rpcBridge({
      request: async ({ method, params }) => {
        if (method.startsWith("anvil_") || method.startsWith("hardhat_")) throw new Error(`method ${method} not found`);
        return chain.send(method, params);
      },
    });
    try {
      const before = await chain.getBalance(fresh);
      const r = await runGpuchain(["faucet", fresh, "--rpc", bridge.url, "--deployment", file]);
      expect(r.code).to.equal(1);
      expect(r.stderr).to.match(/this node is not a development node .*send test ETH to the address from a funded key/);
      expect(await chain.getBalance(fresh)).to.equal(before);
    } finally {
      await bridge.close();
    }
  });

  it("gpuchain provide --faucet: a new key takes its gas from the node, registers and stakes with no hand step; human lines by default, --json for machines", async function () {
    const dir = mkdtempSync(path.join(tmpdir(), "gpuchain-provide-faucet-"));
    try {
      const provide = (name: string, extra: string[]) =>
        runGpuchain([
          "provide",
          ...["--name", name, "--price", "0.001", "--faucet", "--once", "--rpc", rpc, "--deployment", file],
          ...["--key", path.join(dir, name, "key"), "--store", path.join(dir, "store")],
          ...["--coordinator", "http://127.0.0.1:9/heartbeat", ...extra],
        ]);
      const human = await provide("faucet-human", []);
      expect(human.code, human.stderr + human.stdout).to.equal(0);
      const lines = human.stdout.trim().split("\n");
      expect(
        lines.some((l) => l.startsWith("{")),
        human.stdout,
      ).to.equal(false);
      expect(human.stdout).to.match(/\[agent\] --faucet: took test ETH for gas from the development node/);
      const address = /address=(0x[0-9a-fA-F]{40})/.exec(human.stdout)![1];
      const { registry } = connectProtocol(loadDeployment(file), chain);
      expect(await registry.isActive(address)).to.equal(true);
      expect((await registry.stakeOf(address)).deposited).to.be.above(0n);

      const machine = await provide("faucet-json", ["--json"]);
      expect(machine.code, machine.stderr).to.equal(0);
      const records = machine.stdout
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l) as { msg: string });
      expect(records.map((r) => r.msg)).to.include("--faucet: took test ETH for gas from the development node");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("through the fault proxy (429s, drops, truncated bodies, 5xx, latency): ETH and USDC arrive exactly once", async function () {
    // The node-signed mint (eth_sendTransaction) is passed untouched: after a lost answer it is not repeated, and the
    // command would fail rather than mint twice (test/sdk/rpcFaults.ts); everything else meets the faults.
    const proxy = await startFaultProxy({
      target: rpc,
      seed: 5,
      latencyMs: [5, 30],
      rate429: 0.2,
      rate5xx: 0.05,
      dropRate: 0.1,
      truncateRate: 0.1,
      script: ({ methods }) => (methods.includes("eth_sendTransaction") ? "pass" : undefined),
    });
    try {
      const who = Wallet.createRandom().address;
      const r = await runGpuchain([
        "faucet",
        who,
        "--eth",
        "0.5",
        "--usdc",
        "7",
        "--rpc",
        proxy.url,
        "--deployment",
        file,
      ]);
      expect(r.code, r.stderr).to.equal(0);
      expect(await chain.getBalance(who)).to.equal(parseEther("0.5"));
      const { usdc } = connectProtocol(loadDeployment(file), chain);
      expect(await usdc.balanceOf(who)).to.equal(7_000_000n);
      const c = proxy.counts;
      expect(c.http429 + c.http5xx + c.drop + c.truncate, proxy.summary()).to.be.above(2);
    } finally {
      await proxy.stop();
    }
  });

  it("a node that does not answer is an RPC failure, not 'not a development node'", async function () {
    const proxy = await startFaultProxy({
      target: rpc,
      script: ({ methods }) => (methods[0].endsWith("_setBalance") ? "http429" : "pass"),
    });
    try {
      const r = await runGpuchain([
        "faucet",
        fresh,
        "--rpc",
        proxy.url,
        "--deployment",
        file,
        "--rpc-timeout-ms",
        "1000",
      ]);
      expect(r.code).to.equal(1);
      expect(r.stderr).to.not.match(/not a development node/);
      expect(r.stderr).to.match(/429|RPC/);
    } finally {
      await proxy.stop();
    }
  });
});
