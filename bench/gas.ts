/**
 * Gas of a full job lifecycle on Hardhat's simulated chain, deployed by the protocol tests' fixture (the same
 * Ignition module as the local chain, the real Safe checking 2-of-3 signatures): lock (createJobWithPermit: the
 * client's EIP-2612 permit in the create transaction, as `gpuchain job create` locks), assign,
 * 10 accepted checkpoints, 1 failover (unassign + reassign), verdict, settle, 2 claims and 2 withdrawals; then the
 * stake calls: deposit, a slashing fault refusal, an expiry, unbond and withdraw of stake.
 *
 * Besides the totals it prints where the job's gas goes: each call's gas (`gas_call_*`, the first and a later
 * report and acceptance apart, since the first writes slots from zero), and the job's total split into what every
 * transaction pays before running (21 000 + calldata) and what the contracts execute. The same job locked with
 * approve + createJob (a token without permits) is `gas_job_total_approve_create`.
 */
import type { ContractTransactionResponse } from "ethers";
import {
  DEFAULT_REQUEST,
  deployProtocol,
  depositStake,
  ethers,
  faultAt,
  networkHelpers,
  signDecision,
  signFault,
  signVerdict,
  type Protocol,
} from "../test/helpers/fixture.ts";
import { signPermit } from "../sdk/rules/permit.ts";

const JOB = { ...DEFAULT_REQUEST, disputeWindow: 60n };

/** Adds up gas by label; `intrinsic` is 21 000 + the calldata cost (EIP-2028) of each transaction. */
function ledger() {
  const byCall = new Map<string, bigint[]>();
  let total = 0n;
  let intrinsic = 0n;
  const gasOf = async (label: string, tx: Promise<ContractTransactionResponse>) => {
    const sent = await tx;
    const used = (await sent.wait())!.gasUsed;
    const calldata = ethers.getBytes(sent.data).reduce((sum, b) => sum + (b === 0 ? 4n : 16n), 0n);
    total += used;
    intrinsic += 21_000n + calldata;
    byCall.set(label, [...(byCall.get(label) ?? []), used]);
    return used;
  };
  return { gasOf, byCall, totals: () => ({ total, intrinsic }) };
}

/** The measured job: provider1 trains to step 50, fails over to provider2, which finishes; verdict, settle, pay. */
async function wholeJob(p: Protocol, gasOf: ReturnType<typeof ledger>["gasOf"]) {
  const { escrow, usdc, coordinator, provider1, provider2 } = p;
  // A client without a standing approval, so the lock pays for its allowance like a first job does.
  const client = p.stranger;
  await usdc.mint(client.address, JOB.budget);
  const permit = await permitOf(p, client, JOB.budget);
  const { deadline, v, r, s } = permit;
  await gasOf("create_job_with_permit", escrow.connect(client).createJobWithPermit(JOB, deadline, v, r, s));
  const jobId = await escrow.jobCount();
  const checkpoints = async (provider: typeof provider1, epoch: bigint, from: number, to: number) => {
    for (let step = from; step <= to; step += 10) {
      const hash = ethers.id(`ckpt-${step}`);
      const later = step === from ? "first" : "later";
      await gasOf(`report_${later}`, escrow.connect(provider).reportCheckpoint(jobId, epoch, step, hash));
      const sigs = await signDecision(p, jobId, epoch, step, hash, true);
      await gasOf(`accept_${later}`, escrow.acceptCheckpoint(jobId, epoch, step, hash, sigs));
    }
  };
  await gasOf("assign", escrow.connect(coordinator).assign(jobId, provider1.address));
  await checkpoints(provider1, 1n, 10, 50);
  await gasOf("unassign", escrow.connect(coordinator).unassign(jobId)); // failover
  await gasOf("assign", escrow.connect(coordinator).assign(jobId, provider2.address));
  await checkpoints(provider2, 3n, 60, 100);
  const modelHash = ethers.id("ckpt-100");
  const verdictSigs = await signVerdict(p, jobId, modelHash, 9000n, true);
  await gasOf("verdict", escrow.submitVerdict(jobId, modelHash, 9000, true, verdictSigs));
  await networkHelpers.time.increase(61);
  await gasOf("settle", escrow.settle(jobId));
  for (const provider of [provider1, provider2]) {
    await gasOf("claim_earnings", escrow.claimEarnings(jobId, provider.address));
    await gasOf("withdraw", escrow.connect(provider).withdraw());
  }
}

/** `owner`'s permit for the escrow to pull `value`, valid for an hour of chain time. */
async function permitOf(p: Protocol, owner: Protocol["stranger"], value: bigint) {
  const deadline = BigInt(await networkHelpers.time.latest()) + 3600n;
  return signPermit(owner, p.usdc, { spender: p.escrowAddress, value, deadline, chainId: p.chainId });
}

/**
 * The lock without a permit, by a fresh client (no standing allowance, as in the measured job): its two calls;
 * then the measured job's client locking a second job with a permit (its permit nonce no longer zero).
 */
async function otherLocks(p: Protocol, gasOf: ReturnType<typeof ledger>["gasOf"]) {
  const client = p.provider4;
  await p.usdc.mint(client.address, JOB.budget);
  await gasOf("approve", p.usdc.connect(client).approve(p.escrowAddress, JOB.budget));
  await gasOf("create_job", p.escrow.connect(client).createJob(JOB));
  await p.usdc.mint(p.stranger.address, JOB.budget);
  const { deadline, v, r, s } = await permitOf(p, p.stranger, JOB.budget);
  const again = p.escrow.connect(p.stranger).createJobWithPermit(JOB, deadline, v, r, s);
  await gasOf("create_job_with_permit_later", again);
}

/** A fabricated checkpoint refused with a 2-of-3 signed fault (slash), a stalled job expired, stake unbonded. */
async function stakeCalls(p: Protocol) {
  const { escrow, registry, coordinator, provider1, provider2, provider4, client } = p;
  const gas = async (tx: Promise<ContractTransactionResponse>) => Number((await (await tx).wait())!.gasUsed);
  await registry.connect(provider4).register("provider4", 1_000n, 0, "cpu", 1024);
  const { usdc } = p;
  const stake = await registry.minStake();
  await usdc.mint(provider4.address, stake);
  await usdc.connect(provider4).approve(await registry.getAddress(), stake);
  const depositGas = await gas(registry.connect(provider4).depositStake(stake));
  await escrow.connect(client).createJob({ ...JOB, totalSteps: 20, budget: 20_000n });
  const jobId = await escrow.jobCount();
  await escrow.connect(coordinator).assign(jobId, provider1.address);
  const bad = ethers.id("fabricated");
  await escrow.connect(provider1).reportCheckpoint(jobId, 1n, 10, bad);
  const fault = faultAt(p, 3);
  const faultSigs = await signFault(p, jobId, 1n, 10, bad, fault);
  const slashGas = await gas(escrow.refuseWithFault(jobId, 1n, 10, bad, fault, faultSigs));
  await networkHelpers.time.increase(7 * 86_400 + 1);
  const expireGas = await gas(escrow.expire(jobId));
  const unbond = await registry.minStake();
  const unbondGas = await gas(registry.connect(provider2).requestUnbond(unbond));
  await networkHelpers.time.increase(Number(await registry.unbondingDelay()));
  const withdrawGas = await gas(registry.connect(provider2).withdrawStake());
  await depositStake(p, provider2); // leaves the fixture's stake as it was
  return {
    gas_deposit_stake: depositGas,
    gas_refuse_with_fault: slashGas,
    gas_expire: expireGas,
    gas_request_unbond: unbondGas,
    gas_withdraw_stake: withdrawGas,
  };
}

export async function benchGas(): Promise<Record<string, number>> {
  const p = await networkHelpers.loadFixture(deployProtocol);
  const { gasOf, byCall, totals } = ledger();
  await wholeJob(p, gasOf);
  const { total, intrinsic } = totals();
  const perCall: Record<string, number> = {};
  for (const [label, used] of byCall) perCall[`gas_call_${label}`] = Number(used[used.length - 1]);
  const accepts = [...byCall.get("accept_first")!, ...byCall.get("accept_later")!];
  const lock = ledger();
  await otherLocks(p, lock.gasOf);
  const [approve, create] = [lock.byCall.get("approve")![0], lock.byCall.get("create_job")![0]];
  const approveCreate = total - byCall.get("create_job_with_permit")![0] + approve + create;
  for (const [label, used] of lock.byCall) perCall[`gas_call_${label}`] = Number(used[0]);
  return {
    gas_assign_with_stake_lock: Number(byCall.get("assign")![0]),
    ...(await stakeCalls(p)),
    ...perCall,
    gas_job_total: Number(total),
    gas_job_total_approve_create: Number(approveCreate),
    gas_job_intrinsic: Number(intrinsic),
    gas_job_execution: Number(total - intrinsic),
    gas_job_transactions: [...byCall.values()].reduce((n, used) => n + used.length, 0),
    gas_per_verdict: Number(byCall.get("verdict")![0]),
    gas_per_accepted_checkpoint: Number(accepts.reduce((a, b) => a + b, 0n) / BigInt(accepts.length)),
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  for (const [k, v] of Object.entries(await benchGas())) console.log(`${k}: ${v}`);
}
