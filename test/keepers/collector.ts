/**
 * The verdict collector against a simulated chain with a real 2-of-3 Safe: HTTP submissions, checks, threshold,
 * duplicates, concurrency across jobs, restart from the state file at every point of a send, two collectors at
 * once, dropped transactions, --dry-run, protocol-kit equivalence and --via-safe-tx.
 */
import { expect } from "chai";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type { HDNodeWallet } from "ethers";
import SafeKit, { buildSignatureBytes, EthSafeSignature } from "@safe-global/protocol-kit";
import { createCollector } from "../../keepers/collector/tick.ts";
import { safeTxExecutor } from "../../keepers/collector/safeTx.ts";
import { startJsonServer } from "../../keepers/http.ts";
import type { Sender } from "../../keepers/chain.ts";
import {
  checkpointDecisionDigest,
  checkpointDecisionTypes,
  packSafeSignatures,
  signAsSafeOwner,
  verdictDigest,
} from "../../sdk/rules/verifierSignatures.ts";
import {
  CRASH_POINTS,
  barrier,
  ckpt,
  connection,
  crashingSender,
  createJob,
  domainOf,
  droppingSender,
  errors,
  eventCount,
  ethers,
  load,
  networkHelpers,
  testContext,
  trainToEnd,
  wallet,
  warnings,
  type Protocol,
  type TestContextOptions,
} from "./fixture.ts";

type SafeClass = (typeof import("@safe-global/protocol-kit"))["default"];
const Safe = ("init" in SafeKit
  ? SafeKit
  : (SafeKit as unknown as { default: SafeClass }).default) as unknown as SafeClass;

const [V1, V2, V3] = [wallet(3), wallet(4), wallet(5)];
const OUTSIDER = wallet(11);

const tmpState = () => path.join(mkdtempSync(path.join(tmpdir(), "gpuchain-collector-")), "state.json");

async function collectorFor(p: Protocol, stateFile: string, o: TestContextOptions = {}) {
  const { ctx, lines } = await testContext(p, { signer: p.stranger, component: "collector", ...o });
  const collector = createCollector(
    ctx,
    { stateFile, dryRun: o.dryRun ?? false },
    {
      safeAddress: p.deployment.verifierSafe,
      escrowAddress: p.deployment.escrow,
    },
  );
  await collector.restore();
  return { ctx, lines, collector };
}

/** A job assigned to provider1 with checkpoint step 10 reported (pending). */
async function pendingCheckpoint(p: Protocol) {
  const jobId = await createJob(p);
  await p.escrow.connect(p.coordinator).assign(jobId, p.provider1.address);
  const hash = ckpt(jobId, 10);
  await p.escrow.connect(p.provider1).reportCheckpoint(jobId, 1n, 10, hash);
  return { jobId, epoch: 1n, step: 10, hash };
}

async function checkpointBody(
  p: Protocol,
  w: HDNodeWallet,
  c: { jobId: bigint; epoch: bigint; step: number; hash: string },
  accept = true,
) {
  const typed = { jobId: c.jobId, epoch: c.epoch, step: c.step, checkpointHash: c.hash, accept };
  const digest = checkpointDecisionDigest(domainOf(p), typed);
  return {
    kind: "checkpoint",
    message: { jobId: c.jobId.toString(), epoch: c.epoch.toString(), step: c.step, checkpointHash: c.hash, accept },
    digest,
    signer: w.address,
    signature: await signAsSafeOwner(w, p.chainId, p.deployment.verifierSafe, digest),
  };
}

async function verdictBody(p: Protocol, w: HDNodeWallet, jobId: bigint, modelHash: string, passed = true) {
  const digest = verdictDigest(domainOf(p), { jobId, modelHash, metric: 9_700n, passed });
  return {
    kind: "verdict",
    message: { jobId: jobId.toString(), modelHash, metric: "9700", passed },
    digest,
    signer: w.address,
    signature: await signAsSafeOwner(w, p.chainId, p.deployment.verifierSafe, digest),
  };
}

const savedPending = (file: string) => JSON.parse(readFileSync(file, "utf8")).pending as unknown[];

describe("keepers: verdict collector on chain", function () {
  it("over HTTP: counts a re-sent signature once and relays the acceptance as soon as 2 of 3 owners signed, once", async function () {
    const p = await load();
    const c = await pendingCheckpoint(p);
    const file = tmpState();
    const { collector, ctx } = await collectorFor(p, file);
    const server = await startJsonServer({
      host: "127.0.0.1",
      port: 0,
      logger: ctx.logger,
      routes: { "POST /signatures": collector.submit },
    });
    const post = async (body: unknown) => {
      const r = await fetch(`${server.url}/signatures`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      return { status: r.status, body: await r.json() };
    };
    try {
      const b1 = await checkpointBody(p, V1, c);
      expect(await post(b1)).to.deep.include({ status: 200 });
      expect((await post(b1)).body).to.include({ signatures: 1, threshold: 2 });
      expect(savedPending(file)).to.have.length(1);
      expect((await post(await checkpointBody(p, V2, c))).body).to.include({ signatures: 2 });
      await collector.idle();
      expect(await eventCount(p, "CheckpointAccepted", c.jobId)).to.equal(1);
      expect(savedPending(file)).to.deep.equal([]);
      // The third verifier is late; verifiers also re-send: nothing more is sent.
      expect((await post(await checkpointBody(p, V3, c))).body).to.include({ state: "done" });
      expect((await post(b1)).body).to.include({ state: "done" });
      await collector.tick();
      await collector.idle();
      expect(await eventCount(p, "CheckpointAccepted", c.jobId)).to.equal(1);
      expect(await p.escrow.earningsOf(c.jobId, p.provider1.address)).to.equal(9_000n);
    } finally {
      await server.close();
    }
  });

  it("with a confirmation depth of 2 it relays an acceptance only once the report has 2 blocks on top", async function () {
    const p = await load();
    const c = await pendingCheckpoint(p); // reported in the head block: t − 2
    const { ctx } = await testContext(p, { signer: p.stranger, component: "collector" });
    const collector = createCollector(
      ctx,
      { stateFile: tmpState(), dryRun: false, confirmations: 2 },
      { safeAddress: p.deployment.verifierSafe, escrowAddress: p.deployment.escrow },
    );
    await collector.submit(await checkpointBody(p, V1, c));
    await collector.submit(await checkpointBody(p, V2, c));
    await collector.idle();
    expect(await eventCount(p, "CheckpointAccepted", c.jobId), "head t − 2").to.equal(0);
    await networkHelpers.mine(1);
    await collector.tick();
    await collector.idle();
    expect(await eventCount(p, "CheckpointAccepted", c.jobId), "head t − 1").to.equal(0);
    await networkHelpers.mine(1);
    await collector.tick();
    await collector.idle();
    expect(await eventCount(p, "CheckpointAccepted", c.jobId), "head t").to.equal(1);
  });

  it("rejects with 400: a signer who is not a Safe owner, a digest that is not the message's, a signature by someone else", async function () {
    const p = await load();
    const c = await pendingCheckpoint(p);
    const { collector } = await collectorFor(p, tmpState());
    const outsider = await collector.submit(await checkpointBody(p, OUTSIDER, c));
    expect(outsider.status).to.equal(400);
    expect((outsider.body as { reason: string }).reason).to.contain("not an owner");
    const wrongDigest = {
      ...(await checkpointBody(p, V1, c)),
      message: { jobId: c.jobId.toString(), epoch: "1", step: 11, checkpointHash: c.hash, accept: true },
    };
    expect((await collector.submit(wrongDigest)).body).to.deep.include({ ok: false });
    expect(String(((await collector.submit(wrongDigest)).body as { reason: string }).reason)).to.contain(
      "digest does not match",
    );
    const forged = { ...(await checkpointBody(p, V2, c)), signer: V1.address };
    expect(((await collector.submit(forged)).body as { reason: string }).reason).to.contain("not the signer's");
    expect((await collector.submit({ kind: "checkpoint" })).status).to.equal(400);
    expect(collector.pool.size).to.equal(0);
  });

  it("refuses a checkpoint, and relays verdicts of different jobs concurrently", async function () {
    const p = await load();
    const c = await pendingCheckpoint(p);
    const jobB = await createJob(p);
    await p.escrow.connect(p.coordinator).assign(jobB, p.provider2.address);
    const hashB = await trainToEnd(p, jobB, p.provider2);
    const jobC = await createJob(p, { maxPricePerStep: 1_100n, budget: 110_000n });
    await p.escrow.connect(p.coordinator).assign(jobC, p.provider3.address);
    const hashC = await trainToEnd(p, jobC, p.provider3);
    let inFlight = 0;
    let maxInFlight = 0;
    const counting = (base: Sender): Sender => ({
      simulate: base.simulate,
      async send(m, a) {
        inFlight++;
        maxInFlight = Math.max(maxInFlight, inFlight);
        await new Promise((r) => setTimeout(r, 50));
        try {
          return await base.send(m, a);
        } finally {
          inFlight--;
        }
      },
    });
    const { collector } = await collectorFor(p, tmpState(), { sender: counting });
    await collector.submit(await checkpointBody(p, V1, c, false));
    await collector.submit(await checkpointBody(p, V3, c, false));
    await collector.idle();
    expect(await eventCount(p, "CheckpointRefused", c.jobId)).to.equal(1);
    expect(await p.escrow.isFenced(c.jobId, p.provider1.address)).to.equal(true);
    maxInFlight = 0;
    for (const [job, hash] of [
      [jobB, hashB],
      [jobC, hashC],
    ] as const) {
      await collector.submit(await verdictBody(p, V2, job, hash));
    }
    for (const [job, hash] of [
      [jobB, hashB],
      [jobC, hashC],
    ] as const) {
      await collector.submit(await verdictBody(p, V3, job, hash));
    }
    await collector.idle();
    expect(await eventCount(p, "VerdictSubmitted", jobB)).to.equal(1);
    expect(await eventCount(p, "VerdictSubmitted", jobC)).to.equal(1);
    expect(maxInFlight).to.equal(2);
  });

  it("holds a verdict signed before the final acceptance landed, and sends it right after", async function () {
    const p = await load();
    // A one-checkpoint job whose final checkpoint is reported but not yet accepted.
    const job2 = await createJob(p, { totalSteps: 10 });
    await p.escrow.connect(p.coordinator).assign(job2, p.provider2.address);
    const hash = ckpt(job2, 10);
    await p.escrow.connect(p.provider2).reportCheckpoint(job2, 1n, 10, hash);
    const { collector, lines } = await collectorFor(p, tmpState());
    await collector.submit(await verdictBody(p, V1, job2, hash));
    await collector.submit(await verdictBody(p, V2, job2, hash));
    await collector.idle();
    expect(
      lines.some((l) => l.msg === "signed, waiting for the chain" && String(l.reason).includes("training incomplete")),
    ).to.equal(true);
    const c = { jobId: job2, epoch: 1n, step: 10, hash };
    await collector.submit(await checkpointBody(p, V1, c));
    await collector.submit(await checkpointBody(p, V2, c));
    await collector.idle();
    expect(await eventCount(p, "CheckpointAccepted", job2)).to.equal(1);
    expect(await eventCount(p, "VerdictSubmitted", job2)).to.equal(1);
    expect(collector.pool.size).to.equal(0);
  });

  for (const point of CRASH_POINTS) {
    it(`restarted from its state file after dying ${point}: the decision lands exactly once`, async function () {
      const p = await load();
      const c = await pendingCheckpoint(p);
      const file = tmpState();
      const dying = await collectorFor(p, file, { sender: crashingSender(point) });
      await dying.collector.submit(await checkpointBody(p, V1, c));
      await dying.collector.submit(await checkpointBody(p, V2, c));
      await dying.collector.idle();
      expect(savedPending(file)).to.have.length(1);
      // A fresh process: nothing in memory, only the file (and the chain).
      const fresh = await collectorFor(p, file);
      expect(fresh.collector.pool.size).to.equal(1);
      await fresh.collector.tick();
      await fresh.collector.idle();
      expect(await eventCount(p, "CheckpointAccepted", c.jobId)).to.equal(1);
      expect(savedPending(file)).to.deep.equal([]);
      expect(errors(fresh.lines)).to.deep.equal([]);
    });
  }

  it("two collectors relaying the same decision at once: one lands, the other logs an expected race", async function () {
    const p = await load();
    const c = await pendingCheckpoint(p);
    const both = barrier(2);
    const a = await collectorFor(p, tmpState(), { sender: both });
    const b = await collectorFor(p, tmpState(), { sender: both });
    const bodies = [await checkpointBody(p, V1, c), await checkpointBody(p, V3, c)];
    for (const x of [a, b]) for (const body of bodies) await x.collector.submit(body);
    await Promise.all([a.collector.idle(), b.collector.idle()]);
    expect(await eventCount(p, "CheckpointAccepted", c.jobId)).to.equal(1);
    const raced = [...warnings(a.lines), ...warnings(b.lines)].filter((l) => String(l.msg).startsWith("lost a race"));
    expect(raced).to.have.length(1);
    expect(String(raced[0].error)).to.match(/^JobEscrow(NoSuchPendingCheckpoint|UnexpectedStatus)/);
    expect([...errors(a.lines), ...errors(b.lines)]).to.deep.equal([]);
    expect(a.collector.pool.size + b.collector.pool.size).to.equal(0);
  });

  it("a dropped transaction is redone by the next tick", async function () {
    const p = await load();
    const c = await pendingCheckpoint(p);
    let drop = true;
    const { collector } = await collectorFor(p, tmpState(), {
      txTimeoutMs: 100,
      sender: (base) => ({
        simulate: base.simulate,
        send: (m, a) => (drop ? droppingSender(base).send(m, a) : base.send(m, a)),
      }),
    });
    await collector.submit(await checkpointBody(p, V1, c));
    await collector.submit(await checkpointBody(p, V2, c));
    await collector.idle();
    expect(await eventCount(p, "CheckpointAccepted", c.jobId)).to.equal(0);
    expect(collector.pool.size).to.equal(1);
    drop = false;
    await collector.tick();
    await collector.tick();
    expect(await eventCount(p, "CheckpointAccepted", c.jobId)).to.equal(1);
  });

  it("--dry-run decides without sending", async function () {
    const p = await load();
    const c = await pendingCheckpoint(p);
    const { collector, lines } = await collectorFor(p, tmpState(), { dryRun: true });
    const before = await ethers.provider.getBlockNumber();
    await collector.submit(await checkpointBody(p, V1, c));
    await collector.submit(await checkpointBody(p, V2, c));
    await collector.idle();
    await collector.tick();
    expect(await ethers.provider.getBlockNumber()).to.equal(before);
    expect(lines.filter((l) => l.msg === "dry run: not sent")).to.have.length(1);
    expect(lines.find((l) => l.msg === "dry run: not sent")).to.include({
      simulation: "ok",
      method: "acceptCheckpoint",
    });
  });

  it("our SafeMessage signatures and packing equal @safe-global/protocol-kit's signMessage and buildSignatureBytes", async function () {
    const p = await load();
    const decision = { jobId: 7n, epoch: 3n, step: 40, checkpointHash: ckpt(7n, 40), accept: true };
    const digest = checkpointDecisionDigest(domainOf(p), decision);
    const contractNetworks = { [p.chainId.toString()]: p.deployment.safe };
    const ours = [];
    const theirs = [];
    for (const w of [V3, V1]) {
      const kit = await Safe.init({
        provider: connection.provider as never,
        signer: w.privateKey,
        safeAddress: p.deployment.verifierSafe,
        contractNetworks,
      });
      // protocol-kit hashes EIP-712 typed data to the same digest the escrow computes, then signs it as a SafeMessage.
      const typedData = {
        domain: { ...domainOf(p), chainId: Number(p.chainId) },
        types: checkpointDecisionTypes,
        primaryType: "CheckpointDecision",
        message: { ...decision, jobId: decision.jobId.toString(), epoch: decision.epoch.toString() },
      };
      const signed = await kit.signMessage(kit.createMessage(typedData as never));
      const sig = signed.getSignature(w.address)!;
      theirs.push(new EthSafeSignature(w.address, sig.data));
      ours.push({
        signer: w.address,
        signature: await signAsSafeOwner(w, p.chainId, p.deployment.verifierSafe, digest),
      });
      expect(sig.data).to.equal(ours.at(-1)!.signature);
    }
    expect(buildSignatureBytes(theirs)).to.equal(packSafeSignatures(ours));
    // And the Safe itself agrees (EIP-1271 through its fallback handler).
    const safe = new ethers.Contract(
      p.deployment.verifierSafe,
      ["function isValidSignature(bytes32,bytes) view returns (bytes4)"],
      ethers.provider,
    );
    expect(await safe.isValidSignature(digest, packSafeSignatures(ours))).to.equal("0x1626ba7e");
  });

  it("--via-safe-tx executes the decision as a Safe transaction signed by two owners (protocol-kit)", async function () {
    const p = await load();
    const c = await pendingCheckpoint(p);
    const { ctx, lines } = await testContext(p, { signer: p.stranger, component: "collector" });
    const executor = safeTxExecutor(ctx, {
      provider: connection.provider as never,
      ownerKeys: [V1.privateKey, V2.privateKey],
      deployment: p.deployment,
    });
    const collector = createCollector(
      ctx,
      { stateFile: tmpState(), dryRun: false },
      {
        safeAddress: p.deployment.verifierSafe,
        escrowAddress: p.deployment.escrow,
        executor,
      },
    );
    const nonce = new ethers.Contract(
      p.deployment.verifierSafe,
      ["function nonce() view returns (uint256)"],
      ethers.provider,
    );
    const before = await nonce.nonce();
    await collector.submit(await checkpointBody(p, V1, c));
    await collector.submit(await checkpointBody(p, V2, c));
    await collector.idle();
    expect(errors(lines)).to.deep.equal([]);
    const [ev] = await p.escrow.queryFilter(p.escrow.filters.CheckpointAccepted(c.jobId));
    expect(ev.args.step).to.equal(10n);
    const tx = await ethers.provider.getTransaction(ev.transactionHash);
    expect(tx!.to).to.equal(p.deployment.verifierSafe);
    expect(await nonce.nonce()).to.equal(before + 1n);
  });
});
