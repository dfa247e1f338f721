/**
 * The finalizer (keepers/finalizer/tick.ts) across reorganisations on a real anvil node, at depth 0 (the
 * local default: it folds the escrow's events up to the head). It folds each job's dispute deadline from its
 * VerdictSubmitted and each job's providers from CheckpointAccepted. A reorganisation of depth 1, 2 or 3 removes the
 * verdict it folded: its fold then equals a fresh finalizer's, and once the old deadline has passed on the chain's
 * clock it sends no settle for the job (before: it kept the deadline of a verdict that no longer exists, derived
 * "Settleable" from it and sent a settle that could only revert). And the confirmation-depth rule: with depth 2 it
 * decides on the state two blocks below the head, so a verdict is seen at t + 2 blocks, not at t or t + 1.
 */
import { expect } from "chai";
import { Wallet } from "ethers";
import { TEST_KEYS } from "../../demo/chain.ts";
import { keeperContext } from "../../keepers/context.ts";
import { createFinalizer, type Finalizer } from "../../keepers/finalizer/tick.ts";
import { createLogger } from "../../sdk/run/log.ts";
import { anvilProtocol, CHAIN_ID, mine, type AnvilProtocol } from "../helpers/anvilChain.ts";

describe("keepers: the finalizer across reorganisations (anvil)", function () {
  this.timeout(180_000);
  let p: AnvilProtocol;
  let provider: Wallet;
  const lines: string[] = [];

  before(async function () {
    p = await anvilProtocol("finalizer-reorg");
    provider = await p.provider(12);
  });
  after(async () => p?.stop());

  async function finalizer(confirmations?: number): Promise<Finalizer> {
    const ctx = await keeperContext({
      deployment: p.deployment,
      provider: p.chain,
      chainId: CHAIN_ID,
      logger: createLogger({ component: "finalizer", write: (l) => lines.push(l) }),
      signer: new Wallet(TEST_KEYS.verifier3, p.chain),
    });
    return createFinalizer(ctx, { fromBlock: 0, confirmations });
  }

  /** A job trained to its end (one checkpoint of 4 steps accepted); the block of its verdict. */
  async function verdictJob(): Promise<{ jobId: bigint; verdict: number }> {
    const jobId = await p.createJob(4, 4);
    await (await p.as(TEST_KEYS.coordinator).escrow.assign(jobId, provider.address)).wait();
    const escrow = p.as(provider.privateKey).escrow;
    const { epoch } = await escrow.jobOf(jobId);
    await (await escrow.reportCheckpoint(jobId, epoch, 4, "0x" + "f4".repeat(32))).wait();
    await p.decide(jobId, true);
    return { jobId, verdict: await p.verdict(jobId) };
  }

  const fold = (f: Finalizer) => {
    const { reorgs: _reorgs, ...rest } = f.folded();
    return rest;
  };
  const hasDeadline = (f: Finalizer, jobId: bigint) => f.folded().deadlines.some(([id]) => id === jobId);

  for (const depth of [1, 2, 3]) {
    it(`a verdict removed by a reorg of depth ${depth}: its fold equals a fresh one's, and no settle goes out for it`, async function () {
      const f = await finalizer();
      const { jobId, verdict } = await verdictJob();
      await f.tick();
      expect(hasDeadline(f, jobId), "the verdict's deadline, folded").to.equal(true);

      await mine(p.chain, depth - 1);
      expect(await p.reorgFrom(verdict)).to.equal(depth);
      await f.tick();
      const fresh = await finalizer();
      await fresh.tick();
      expect(fold(f)).to.deep.equal(fold(fresh));
      expect(hasDeadline(f, jobId), "no deadline of a verdict that is gone").to.equal(false);
      expect(f.folded().reorgs).to.equal(1);
      expect(lines.join("\n")).to.contain("folding the finalizer's view again");

      // Past the old deadline on the chain's clock: nothing to settle for this job (its verdict never happened).
      await p.chain.send("evm_increaseTime", [3_700]);
      await mine(p.chain, 1);
      const r = await f.tick();
      expect(r.sent.filter((s) => s.action.jobId === jobId)).to.deep.equal([]);
      expect(r.plan.flat().filter((a) => a.jobId === jobId)).to.deep.equal([]);
    });
  }

  it("the confirmation-depth rule: at depth 2 a verdict mined at block t is acted on from t + 2 on, not at t or t + 1", async function () {
    const f = await finalizer(2);
    const { jobId } = await verdictJob();
    const seen: boolean[] = [];
    for (let i = 0; i < 4; i++) {
      await f.tick();
      seen.push(hasDeadline(f, jobId));
      await mine(p.chain, 1);
    }
    expect(seen, "head = t, t + 1 (one short), t + 2 (exactly deep enough), t + 3").to.deep.equal([
      false,
      false,
      true,
      true,
    ]);
  });
});
