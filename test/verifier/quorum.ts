/**
 * Three verifier runners against the real protocol on the simulated chain (Ignition deploy, a real Safe v1.4.1 as
 * 2-of-3 multisig; Hardhat accounts 3, 4, 5 are its owners). The collector is another part, so these tests relay
 * what the verifiers post: as soon as two owners signed the same digest, their signatures are packed and sent to
 * the escrow, exactly what the collector does.
 */
import { expect } from "chai";
import { join } from "node:path";
import { network } from "hardhat";
import { deployOn } from "../helpers/deploy.ts";
import { createLogger } from "../../sdk/run/log.ts";
import { packSafeSignatures } from "../../sdk/rules/verifierSignatures.ts";
import { FsCheckpointStore, loadTemplate, type Trainer } from "../../workloads/index.ts";
import type { SignaturePoster } from "../../verifier/collector.ts";
import { DecisionStore } from "../../verifier/decisions.ts";
import { Verifier, type BehaviourName as Behaviour, type EscrowReader } from "../../verifier/verifier.ts";
import type { FaultBody, SignatureBody } from "../../verifier/work.ts";
import { Provider, verifierWallets, type Case } from "./helpers.ts";
import { closeScratch, openScratch } from "../helpers/scratch.ts";

const connection = await network.create();
const { ethers, networkHelpers } = connection;

const PRICE = 900n;
const REQUEST = {
  totalSteps: 20,
  checkpointInterval: 10,
  maxPricePerStep: 1_000n,
  budget: 100_000n,
  disputeWindow: 3_600n,
};
const Status = { Open: 1n, Running: 2n, DisputeWindow: 3n } as const;

/** What the collector does, in a few lines: pool signatures by digest; send as soon as two owners signed. */
class Relay implements SignaturePoster {
  pool = new Map<string, Map<string, SignatureBody>>();
  async post(body: SignatureBody) {
    const entry = this.pool.get(body.digest) ?? new Map<string, SignatureBody>();
    entry.set(body.signer.toLowerCase(), body);
    this.pool.set(body.digest, entry);
  }
  signers(digest: string): number {
    return this.pool.get(digest)?.size ?? 0;
  }
  /** Fault claims, as the collector lists them: FaultRefusals signed by their own finder. */
  async claims(): Promise<FaultBody[]> {
    return [...this.pool.values()]
      .flatMap((e) => [...e.values()])
      .filter(
        (b): b is FaultBody => b.kind === "fault" && b.signer.toLowerCase() === b.message.fault.finder.toLowerCase(),
      );
  }
  /** The decisions with at least two signers: [body, packed signatures]. */
  ready(): [SignatureBody, string][] {
    return [...this.pool.values()]
      .filter((e) => e.size >= 2)
      .map((e) => {
        const bodies = [...e.values()];
        return [bodies[0], packSafeSignatures(bodies.slice(0, 2))];
      });
  }
}

describe("verifier quorum on the local chain: 2 of 3 decide", function () {
  const template = loadTemplate("blobs-tiny");
  let dir: string;
  let trainer: Trainer;

  before(async () => {
    ({ dir, trainer } = await openScratch("gpuchain-verifier-quorum-", template));
  });
  after(() => closeScratch({ dir, trainer }));

  async function deploy() {
    const signers = await ethers.getSigners();
    const [owner, coordinator, , , , , , client, provider1, provider2, stranger] = signers;
    const { escrow, usdc, registry, deployment, chainId } = await deployOn(connection);
    await escrow.connect(owner).setTemplateApproval(template.templateId, true);
    await usdc.mint(client.address, 1_000_000_000n);
    await usdc.connect(client).approve(await escrow.getAddress(), ethers.MaxUint256);
    await registry.connect(provider1).register("provider1", PRICE, 1, "cpu", 1024);
    await registry.connect(provider2).register("provider2", PRICE, 1, "cpu", 1024);
    const stake = 5n * (await registry.minStake()); // an identity without stake takes no work
    for (const provider of [provider1, provider2]) {
      await usdc.mint(provider.address, stake);
      await usdc.connect(provider).approve(await registry.getAddress(), stake);
      await registry.connect(provider).depositStake(stake);
    }
    await escrow.connect(client).createJob({ templateId: template.templateId, ...REQUEST });
    await escrow.connect(coordinator).assign(1n, provider1.address);
    return { escrow, coordinator, provider1, provider2, stranger, chainId, safe: deployment.verifierSafe };
  }

  type World = Awaited<ReturnType<typeof deploy>> & { store: FsCheckpointStore; provider: Provider; relay: Relay };

  async function world(name: string): Promise<World> {
    const w = await networkHelpers.loadFixture(deploy);
    const store = new FsCheckpointStore(join(dir, name));
    return { ...w, store, provider: new Provider(trainer, store), relay: new Relay() };
  }

  function verifiers(w: World, behaviours: Behaviour[]): Verifier[] {
    return verifierWallets().map(
      (wallet, i) =>
        new Verifier(
          {
            chainId: w.chainId,
            escrow: w.escrow.target as string,
            safe: w.safe,
            samples: 3,
            behaviour: behaviours[i],
            dryRun: false,
            pollMs: 10,
            missingBlobGraceMs: 0,
          },
          {
            chain: w.escrow as unknown as EscrowReader,
            signer: wallet,
            store: w.store,
            collector: w.relay,
            decisions: new DecisionStore(wallet.address),
            log: createLogger({ component: `verifier${i + 1}`, write: () => {} }),
          },
        ),
    );
  }

  /** The assignee trains the next segment (`kind`), uploads it and reports it on chain. */
  async function report(w: World, kind: Case, as = w.provider1): Promise<{ step: number; hash: string }> {
    const j = await w.escrow.jobOf(1n);
    const facts = {
      seed: j.seed,
      templateId: j.templateId,
      acceptedStep: Number(j.acceptedStep),
      acceptedHash: j.acceptedHash,
    };
    w.provider.maker = as.address.toLowerCase(); // the checkpoint commits its reporter
    const { report: r } = await w.provider.produce(facts, facts.acceptedStep + REQUEST.checkpointInterval, kind);
    await w.escrow.connect(as).reportCheckpoint(1n, j.epoch, r.step, r.hash);
    return r;
  }

  /** Each online verifier ticks once; then every decision with two signatures is sent to the escrow. */
  async function round(w: World, online: Verifier[]): Promise<void> {
    for (const v of online) await v.tick();
    for (const [body, packed] of w.relay.ready()) {
      const m = body.message;
      const e = w.escrow.connect(w.stranger);
      if (body.kind === "verdict" && "metric" in m)
        await e.submitVerdict(m.jobId, m.modelHash, m.metric, m.passed, packed);
      else if (body.kind === "fault" && "fault" in m)
        await e.refuseWithFault(m.jobId, m.epoch, m.step, m.checkpointHash, m.fault, packed);
      else if ("accept" in m)
        await (m.accept ? e.acceptCheckpoint : e.refuseCheckpoint)(m.jobId, m.epoch, m.step, m.checkpointHash, packed);
    }
    w.relay.pool.clear();
  }

  it("accepts an honest checkpoint with one verifier offline: the other two still decide", async function () {
    const w = await world("offline");
    const [v1, v2, v3] = verifiers(w, ["honest", "honest", "honest"]);
    const r = await report(w, "honest");
    await round(w, [v1, v2]);
    const j = await w.escrow.jobOf(1n);
    expect([j.acceptedStep, j.acceptedHash, j.pendingStep]).to.deep.equal([BigInt(r.step), r.hash, 0n]);
    expect(await w.escrow.earningsOf(1n, w.provider1.address)).to.equal(10n * PRICE);
    // The offline verifier comes back: nothing is pending, so it signs nothing.
    expect(await v3.tick()).to.include({ items: 0, decided: 0 });
    for (const v of [v1, v2, v3]) await v.close();
  });

  it("refuses a faulty checkpoint although one verifier always accepts: the provider is fenced and not paid", async function () {
    const w = await world("malicious-accept");
    const [v1, v2, v3] = verifiers(w, ["honest", "honest", "always-accept"]);
    const epoch = (await w.escrow.jobOf(1n)).epoch;
    const r = await report(w, "garbage-weights");
    for (const v of [v1, v2, v3]) await v.tick();
    const bodies = [...w.relay.pool.values()].map((e) => [...e.values()][0]);
    const accept = bodies.find((b) => "accept" in b.message && b.message.accept)!;
    expect(w.relay.signers(accept.digest)).to.equal(1); // only the malicious verifier signed accept
    await expect(
      w.escrow.connect(w.stranger).acceptCheckpoint(1n, epoch, r.step, r.hash, packSafeSignatures([accept])),
    ).to.be.revertedWithCustomError(w.escrow, "JobEscrowInvalidVerifierSignatures");
    await round(w, []);
    const j = await w.escrow.jobOf(1n);
    expect(await w.escrow.statusOf(1n)).to.equal(Status.Open);
    expect([j.acceptedStep, j.paid, j.epoch]).to.deep.equal([0n, 0n, epoch + 1n]);
    expect(await w.escrow.isFenced(1n, w.provider1.address)).to.equal(true);
    expect(await w.escrow.earningsOf(1n, w.provider1.address)).to.equal(0n);
    // The fenced report is gone from chain: the verifiers drop it and sign nothing more.
    for (const v of [v1, v2, v3]) expect(await v.tick()).to.include({ items: 0 });
    for (const v of [v1, v2, v3]) await v.close();
  });

  it("accepts honest work although one verifier always refuses, through to the verdict: no honest work lost", async function () {
    const w = await world("malicious-refuse");
    const [v1, v2, v3] = verifiers(w, ["honest", "honest", "always-refuse"]);
    await report(w, "honest");
    await round(w, [v1, v2, v3]);
    expect((await w.escrow.jobOf(1n)).acceptedStep).to.equal(10n);
    const last = await report(w, "honest");
    await round(w, [v1, v2, v3]);
    expect((await w.escrow.jobOf(1n)).acceptedHash).to.equal(last.hash);
    expect(await w.escrow.earningsOf(1n, w.provider1.address)).to.equal(20n * PRICE);
    // Every step accepted: the honest pair signs the verdict; the malicious verifier's verdict does not combine.
    await round(w, [v1, v2, v3]);
    expect(await w.escrow.statusOf(1n)).to.equal(Status.DisputeWindow);
    const verdict = await w.escrow.verdictOf(1n);
    expect(verdict.modelHash).to.equal(last.hash);
    expect(verdict.metric).to.be.within(1n, 10_000n);
    expect(verdict.passed).to.equal(verdict.metric >= 9_000n);
    for (const v of [v1, v2, v3]) await v.close();
  });

  it("after a refusal, the next provider's honest work from the accepted checkpoint is accepted and paid", async function () {
    const w = await world("failover");
    const vs = verifiers(w, ["honest", "honest", "honest"]);
    await report(w, "wrong-data");
    await round(w, vs);
    expect(await w.escrow.isFenced(1n, w.provider1.address)).to.equal(true);
    await w.escrow.connect(w.coordinator).assign(1n, w.provider2.address);
    await report(w, "honest", w.provider2);
    await round(w, vs);
    expect(await w.escrow.earningsOf(1n, w.provider2.address)).to.equal(10n * PRICE);
    expect(await w.escrow.earningsOf(1n, w.provider1.address)).to.equal(0n);
    for (const v of vs) await v.close();
  });
});
