/**
 * The collector at a confirmation depth ≥ 1 (found by the rehearsal, demo/rehearsal.ts): a decision it
 * relayed stays in its pool, signatures and all, until the decision is that deep; a reorganisation that removes it
 * leaves the checkpoint pending again, and the collector relays the same decision again at its next tick, without
 * waiting for any verifier to re-post (before: the digest left the pool at once, nothing was relayed again until a
 * re-post, and in the rehearsal the job stalled behind the lost acceptance). Real anvil, real reorganisation.
 */
import { expect } from "chai";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { Wallet } from "ethers";
import { TEST_KEYS } from "../../demo/chain.ts";
import { keeperContext } from "../../keepers/context.ts";
import { createCollector } from "../../keepers/collector/tick.ts";
import { createLogger } from "../../sdk/run/log.ts";
import { escrowDomain, signAsSafeOwner } from "../../sdk/rules/verifierSignatures.ts";
import { checkpointMessage, digestOf, type SignatureBody } from "../../verifier/work.ts";
import { anvilProtocol, CHAIN_ID, mine, VERIFIER_KEYS, type AnvilProtocol } from "../helpers/anvilChain.ts";

describe("keepers: the collector keeps a relayed decision until it is confirmed (anvil)", function () {
  this.timeout(180_000);
  let p: AnvilProtocol;
  const lines: string[] = [];

  before(async function () {
    p = await anvilProtocol("collector-confirmed");
  });
  after(async () => p?.stop());

  it("an acceptance removed by a reorg before its confirmation is relayed again at the next tick, no re-post", async function () {
    const provider = await p.provider(10);
    const jobId = await p.createJob(8, 4);
    await (await p.as(TEST_KEYS.coordinator).escrow.assign(jobId, provider.address)).wait();
    const escrow = p.as(provider.privateKey).escrow;
    await (await escrow.reportCheckpoint(jobId, (await escrow.jobOf(jobId)).epoch, 4, "0x" + "a4".repeat(32))).wait();

    const ctx = await keeperContext({
      deployment: p.deployment,
      provider: p.chain,
      chainId: CHAIN_ID,
      logger: createLogger({ component: "collector", write: (l) => lines.push(l) }),
      signer: new Wallet(TEST_KEYS.arbiter, p.chain),
    });
    const stateFile = path.join(mkdtempSync(path.join(tmpdir(), "collector-confirmed-")), "pending.json");
    const c = createCollector(
      ctx,
      { stateFile, dryRun: false, confirmations: 1 },
      { safeAddress: p.deployment.verifierSafe, escrowAddress: p.deployment.escrow },
    );
    const job = await escrow.jobOf(jobId);
    const item = { jobId, epoch: job.pendingEpoch, step: 4, hash: job.pendingHash };
    const { message, typed } = checkpointMessage(item as Parameters<typeof checkpointMessage>[0], true);
    const digest = digestOf(escrowDomain(CHAIN_ID, p.deployment.escrow), { kind: "checkpoint", typed });
    for (const k of VERIFIER_KEYS) {
      const w = new Wallet(k);
      const signature = await signAsSafeOwner(w, CHAIN_ID, p.deployment.verifierSafe, digest);
      await c.submit({ kind: "checkpoint", message, digest, signer: w.address, signature } as SignatureBody);
    }
    await c.idle();
    const accepted = async () => (await escrow.jobOf(jobId)).acceptedStep;
    expect(await accepted(), "the report has no block on top yet").to.equal(0n);
    await mine(p.chain, 1);
    await c.tick();
    await c.idle();
    expect(await accepted(), "relayed once the report is 1 block deep").to.equal(4n);
    expect(c.pool.size, "kept until the acceptance is 1 block deep").to.equal(1);

    const acceptedAt = await p.chain.getBlockNumber();
    expect(await p.reorgFrom(acceptedAt)).to.equal(1);
    expect(await accepted(), "the reorg removed the acceptance").to.equal(0n);
    await c.tick(); // no verifier re-posts
    await c.idle();
    expect(await accepted(), "relayed again from the pool").to.equal(4n);

    await mine(p.chain, 1);
    await c.tick();
    await c.idle();
    expect(c.pool.size, "confirmed: gone from the pool").to.equal(0);
    expect(lines.join("\n")).to.contain("kept until it is confirmed");
  });
});
