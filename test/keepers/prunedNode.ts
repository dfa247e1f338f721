/**
 * Keepers on a pruned (non-archive) node: anvil keeping only the last 16 blocks' state, as a public full node keeps
 * only recent state. A keeper started after being down a while folds the events since the deployment's first block
 * before it reads the jobs those events name, at the block it began with; on a public chain that scan takes long
 * enough for the node to drop that block's state, and the reads are refused. Here the chain moves on by itself while
 * the keeper reads logs (a node answering eth_getLogs slowly while blocks keep coming), through a provider that mines
 * 20 blocks after each eth_getLogs answer: the coordinator's and finalizer's reads at the scan's block are refused,
 * which fails that tick. The next tick must still read every job and provider the scanned events named: the cursor
 * moved past those events, so forgetting them means never seeing the job again.
 */
import { expect } from "chai";
import { JsonRpcProvider, Network, Wallet } from "ethers";
import { TEST_KEYS } from "../../demo/chain.ts";
import { keeperContext } from "../../keepers/context.ts";
import { coordinatorConfig } from "../../keepers/coordinator/config.ts";
import { createCoordinator } from "../../keepers/coordinator/tick.ts";
import { createFinalizer } from "../../keepers/finalizer/tick.ts";
import { createLogger } from "../../sdk/run/log.ts";
import { anvilProtocol, CHAIN_ID, type AnvilProtocol } from "../helpers/anvilChain.ts";

const KEPT_STATES = 16;

/** A provider on `rpc` after each of whose eth_getLogs answers the chain mines `blocks` blocks (while `on`). */
class MovingChain extends JsonRpcProvider {
  moving = true;
  private readonly blocks: number;
  constructor(rpc: string, blocks: number) {
    const network = Network.from(CHAIN_ID);
    super(rpc, network, { staticNetwork: network, batchMaxCount: 1, cacheTimeout: -1 });
    this.blocks = blocks;
  }
  override async send(method: string, params: unknown[] | Record<string, unknown>): Promise<unknown> {
    const answer = await super.send(method, params);
    if (method === "eth_getLogs" && this.moving) await super.send("anvil_mine", [`0x${this.blocks.toString(16)}`]);
    return answer;
  }
}

describe("keepers on a pruned node (anvil --prune-history): a tick whose reads were refused loses no event", function () {
  this.timeout(180_000);
  let p: AnvilProtocol;
  let provider: Wallet;
  let running: bigint;
  const lines: string[] = [];

  before(async function () {
    p = await anvilProtocol("pruned-keepers", { pruneHistory: KEPT_STATES });
    provider = await p.provider(13);
    await p.createJob(4, 4); // job 1: Open, only its JobCreated names it
    running = await p.createJob(4, 4); // job 2: assigned, so named by a later event and read
    await (await p.as(TEST_KEYS.coordinator).escrow.assign(running, provider.address)).wait();
  });
  after(async () => p?.stop());

  async function context(rpcProvider: JsonRpcProvider, key: string, component: string) {
    return keeperContext({
      deployment: p.deployment,
      provider: rpcProvider,
      chainId: CHAIN_ID,
      logger: createLogger({ component, write: (l) => lines.push(l) }),
      signer: new Wallet(key, rpcProvider),
      dryRun: true,
      retry: { retries: 1, baseMs: 10, maxMs: 10 },
    });
  }

  it("the node refuses state older than 16 blocks (the premise)", async function () {
    const old = (await p.chain.getBlockNumber()) - KEPT_STATES - 4;
    await p.chain.send("anvil_mine", ["0x20"]);
    const err = await p.chain.getCode(p.deployment.escrow, old).then(
      () => undefined,
      (e: Error) => e,
    );
    expect(err, "a node answering old state would test nothing").to.be.instanceOf(Error);
  });

  it("the coordinator: the tick refused at the scan's block fails; the next one knows the running job and its provider", async function () {
    const chain = new MovingChain(p.rpc, KEPT_STATES + 4);
    try {
      const coordinator = createCoordinator(
        await context(chain, TEST_KEYS.coordinator, "coordinator"),
        coordinatorConfig({ "heartbeat-timeout-ms": "60000", "start-grace-ms": "0" }),
      );
      const first = await coordinator.tick().then(
        () => undefined,
        (e: Error) => e,
      );
      expect(first, "the reads at the scan's block are refused").to.be.instanceOf(Error);
      // ethers reports the node's refusal of an eth_call as CALL_EXCEPTION "missing revert data"; the node said why.
      expect(JSON.stringify((first as { info?: unknown }).info)).to.match(/BlockOutOfRangeError/);
      chain.moving = false;
      await coordinator.tick();
      const job = coordinator.chain.jobs.get(running);
      expect(job?.status, "the running job, named only by the failed tick's events").to.equal("Running");
      expect(job?.provider).to.equal(provider.address);
      expect([...coordinator.chain.providers.keys()]).to.include(provider.address.toLowerCase());
      expect([...coordinator.chain.jobs.keys()].sort()).to.deep.equal([1n, running]);
    } finally {
      chain.destroy();
    }
  });

  it("the finalizer: the tick refused at the scan's block fails; the next one reads every job the scan named", async function () {
    const chain = new MovingChain(p.rpc, KEPT_STATES + 4);
    try {
      const finalizer = createFinalizer(await context(chain, TEST_KEYS.verifier3, "finalizer"), {});
      const first = await finalizer.tick().then(
        () => undefined,
        (e: Error) => e,
      );
      expect(first, "the reads at the scan's block are refused").to.be.instanceOf(Error);
      // ethers reports the node's refusal of an eth_call as CALL_EXCEPTION "missing revert data"; the node said why.
      expect(JSON.stringify((first as { info?: unknown }).info)).to.match(/BlockOutOfRangeError/);
      chain.moving = false;
      const r = await finalizer.tick();
      expect(r.read, "jobs 1 and 2, named by the failed tick's events").to.deep.equal([1n, running]);
    } finally {
      chain.destroy();
    }
  });
});
