/**
 * Gas does not grow with the number of providers registered or jobs created: no entry point loops over
 * either. The same lifecycle is measured on a quiet chain (the fixture's 3 providers, the measured job is the
 * only one) and on a busy one (50 more providers, 49 other jobs created, assigned and partly paid first).
 *
 * Why the comparison is exact on execution gas and "tiny" on total gas:
 * - Storage warmness (EIP-2929) is per transaction, so every measured call starts equally cold in both runs.
 * - What does differ between runs is a shared slot going zero→non-zero (20 000 gas) versus non-zero→non-zero
 *   (2 900), or to zero (with a refund). The background jobs are built so that totalLocked, totalBonds,
 *   totalWithdrawable and the measured accounts' balances cross zero at the same moments in both runs
 *   (background jobs lock budget but release nothing, and the measured job pays two providers so that the
 *   first claim does not empty totalLocked).
 * - Calldata differs: the measured job's id is 1 versus 50 (one non-zero byte either way) and the verifiers'
 *   signatures are over different digests, so their bytes differ; a zero calldata byte costs 4 gas and a
 *   non-zero one 16 (EIP-2028). Subtracting the intrinsic calldata cost leaves execution gas, which must be equal.
 */
import { expect } from "chai";
import type { ContractTransactionResponse } from "ethers";
import * as fx from "../helpers/fixture.ts";

const EXTRA_PROVIDERS = 50;
const EXTRA_JOBS = 49;
const h = (step: number, tag = "") => fx.ethers.id(`gas:${step}${tag}`);

interface Gas {
  total: bigint;
  execution: bigint;
}

async function measure(tx: Promise<ContractTransactionResponse>): Promise<Gas> {
  const sent = await tx;
  const receipt = (await sent.wait())!;
  const data = fx.ethers.getBytes(sent.data);
  const calldata = data.reduce((sum, byte) => sum + (byte === 0 ? 4n : 16n), 0n);
  return { total: receipt.gasUsed, execution: receipt.gasUsed - 21_000n - calldata };
}

/** 50 more providers and 49 more jobs, each assigned and with one accepted checkpoint (nothing released). */
async function crowd(p: fx.Protocol) {
  const wallets = [];
  for (let i = 0; i < EXTRA_PROVIDERS; i++) {
    const w = new fx.ethers.Wallet(fx.ethers.id(`gas-provider-${i}`), fx.ethers.provider);
    await fx.networkHelpers.setBalance(w.address, 10n ** 18n);
    await p.registry.connect(w).register(`extra-${i}`, 900n, 1, "GPU", 8_192);
    await fx.depositStake(p, w);
    wallets.push(w);
  }
  for (let i = 0; i < EXTRA_JOBS; i++) {
    const jobId = await fx.createJob(p, { totalSteps: 30 }, p.client2);
    await p.escrow.connect(p.coordinator).assign(jobId, wallets[i].address);
    await p.escrow.connect(wallets[i]).reportCheckpoint(jobId, 1n, 10, h(10, `bg${i}`));
    await p.escrow.acceptCheckpoint(
      jobId,
      1n,
      10,
      h(10, `bg${i}`),
      await fx.signDecision(p, jobId, 1n, 10, h(10, `bg${i}`), true),
    );
  }
}

/** One job through every measured entry point: two providers (a refusal in between), verdict, settle, pay. */
async function lifecycle(p: fx.Protocol): Promise<Record<string, Gas>> {
  const { escrow } = p;
  const g: Record<string, Gas> = {};
  const jobId = await fx.createJob(p, { totalSteps: 30 });
  g.assign = await measure(escrow.connect(p.coordinator).assign(jobId, p.provider1.address));
  g.heartbeat = await measure(escrow.connect(p.provider1).heartbeat(jobId, 1n));
  g.reportCheckpoint = await measure(escrow.connect(p.provider1).reportCheckpoint(jobId, 1n, 10, h(10)));
  g.acceptCheckpoint = await measure(
    escrow.acceptCheckpoint(jobId, 1n, 10, h(10), await fx.signDecision(p, jobId, 1n, 10, h(10), true)),
  );
  await escrow.connect(p.provider1).reportCheckpoint(jobId, 1n, 20, h(20, "bad"));
  g.refuseCheckpoint = await measure(
    escrow.refuseCheckpoint(jobId, 1n, 20, h(20, "bad"), await fx.signDecision(p, jobId, 1n, 20, h(20, "bad"), false)),
  );
  await escrow.connect(p.coordinator).assign(jobId, p.provider2.address); // epoch 3
  for (const step of [20, 30]) {
    await escrow.connect(p.provider2).reportCheckpoint(jobId, 3n, step, h(step));
    await escrow.acceptCheckpoint(jobId, 3n, step, h(step), await fx.signDecision(p, jobId, 3n, step, h(step), true));
  }
  g.submitVerdict = await measure(
    escrow.submitVerdict(jobId, h(30), fx.METRIC, true, await fx.signVerdict(p, jobId, h(30), fx.METRIC, true)),
  );
  await fx.networkHelpers.time.increase(3_601);
  g.settle = await measure(escrow.settle(jobId));
  g.claimEarnings = await measure(escrow.claimEarnings(jobId, p.provider1.address));
  g.withdraw = await measure(escrow.connect(p.provider1).withdraw());
  expect(await escrow.owed(p.provider1.address)).to.equal(0n);
  expect(await escrow.earningsOf(jobId, p.provider2.address)).to.equal(20n * fx.PRICE.provider2);
  await stakeCalls(p, g);
  return g;
}

/** The stake entry points: a slashing fault refusal, an expiry, deposit, unbond and withdraw of stake. */
async function stakeCalls(p: fx.Protocol, g: Record<string, Gas>) {
  const { escrow, registry } = p;
  const faulty = await fx.createJob(p, { totalSteps: 30, maxPricePerStep: 1_100n, budget: 33_000n });
  await escrow.connect(p.coordinator).assign(faulty, p.provider3.address);
  await escrow.connect(p.provider3).reportCheckpoint(faulty, 1n, 10, h(10, "fabricated"));
  const fault = fx.faultAt(p, 4);
  const sigs = await fx.signFault(p, faulty, 1n, 10, h(10, "fabricated"), fault);
  g.refuseWithFault = await measure(escrow.refuseWithFault(faulty, 1n, 10, h(10, "fabricated"), fault, sigs));
  const stalled = await fx.createJob(p, { totalSteps: 30 });
  await fx.networkHelpers.time.increase(7 * 86_400 + 1);
  g.expire = await measure(escrow.connect(p.stranger).expire(stalled));
  await p.usdc.mint(p.provider3.address, fx.MIN_STAKE);
  await p.usdc.connect(p.provider3).approve(await registry.getAddress(), fx.MIN_STAKE);
  g.depositStake = await measure(registry.connect(p.provider3).depositStake(fx.MIN_STAKE));
  g.requestUnbond = await measure(registry.connect(p.provider3).requestUnbond(fx.MIN_STAKE));
  await fx.networkHelpers.time.increase(fx.UNBONDING);
  g.withdrawStake = await measure(registry.connect(p.provider3).withdrawStake());
}

describe("gas: independent of the number of providers and jobs", function () {
  it(`assign/heartbeat/report/accept/refuse/refuseWithFault/verdict/settle/expire/claim/withdraw and stake calls cost the same with 1 job and 3 providers as with ${EXTRA_JOBS + 1} jobs and ${EXTRA_PROVIDERS + 3} providers`, async function () {
    const quiet = await lifecycle(await fx.networkHelpers.loadFixture(fx.deployProtocol));
    const p = await fx.networkHelpers.loadFixture(fx.deployProtocol);
    await crowd(p);
    expect(await p.escrow.jobCount()).to.equal(BigInt(EXTRA_JOBS));
    const busy = await lifecycle(p);

    const rows = Object.keys(quiet).map((fn) => ({
      fn,
      quiet: Number(quiet[fn].total),
      busy: Number(busy[fn].total),
      executionDelta: Number(busy[fn].execution - quiet[fn].execution),
    }));
    if (process.env.GAS_VERBOSE) console.table(rows);
    for (const r of rows) {
      expect(r.executionDelta, `${r.fn}: execution gas differs`).to.equal(0);
      // Total gas may differ only by calldata bytes of the signatures (a few dozen gas).
      expect(Math.abs(r.busy - r.quiet), `${r.fn}: ${r.quiet} vs ${r.busy}`).to.be.at.most(400);
    }
  });
});
