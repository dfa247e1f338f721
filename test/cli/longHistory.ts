/**
 * The CLI on a chain with a long history before the deployment, as a public chain has (Base Sepolia: tens of
 * millions of blocks): anvil started at block 1,000,000 (a genesis with that number, `anvil --init`: no need to mine
 * them) and pruned to the last 16 blocks' state. Every command that reads events must start at the deployment's
 * first block (Ignition's journal, sdk/node/deployment.ts `eventsFrom`), not at block 0: from 0 that is 100 more
 * `eth_getLogs` of 10,000 blocks each here, and thousands on a public chain whose RPC caps the span. Counted at a
 * proxy in front of the node (sdk/node/faultProxy.ts, no fault injected).
 */
import { expect } from "chai";
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { Wallet, type JsonRpcProvider } from "ethers";
import { deployLocal, freePort, startAnvil, TEST_KEYS } from "../../demo/chain.ts";
import { ProcessGroup } from "../../demo/processes.ts";
import { rpcProvider } from "../../sdk/node/contracts.ts";
import { loadDeployment, type Deployment } from "../../sdk/node/deployment.ts";
import { startFaultProxy, type FaultProxy } from "../../sdk/node/faultProxy.ts";
import { writeKey } from "../../sdk/run/keys.ts";
import { postOpenJob } from "../helpers/anvilChain.ts";
import { runGpuchain } from "../helpers/cli.ts";

const HISTORY = 1_000_000; // blocks before the deployment
/** eth_getLogs a command may make when it reads from the deployment's first block (each reads a few filters). */
const FEW = 10;

/** A genesis starting the chain at block `number`, every fork active (anvil's own defaults otherwise). */
function genesis(number: number): object {
  const forks = ["homestead", "eip150", "eip155", "eip158", "byzantium", "constantinople", "petersburg", "istanbul"];
  return {
    config: {
      chainId: 31337,
      ...Object.fromEntries([...forks, "berlin", "london"].map((f) => [`${f}Block`, 0])),
      ...Object.fromEntries(["shanghai", "cancun", "prague"].map((f) => [`${f}Time`, 0])),
      terminalTotalDifficulty: 0,
      terminalTotalDifficultyPassed: true,
    },
    number: `0x${number.toString(16)}`,
    timestamp: `0x${Math.floor(Date.now() / 1000).toString(16)}`,
    gasLimit: "0x1c9c380",
    difficulty: "0x0",
    baseFeePerGas: "0x3b9aca00",
    alloc: {},
  };
}

describe("the CLI on a chain with 1,000,000 blocks before the deployment (pruned node)", function () {
  this.timeout(240_000);
  const group = new ProcessGroup(() => {});
  const deploymentId = `long-history-${process.pid}`;
  const dir = mkdtempSync(path.join(tmpdir(), "gpuchain-long-history-"));
  const clientKey = path.join(dir, "client.key");
  let chain: JsonRpcProvider;
  let proxy: FaultProxy;
  let d: Deployment;
  let deploymentFile: string;

  before(async function () {
    const init = path.join(dir, "genesis.json");
    writeFileSync(init, JSON.stringify(genesis(HISTORY)));
    const rpc = await startAnvil(group, await freePort(0), { init, pruneHistory: 16 }, "long-history-chain");
    chain = rpcProvider(rpc, 50);
    deploymentFile = await deployLocal(rpc, deploymentId);
    d = loadDeployment(deploymentFile);
    await postOpenJob(d, chain); // job 1, Open: explain says why it waits (the providers' offers)
    await chain.send("anvil_mine", ["0x40"]);
    writeKey(clientKey, TEST_KEYS.client);
    proxy = await startFaultProxy({ target: rpc });
  });

  after(async function () {
    chain?.destroy();
    await proxy?.stop();
    await group.stopAll(3_000);
    rmSync(path.join("ignition", "deployments", deploymentId), { recursive: true, force: true });
    rmSync(dir, { recursive: true, force: true });
  });

  /** Runs `gpuchain ARGS` through the proxy: its result and the eth_getLogs it made. */
  async function counted(args: string[], deployment?: string) {
    const before = proxy.counts.methods.eth_getLogs ?? 0;
    const r = await runGpuchain([...args, "--rpc", proxy.url, "--deployment", deployment ?? deploymentFile]);
    return { ...r, getLogs: (proxy.counts.methods.eth_getLogs ?? 0) - before };
  }

  it("the premise: the deployment's first block (the journal's) is past the history", async function () {
    expect(d.firstBlock).to.be.greaterThan(HISTORY);
  });

  it("`gpuchain withdraw` finds the key's jobs from the deployment's first block, not block 0", async function () {
    const r = await counted(["withdraw", "--key", clientKey, "--dry-run"]);
    expect(r.code, r.stderr).to.equal(0);
    expect(r.stdout).to.contain("is owed nothing right now");
    expect(r.getLogs, "eth_getLogs made").to.be.at.most(FEW);
  });

  it("`gpuchain explain` of an Open job reads the providers' offers from the deployment's first block", async function () {
    const r = await counted(["explain", "1"]);
    expect(r.code, r.stderr).to.equal(0);
    expect(r.stdout).to.contain("job 1 posted");
    expect(r.getLogs, "eth_getLogs made").to.be.at.most(FEW);
  });

  it("`gpuchain job create --dry-run` reads the providers' offers from the deployment's first block", async function () {
    const args = ["job", "create", "--template", "blobs-tiny", "--steps", "10", "--max-price", "0.001"];
    const r = await counted([...args, "--key", clientKey, "--dry-run"]);
    expect(r.code, r.stderr).to.equal(0);
    expect(r.stderr).to.contain("no active provider can take this job");
    expect(r.getLogs, "eth_getLogs made").to.be.at.most(FEW);
  });

  /**
   * Without Ignition's journal (only deployed_addresses.json: on a pruned node the eth_getCode search cannot run) the
   * ledger commands read every event from block 0 up to the head they began with, and the contract's state at that
   * head. The scan takes long enough (here: 10 ms per request at the proxy, a block mined every 20 ms) for the node
   * to drop that head's state: the state must be read before the scan, not after, or the command can never succeed.
   */
  for (const command of ["wallet", "explain"] as const) {
    it(`\`gpuchain ${command}\` without the journal reads the state at its head before the scan from block 0`, async function () {
      const bare = path.join(dir, "no-journal");
      mkdirSync(bare, { recursive: true });
      const file = path.join(bare, "deployed_addresses.json");
      copyFileSync(deploymentFile, file);
      expect(loadDeployment(file).firstBlock, "no journal beside it").to.equal(undefined);
      const args = command === "wallet" ? ["wallet", new Wallet(TEST_KEYS.client).address] : ["explain", "1"];
      proxy.set({ latencyMs: [10, 10] });
      const miner = setInterval(() => void chain.send("evm_mine", []).catch(() => {}), 20);
      try {
        const r = await counted(args, file);
        expect(r.code, r.stderr).to.equal(0);
        expect(r.getLogs, "the scan from block 0").to.be.greaterThan(100);
        expect(r.stdout).to.contain(command === "wallet" ? "job 1 as client" : "job 1 posted");
      } finally {
        clearInterval(miner);
        proxy.set({ latencyMs: [0, 0] });
      }
    });
  }
});
