/**
 * The verdict collector (keepers/collector/tick.ts) across reorganisations on a real anvil node: it
 * relays an acceptance, then remembers the digest as done. A reorganisation of depth 1, 2 or 3 removes the block of
 * that acceptance, so the checkpoint is pending again; the verifiers re-post their signatures (they read the chain
 * each tick) and the collector relays the decision again on the new chain — before, it answered "done" from its
 * memory of the old chain and the job waited forever. Its pending view (GET /pending) and pool then equal those of a
 * fresh collector given the same posts. The same for a verdict whose block was replaced.
 */
import { expect } from "chai";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { Wallet } from "ethers";
import { TEST_KEYS } from "../../demo/chain.ts";
import { keeperContext } from "../../keepers/context.ts";
import { createCollector, type Collector } from "../../keepers/collector/tick.ts";
import { pendingView } from "../../keepers/collector/pendingView.ts";
import { JobStatus } from "../../sdk/rules/job.ts";
import { sleep } from "../../sdk/run/retry.ts";
import { createLogger } from "../../sdk/run/log.ts";
import { escrowDomain, signAsSafeOwner } from "../../sdk/rules/verifierSignatures.ts";
import { checkpointMessage, digestOf, verdictMessage, type SignatureBody } from "../../verifier/work.ts";
import { anvilProtocol, CHAIN_ID, mine, VERIFIER_KEYS, type AnvilProtocol } from "../helpers/anvilChain.ts";

describe("keepers: the collector across reorganisations (anvil)", function () {
  this.timeout(180_000);
  let p: AnvilProtocol;
  let provider: Wallet;
  const lines: string[] = [];

  before(async function () {
    p = await anvilProtocol("collector-reorg");
    provider = await p.provider(10);
  });
  after(async () => p?.stop());

  async function collector(): Promise<Collector> {
    const ctx = await keeperContext({
      deployment: p.deployment,
      provider: p.chain,
      chainId: CHAIN_ID,
      logger: createLogger({ component: "collector", write: (l) => lines.push(l) }),
      signer: new Wallet(TEST_KEYS.arbiter, p.chain), // any key may relay
    });
    const stateFile = path.join(mkdtempSync(path.join(tmpdir(), "collector-reorg-")), "pending.json");
    return createCollector(
      ctx,
      { stateFile, dryRun: false },
      { safeAddress: p.deployment.verifierSafe, escrowAddress: p.deployment.escrow },
    );
  }

  /** What each verifier posts for the job's pending checkpoint (as verifier/verifier.ts signs it). */
  async function checkpointBodies(jobId: bigint): Promise<SignatureBody[]> {
    const job = await p.as(TEST_KEYS.client).escrow.jobOf(jobId);
    const item = { jobId, epoch: job.pendingEpoch, step: Number(job.pendingStep), hash: job.pendingHash };
    const { message, typed } = checkpointMessage(item as Parameters<typeof checkpointMessage>[0], true);
    return signed(
      "checkpoint",
      message,
      digestOf(escrowDomain(CHAIN_ID, p.deployment.escrow), { kind: "checkpoint", typed }),
    );
  }

  async function verdictBodies(jobId: bigint): Promise<SignatureBody[]> {
    const modelHash = (await p.as(TEST_KEYS.client).escrow.jobOf(jobId)).acceptedHash;
    const item = { jobId, modelHash } as Parameters<typeof verdictMessage>[0];
    const { message, typed } = verdictMessage(item, 9_700n, true);
    return signed(
      "verdict",
      message,
      digestOf(escrowDomain(CHAIN_ID, p.deployment.escrow), { kind: "verdict", typed }),
    );
  }

  async function signed(kind: "checkpoint" | "verdict", message: unknown, digest: string): Promise<SignatureBody[]> {
    return Promise.all(
      VERIFIER_KEYS.map(async (k) => {
        const w = new Wallet(k);
        const signature = await signAsSafeOwner(w, CHAIN_ID, p.deployment.verifierSafe, digest);
        return { kind, message, digest, signer: w.address, signature } as SignatureBody;
      }),
    );
  }

  /** Posts every body (as the verifiers do each tick), then waits for what the collector sends. */
  async function post(c: Collector, bodies: SignatureBody[]) {
    const answers = [];
    for (const b of bodies) answers.push((await c.submit(b)).body as { state?: string });
    await c.idle();
    return answers.map((a) => a.state);
  }

  /** A running job of `steps` steps (interval 4) with step 4 reported by the provider. */
  async function reportedJob(steps: number) {
    const jobId = await p.createJob(steps, 4);
    await (await p.as(TEST_KEYS.coordinator).escrow.assign(jobId, provider.address)).wait();
    const escrow = p.as(provider.privateKey).escrow;
    const { epoch } = await escrow.jobOf(jobId);
    await (await escrow.reportCheckpoint(jobId, epoch, 4, "0x" + "a4".repeat(32))).wait();
    return { jobId, escrow };
  }

  for (const depth of [1, 2, 3]) {
    it(`an acceptance it relayed, removed by a reorg of depth ${depth}: re-posted signatures are relayed again`, async function () {
      const { jobId } = await reportedJob(8);
      const c = await collector();
      const bodies = await checkpointBodies(jobId);
      expect(await post(c, bodies)).to.deep.equal(["pending", "pending"]);
      const accepted = await p.chain.getBlockNumber();
      expect((await p.as(TEST_KEYS.client).escrow.jobOf(jobId)).acceptedStep).to.equal(4n);
      expect(await post(c, bodies), "decided: answered done").to.deep.equal(["done", "done"]);

      await mine(p.chain, depth - 1);
      expect(await p.reorgFrom(accepted)).to.equal(depth);
      const job = await p.as(TEST_KEYS.client).escrow.jobOf(jobId);
      expect([job.acceptedStep, job.pendingStep], "pending again on the new chain").to.deep.equal([0n, 4n]);

      await sleep(1_100); // verifiers re-post every poll (2 s by default); a done digest is looked at once a second
      const states = await post(c, bodies);
      expect(states[0], "the first re-post is pooled again, not answered done").to.equal("pending");
      expect(lines.join("\n")).to.contain("pending on chain again");
      expect((await p.as(TEST_KEYS.client).escrow.jobOf(jobId)).acceptedStep, "relayed again").to.equal(4n);
      await c.tick();
      const fresh = await collector();
      await post(fresh, bodies);
      await fresh.tick();
      expect(pendingView(c.pool)).to.deep.equal(pendingView(fresh.pool));
      expect(c.pool.size).to.equal(0);
    });
  }

  it("a verdict it relayed, removed by a reorg: re-posted, it is relayed again", async function () {
    const { jobId, escrow } = await reportedJob(4);
    const c = await collector();
    await post(c, await checkpointBodies(jobId));
    expect((await escrow.jobOf(jobId)).acceptedStep).to.equal(4n);
    const verdict = await verdictBodies(jobId);
    expect(await post(c, verdict)).to.deep.equal(["pending", "pending"]);
    const submitted = await p.chain.getBlockNumber();
    expect(await escrow.statusOf(jobId)).to.equal(BigInt(JobStatus.DisputeWindow));
    await mine(p.chain, 1);
    await p.reorgFrom(submitted);
    expect(await escrow.statusOf(jobId), "the verdict is gone").to.equal(BigInt(JobStatus.Running));
    await sleep(1_100);
    expect(await post(c, verdict)).to.include("pending");
    expect(await escrow.statusOf(jobId), "relayed again").to.equal(BigInt(JobStatus.DisputeWindow));
  });
});
