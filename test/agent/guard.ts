/**
 * Against a store writer: the agent keeps the blobs of a report that is still undecided in the store. A real
 * agent on the simulated chain reports a checkpoint nobody decides; someone with write access to the store then
 * overwrites the checkpoint blob and removes a boundary state. Nothing is read back in the first GUARD_AFTER_MS (the
 * usual decision comes sooner); after it, the agent finds both and puts them again, so a verifier reading within its
 * 30 s grace (verifier/verifier.ts GRACE_CODES) finds the honest blobs.
 */
import { expect } from "chai";
import { unlink } from "node:fs/promises";
import { GUARD_AFTER_MS } from "../../agent/work.ts";
import { blobHash, decodeCheckpoint, FsBackend, storedSteps } from "../../workloads/index.ts";
import { localProtocol, staked, startAgent, until } from "./helpers.ts";

describe("agent: an undecided report's blobs are put again when a store writer overwrites or removes them", function () {
  this.timeout(60_000);

  it("nothing read back before GUARD_AFTER_MS; after it the overwritten checkpoint and the removed state are put again", async function () {
    const p = await localProtocol();
    const jobId = await p.createJob(12, 4);
    const wallet = await p.fundedWallet();
    let offsetMs = 0;
    const agent = await startAgent(wallet, p.deployment, { deps: { clock: { now: () => Date.now() + offsetMs } } });
    try {
      await until("registration and stake", () => staked(p.registry, wallet.address));
      await (await p.escrow.connect(p.coordinator).assign(jobId, wallet.address)).wait();
      await until("first report", async () => (await p.escrow.jobOf(jobId)).pendingStep === 4n);
      const hash = (await p.escrow.jobOf(jobId)).pendingHash;
      const c = decodeCheckpoint(await agent.store.get(hash));
      const backend = agent.store.backend as FsBackend;
      // A boundary state the checkpoint commits (stored), and the checkpoint blob itself.
      const boundary = storedSteps(c.startStep, c.step, c.segmentSteps).find((s) => s < c.step)!;
      const stateHash = c.stepHashes[boundary - c.startStep - 1];
      await unlink(backend.path(stateHash.slice(2)));
      await backend.write(hash.slice(2), new TextEncoder().encode("someone else's bytes"));
      const repaired = () => agent.records.filter((r) => r.msg.startsWith("reported checkpoint's blobs were gone"));
      await new Promise((r) => setTimeout(r, 500));
      expect(repaired(), "nothing read back yet").to.deep.equal([]);
      expect(await backend.exists(stateHash.slice(2))).to.equal(false);
      offsetMs = GUARD_AFTER_MS + 1_000;
      await until("the repair", async () => repaired().length > 0);
      expect(repaired()[0]).to.include({ step: 4, repaired: 2 });
      expect(blobHash(await agent.store.get(hash))).to.equal(hash.toLowerCase());
      expect(blobHash(await agent.store.get(stateHash))).to.equal(stateHash.toLowerCase());
    } finally {
      await agent.stop();
    }
  });
});
