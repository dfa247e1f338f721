/**
 * The dashboard on a pruned (non-archive) node: anvil keeping only the last 16 blocks' state answers `eth_getCode`
 * for the head and refuses it for older blocks, as most public full nodes do. Where the dashboard starts reading a
 * deployment's events (sdk/node/deploymentBlock.ts) must not depend on old state: Ignition's journal gives the
 * deployment's first block, and without the journal the feed reads from block 0 rather than failing forever.
 */
import { expect } from "chai";
import { rmSync } from "node:fs";
import path from "node:path";
import { Contract, Wallet, type JsonRpcProvider, type Provider } from "ethers";
import { LiveFeed } from "../../dashboard/server/feed.ts";
import { foldAll } from "../../dashboard/src/model/state.ts";
import { deployLocal, freePort, startAnvil, TEST_KEYS } from "../../demo/chain.ts";
import { ProcessGroup } from "../../demo/processes.ts";
import { protocolInterfaces, rpcProvider } from "../../sdk/node/contracts.ts";
import { classifyError, describeError } from "../../sdk/node/errors.ts";
import { loadDeployment, type Deployment } from "../../sdk/node/deployment.ts";
import { deploymentStartBlock } from "../../sdk/node/deploymentBlock.ts";
import { postOpenJob } from "../helpers/anvilChain.ts";
import { runGpuchain } from "../helpers/cli.ts";

const KEPT_STATES = 16;
const HISTORY_BEFORE = 200; // blocks mined before the deployment

describe("dashboard: a deployment's events on a pruned node (anvil --prune-history)", function () {
  this.timeout(180_000);
  const group = new ProcessGroup(() => {});
  const deploymentId = `pruned-node-${process.pid}`;
  let chain: JsonRpcProvider;
  let rpc: string;
  let d: Deployment;
  let deploymentFile: string;
  let jobBlock: number;
  let head: number;

  before(async function () {
    rpc = await startAnvil(group, await freePort(0), { pruneHistory: KEPT_STATES }, "pruned-chain");
    chain = rpcProvider(rpc, 50);
    await chain.send("anvil_mine", [`0x${HISTORY_BEFORE.toString(16)}`]);
    deploymentFile = await deployLocal(rpc, deploymentId);
    d = loadDeployment(deploymentFile);
    jobBlock = (await postOpenJob(d, chain)).blockNumber;
    await chain.send("anvil_mine", ["0x64"]); // the deployment's blocks fall out of the kept state
    head = await chain.getBlockNumber();
  });

  after(async function () {
    chain?.destroy();
    await group.stopAll(3_000);
    rmSync(path.join("ignition", "deployments", deploymentId), { recursive: true, force: true });
  });

  it("the node refuses old state (the premise): eth_getCode at the deployment's blocks fails, at the head it answers", async function () {
    expect(await chain.getCode(d.escrow, head)).to.not.equal("0x");
    const err = await chain.getCode(d.escrow, jobBlock).then(
      () => undefined,
      (e: Error) => e,
    );
    expect(err, "a pruned node answering old state would not test anything").to.be.instanceOf(Error);
  });

  it("a read of pruned state is described as that, not as the revert ethers calls it ('missing revert data')", async function () {
    const iface = protocolInterfaces().escrow;
    const escrow = new Contract(d.escrow, iface, chain);
    const refused = await escrow.jobCount({ blockTag: jobBlock }).then(
      () => undefined,
      (e: Error) => e,
    );
    expect(refused, "eth_call at a pruned block").to.be.instanceOf(Error);
    expect(describeError(refused, iface)).to.match(
      /^the node no longer keeps the state of the block asked for .*BlockOutOfRange/,
    );
    expect(classifyError(refused, iface), "asking the same node again will not help").to.equal("fatal");
    // a real revert, at the head, keeps its own description
    const reverted = await escrow.withdraw.staticCall({ from: Wallet.createRandom().address }).then(
      () => undefined,
      (e: Error) => e,
    );
    expect(describeError(reverted, iface)).to.match(/^JobEscrow\w+\(/);
  });

  it("Ignition's journal gives the deployment's first block: after the history mined before it, no log earlier", async function () {
    expect(d.firstBlock).to.be.a("number");
    expect(d.firstBlock!).to.be.greaterThan(HISTORY_BEFORE);
    expect(d.firstBlock!).to.be.lessThan(jobBlock);
    const addresses = [d.escrow, d.registry, d.usdc, d.verifierSafe];
    const before = await chain.getLogs({ address: addresses, fromBlock: 0, toBlock: d.firstBlock! - 1 });
    expect(before).to.deep.equal([]);
    expect(await deploymentStartBlock(chain, d.escrow, head, d.firstBlock)).to.equal(d.firstBlock);
  });

  it("without the journal, a node without old state gives block 0 (read everything), not an error", async function () {
    expect(await deploymentStartBlock(chain, d.escrow, head)).to.equal(0);
  });

  it("a node that stops answering during the search is an error, never block 0 or a later block", async function () {
    let reads = 0;
    const failing = new Proxy(chain, {
      get(target, key) {
        const v = Reflect.get(target, key);
        if (key !== "getCode" || typeof v !== "function") return typeof v === "function" ? v.bind(target) : v;
        return (...args: unknown[]) =>
          ++reads === 1 ? v.apply(target, args) : Promise.reject(new Error("connect ECONNREFUSED"));
      },
    }) as Provider;
    const err = await deploymentStartBlock(failing, d.escrow, head).then(
      (b) => b,
      (e: Error) => e,
    );
    expect(err).to.be.instanceOf(Error);
    expect((err as Error).message).to.equal("connect ECONNREFUSED");
  });

  for (const journal of [true, false]) {
    it(`the dashboard server's feed streams the job ${journal ? "from the journal's block" : "without the journal (from block 0)"}`, async function () {
      const deployment = journal ? d : { ...d, firstBlock: undefined };
      const feed = new LiveFeed({ rpc, deployment, coordinatorUrl: () => undefined, collectorUrl: () => undefined });
      try {
        await feed.tick();
        expect(feed.indexedBlock).to.equal(await chain.getBlockNumber());
        const created = foldAll(feed.entries).events.filter((e) => e.name === "JobCreated");
        expect(created.map((e) => e.blockNumber)).to.deep.equal([jobBlock]);
      } finally {
        await feed.stop();
      }
    });
  }

  it("`gpuchain wallet` and `gpuchain explain`, run as a user would, read the books on it (from the journal's block)", async function () {
    const common = ["--rpc", rpc, "--deployment", deploymentFile];
    const wallet = await runGpuchain(["wallet", new Wallet(TEST_KEYS.client).address, ...common]);
    expect(wallet.stderr).to.equal("");
    expect(wallet.code).to.equal(0);
    expect(wallet.stdout).to.include("job 1 as client: budget 0.100000 USDC");
    const explain = await runGpuchain(["explain", "1", ...common]);
    expect(explain.code, explain.stderr).to.equal(0);
    expect(explain.stdout).to.match(new RegExp(`block +${jobBlock} +job 1 posted`));
    expect(explain.stdout).to.include("rebuilt from events agrees with the contract's state");
  });
});
