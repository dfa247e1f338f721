/**
 * `gpuchain faucet` (issue 21: a provider key on a local chain waited for gas forever and nothing said how to fund
 * it): the real CLI against anvil with the protocol deployed through Ignition, and against a JSON-RPC bridge that
 * answers like a public node (no balance-setting method): refused, nothing sent.
 */
import { runGpuchain } from "../helpers/cli.ts";
import { expect } from "chai";
import { rmSync } from "node:fs";
import path from "node:path";
import { Wallet, parseEther, type JsonRpcProvider } from "ethers";
import { connectProtocol, rpcProvider } from "../../sdk/contracts.ts";
import { loadDeployment } from "../../sdk/deployment.ts";
import { deployLocal, freePort, startAnvil } from "../../demo/chain.ts";
import { ProcessGroup } from "../../demo/processes.ts";
import { rpcBridge } from "../helpers/rpcBridge.ts";

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
});
