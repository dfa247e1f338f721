/**
 * A verifier (verifier/verifier.ts) across reorganisations on a real anvil node. It reads the chain's
 * state every tick, so what it plans follows the new chain by itself, except for its memory of the jobs that left
 * training (it stops reading those). A reorganisation of depth 1, 2 or 3 that removes the block which ended a job (a
 * cancel here; a verdict or an expiry alike) gives the job back; a report made on the new chain is then planned and
 * checked as by a fresh verifier (before: never looked at again). An acceptance removed makes the checkpoint pending
 * again, and it decides and posts it again (the same decision). And a report it decided that a reorganisation
 * removes leaves its memory and is no longer posted; the report made instead on the new chain is decided on its own.
 */
import { expect } from "chai";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { Wallet } from "ethers";
import { TEST_KEYS } from "../../demo/chain.ts";
import { eventTopics } from "../../sdk/node/chainWake.ts";
import { createLogger } from "../../sdk/run/log.ts";
import { LogCursor } from "../../sdk/node/logRange.ts";
import type { SignaturePoster } from "../../verifier/collector.ts";
import { DecisionStore } from "../../verifier/decisions.ts";
import { TRAINING_ENDS, Verifier, type EscrowReader } from "../../verifier/verifier.ts";
import type { SignatureBody } from "../../verifier/work.ts";
import { FsCheckpointStore } from "../../workloads/index.ts";
import { anvilProtocol, CHAIN_ID, mine, type AnvilProtocol } from "../helpers/anvilChain.ts";

describe("verifier: across reorganisations (anvil)", function () {
  this.timeout(180_000);
  let p: AnvilProtocol;
  let provider: Wallet;
  const verifiers: Verifier[] = [];

  before(async function () {
    p = await anvilProtocol("verifier-reorg");
    provider = await p.provider(11);
  });
  after(async () => {
    for (const v of verifiers) await v.close();
    await p?.stop();
  });

  /** A verifier on the anvil chain whose posts land in `posted`; it follows blocks from the head on. */
  async function verifier(graceMs = 600_000) {
    const posted: SignatureBody[] = [];
    const lines: string[] = [];
    const collector: SignaturePoster = { post: async (b) => void posted.push(b) };
    const signer = new Wallet(TEST_KEYS.verifier1);
    const escrow = p.as(TEST_KEYS.verifier1).escrow;
    const filter = { address: p.deployment.escrow, topics: eventTopics(escrow.interface, TRAINING_ENDS) };
    const v = new Verifier(
      {
        chainId: CHAIN_ID,
        escrow: p.deployment.escrow,
        safe: p.deployment.verifierSafe,
        samples: 1,
        behaviour: "honest",
        dryRun: false,
        pollMs: 50,
        missingBlobGraceMs: graceMs,
      },
      {
        chain: escrow as unknown as EscrowReader,
        signer,
        store: new FsCheckpointStore(mkdtempSync(path.join(tmpdir(), "verifier-reorg-"))),
        collector,
        decisions: new DecisionStore(signer.address),
        log: createLogger({ component: "verifier", write: (l) => lines.push(l) }),
        reorgs: new LogCursor(p.chain, filter, await p.chain.getBlockNumber()),
      },
    );
    verifiers.push(v);
    return { v, posted, lines };
  }

  const keysOf = async (v: Verifier) => (await v.readJobs()).map((j) => [j.jobId, j.pendingStep, j.pendingHash]);

  async function assignAndReport(jobId: bigint, hash: string) {
    await (await p.as(TEST_KEYS.coordinator).escrow.assign(jobId, provider.address)).wait();
    const escrow = p.as(provider.privateKey).escrow;
    const { epoch } = await escrow.jobOf(jobId);
    return (await (await escrow.reportCheckpoint(jobId, epoch, 4, hash)).wait())!.blockNumber;
  }

  for (const depth of [1, 2, 3]) {
    it(`a job whose cancel a reorg of depth ${depth} removed is read again: its new report is planned as by a fresh verifier`, async function () {
      const { v, lines } = await verifier();
      const jobId = await p.createJob(8, 4);
      await v.tick();
      expect((await keysOf(v)).map(([id]) => id)).to.include(jobId);
      const cancelled = (await (await p.as(TEST_KEYS.client).escrow.cancel(jobId)).wait())!.blockNumber;
      await v.tick(); // the job left training: remembered, not read again
      expect((await keysOf(v)).map(([id]) => id)).to.not.include(jobId);

      await mine(p.chain, depth - 1);
      expect(await p.reorgFrom(cancelled)).to.equal(depth);
      await assignAndReport(jobId, "0x" + "c4".repeat(32));
      const summary = await v.tick();
      const fresh = (await verifier()).v;
      expect(await keysOf(v)).to.deep.equal(await keysOf(fresh));
      expect(await keysOf(v)).to.deep.include([jobId, 4, "0x" + "c4".repeat(32)]);
      expect(lines.join("\n")).to.contain("chain reorganisation");
      // Planned and looked at: its blobs are not in the store (yet), so it waits out the grace, as the fresh one does.
      expect(summary).to.deep.equal(await fresh.tick());
      expect(summary.waiting).to.be.greaterThan(0);
    });
  }

  it("an acceptance removed by a reorg: the checkpoint is pending again and it decides and posts it again", async function () {
    const { v, posted } = await verifier(0);
    const jobId = await p.createJob(8, 4);
    const hash = "0x" + "e4".repeat(32);
    await assignAndReport(jobId, hash);
    await v.tick();
    const about = (b: SignatureBody) => b.kind === "checkpoint" && b.message.checkpointHash === hash;
    const digest = posted.find(about)!.digest;
    const accepted = await p.decide(jobId, true); // the other verifiers' quorum decided it
    await v.tick(); // no longer waited for: forgotten
    const count = posted.length;
    await p.reorgFrom(accepted);
    expect((await p.as(TEST_KEYS.client).escrow.jobOf(jobId)).pendingStep).to.equal(4n);
    await v.tick();
    const again = posted.slice(count).filter(about);
    expect(
      again.map((b) => b.digest),
      "decided again, the same decision",
    ).to.deep.equal([digest]);
  });

  it("a report it decided, removed by a reorg: the decision is dropped, the report made instead is decided anew", async function () {
    const { v, posted } = await verifier(0); // no grace: a report without blobs is refused at once
    const jobId = await p.createJob(8, 4);
    const first = "0x" + "d1".repeat(32);
    const reported = await assignAndReport(jobId, first);
    await v.tick();
    const mine1 = posted.filter((b) => b.kind === "checkpoint" && b.message.checkpointHash === first);
    expect(mine1.length, "decided and posted").to.be.greaterThan(0);
    expect(mine1[0].message).to.include({ accept: false });

    await p.reorgFrom(reported);
    const count = posted.length;
    await v.tick();
    expect(
      posted.slice(count).some((b) => b.kind === "checkpoint" && b.message.checkpointHash === first),
      "a decision for a report that no longer exists is not posted again",
    ).to.equal(false);

    const second = "0x" + "d2".repeat(32);
    const escrow = p.as(provider.privateKey).escrow;
    const { epoch } = await escrow.jobOf(jobId);
    await (await escrow.reportCheckpoint(jobId, epoch, 4, second)).wait();
    await v.tick();
    expect(posted.slice(count).some((b) => b.kind === "checkpoint" && b.message.checkpointHash === second)).to.equal(
      true,
    );
  });
});
