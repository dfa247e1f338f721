/**
 * The provider's own terminal says what it earned. Before, `gpuchain provide` said "checkpoint
 * accepted" and nothing about money; now each accepted checkpoint is one line with the credit and the job's total
 * as the chain holds them (CheckpointAccepted's amount, earningsOf at that block), then the verdict says from when
 * the earnings are withdrawable (JobEscrow's rule: claimable once Settled; settleable the second after verdict +
 * window), and the settlement says they are withdrawable now, each with the withdraw command. The agent runs
 * in-process against Hardhat's simulated chain; the verifiers' and the verdict's signatures are real 2-of-3 Safe
 * owner signatures.
 */
import { expect } from "chai";
import { formatTime } from "../../sdk/words/format.ts";
import {
  escrowDomain,
  packSafeSignatures,
  signAsSafeOwner,
  verdictDigest,
} from "../../sdk/rules/verifierSignatures.ts";
import { assignedAgent, localProtocol, until, type LocalProtocol, type RunningAgent } from "./helpers.ts";

const WITHDRAW = "npx --prefix /opt/gpuchain gpuchain withdraw --key /keys/p.key --rpc R --deployment /d.json";
const WINDOW = 3_600n; // localProtocol's jobs

describe("agent: what it earned, in its own terminal", function () {
  this.timeout(120_000);
  let p: LocalProtocol;
  let agent: RunningAgent | undefined;

  before(async function () {
    p = await localProtocol();
  });
  after(async () => {
    await agent?.stop();
  });

  /** The agent's line that starts with `prefix` (waited for). */
  const line = (prefix: string) =>
    until(`"${prefix}…" in the agent's log`, () => agent!.records.find((r) => r.msg.startsWith(prefix))?.msg, 60_000);

  it("one line per accepted checkpoint with the chain's credit and total, then from when and how to withdraw", async function () {
    const { escrow } = p;
    const jobId = await p.createJob(8, 4);
    const started = await assignedAgent(p, jobId, { config: { withdrawCommand: WITHDRAW } });
    agent = started.agent;
    const me = started.wallet.address;

    await until("first report", async () => (await escrow.jobOf(jobId)).pendingStep === 4n, 60_000);
    await p.decide(jobId, true);
    expect(await line("checkpoint at step 4 accepted")).to.equal(
      `checkpoint at step 4 accepted: credited 0.003600 USDC (total 0.003600 USDC on job ${jobId}); ` +
        "withdrawable after settlement: the job's verdict after step 8, then its 1 h dispute window",
    );

    await until("second report", async () => (await escrow.jobOf(jobId)).pendingStep === 8n, 60_000);
    await p.decide(jobId, true);
    const accepted = await escrow.queryFilter(escrow.filters.CheckpointAccepted(jobId, me));
    expect(accepted.map((e) => (e as unknown as { args: { amount: bigint } }).args.amount)).to.deep.equal([
      3600n,
      3600n,
    ]);
    const acceptedAt = BigInt((await accepted[1].getBlock()).timestamp);
    expect(await escrow.earningsOf(jobId, me)).to.equal(7_200n);
    expect(await line("checkpoint at step 8 accepted")).to.equal(
      `checkpoint at step 8 accepted: credited 0.003600 USDC (total 0.007200 USDC on job ${jobId}); ` +
        `withdrawable after settlement, about ${formatTime(acceptedAt + WINDOW + 1n)} ` +
        "(the verdict, then its 1 h dispute window)",
    );

    // The verdict, signed 2 of 3: the window's end is the chain's (verdict time + window), settleable a second later.
    await submitVerdict(p, jobId);
    const from = (await escrow.verdictOf(jobId)).submittedAt + WINDOW + 1n;
    expect(await line(`job ${jobId}'s verdict is in`)).to.equal(
      `job ${jobId}'s verdict is in: your 0.007200 USDC on it is withdrawable from ${formatTime(from)}, once the job ` +
        `is settled (the finalizer keeper settles it; anyone may: gpuchain settle ${jobId}); then run: ${WITHDRAW}`,
    );

    const chain = p.ethers.provider;
    await chain.send("evm_setNextBlockTimestamp", [Number(from)]);
    await (await escrow.connect(p.owner).settle(jobId)).wait();
    expect(await line(`job ${jobId} settled`)).to.equal(
      `job ${jobId} settled: your 0.007200 USDC on it is withdrawable now: ${WITHDRAW}`,
    );
    // Said once each: the cursor moved past what it said.
    await new Promise((r) => setTimeout(r, 500));
    const credited = agent.records.filter((r) => /^checkpoint at step \d+ accepted: credited/.test(r.msg));
    expect(credited.map((r) => r.step)).to.deep.equal([4, 8]);
    expect(credited.map((r) => r.total)).to.deep.equal(["0.003600 USDC", "0.007200 USDC"]);
  });
});

async function submitVerdict(p: LocalProtocol, jobId: bigint): Promise<void> {
  const [, , , v1, v2] = await p.ethers.getSigners();
  const { chainId } = await p.ethers.provider.getNetwork();
  const domain = escrowDomain(chainId, p.deployment.escrow);
  const job = await p.escrow.jobOf(jobId);
  const verdict = { jobId, modelHash: job.acceptedHash, metric: 9_000n, passed: true };
  const digest = verdictDigest(domain, verdict);
  const sigs = packSafeSignatures([
    { signer: v1.address, signature: await signAsSafeOwner(v1, chainId, p.deployment.verifierSafe, digest) },
    { signer: v2.address, signature: await signAsSafeOwner(v2, chainId, p.deployment.verifierSafe, digest) },
  ]);
  await (await p.escrow.submitVerdict(jobId, job.acceptedHash, 9_000n, true, sigs)).wait();
}
