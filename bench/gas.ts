/**
 * Gas of a full job lifecycle on Hardhat's simulated chain, with the real Safe checking 2-of-3 signatures:
 * lock (approve + create), assign, 10 accepted checkpoints, 1 failover (unassign + reassign), verdict, settle,
 * 2 claims and 2 withdrawals; then the stake calls: deposit, a slashing fault refusal, an expiry, unbond and
 * withdraw of stake.
 */
import { network } from "hardhat";
import type { ContractTransactionResponse } from "ethers";
import GPUChainLocal from "../ignition/modules/GPUChainLocal.ts";
import {
  checkpointDecisionDigest,
  escrowDomain,
  faultRefusalDigest,
  packSafeSignatures,
  signAsSafeOwner,
  verdictDigest,
} from "../sdk/verifierSignatures.ts";

export async function benchGas(): Promise<Record<string, number>> {
  const { ethers, ignition, networkHelpers } = await network.create();
  const [owner, coordinator, , v1, v2, , , client, p1, p2] = await ethers.getSigners();
  const d = await ignition.deploy(GPUChainLocal);
  const escrow = await ethers.getContractAt("JobEscrow", await d.escrow.getAddress());
  const usdc = await ethers.getContractAt("TestUSDC", await d.usdc.getAddress());
  const registry = await ethers.getContractAt("ProviderRegistry", await d.registry.getAddress());
  const safe = await d.verifierSafe.getAddress();
  const { chainId } = await ethers.provider.getNetwork();
  const domain = escrowDomain(chainId, await escrow.getAddress());
  const sign = async (digest: string) =>
    packSafeSignatures(
      await Promise.all(
        [v1, v2].map(async (v) => ({ signer: v.address, signature: await signAsSafeOwner(v, chainId, safe, digest) })),
      ),
    );

  let total = 0n;
  const gasOf = async (tx: Promise<ContractTransactionResponse>) => {
    const used = (await (await tx).wait())!.gasUsed;
    total += used;
    return used;
  };
  const template = ethers.id("bench-template");
  await escrow.connect(owner).setTemplateApproval(template, true);
  await usdc.mint(client.address, 10_000_000n);
  await registry.connect(p1).register("p1", 1000, 0, "cpu", 1024);
  await registry.connect(p2).register("p2", 1000, 0, "cpu", 1024);
  const stake = 5n * (await registry.minStake());
  const depositGas: bigint[] = [];
  for (const p of [p1, p2]) {
    await usdc.mint(p.address, stake);
    await usdc.connect(p).approve(await registry.getAddress(), stake);
    depositGas.push((await (await registry.connect(p).depositStake(stake)).wait())!.gasUsed);
  }

  await gasOf(usdc.connect(client).approve(await escrow.getAddress(), 100_000n));
  await gasOf(
    escrow.connect(client).createJob({
      templateId: template,
      totalSteps: 100,
      checkpointInterval: 10,
      maxPricePerStep: 1000,
      budget: 100_000,
      disputeWindow: 60,
    }),
  );
  const acceptGas: bigint[] = [];
  const runCheckpoints = async (provider: typeof p1, epoch: bigint, from: number, to: number) => {
    for (let step = from; step <= to; step += 10) {
      const hash = ethers.id(`ckpt-${step}`);
      await gasOf(escrow.connect(provider).reportCheckpoint(1, epoch, step, hash));
      const digest = checkpointDecisionDigest(domain, { jobId: 1n, epoch, step, checkpointHash: hash, accept: true });
      acceptGas.push(await gasOf(escrow.acceptCheckpoint(1, epoch, step, hash, await sign(digest))));
    }
  };
  const assignGas = await gasOf(escrow.connect(coordinator).assign(1, p1.address));
  await runCheckpoints(p1, 1n, 10, 50);
  await gasOf(escrow.connect(coordinator).unassign(1)); // failover
  await gasOf(escrow.connect(coordinator).assign(1, p2.address));
  await runCheckpoints(p2, 3n, 60, 100);
  const modelHash = ethers.id("ckpt-100");
  const verdict = verdictDigest(domain, { jobId: 1n, modelHash, metric: 9000n, passed: true });
  const verdictGas = await gasOf(escrow.submitVerdict(1, modelHash, 9000, true, await sign(verdict)));
  await networkHelpers.time.increase(61);
  await gasOf(escrow.settle(1));
  for (const p of [p1, p2]) {
    await gasOf(escrow.claimEarnings(1, p.address));
    await gasOf(escrow.connect(p).withdraw());
  }
  /** A fabricated checkpoint refused with a 2-of-3 signed fault (slash), a stalled job expired, stake unbonded. */
  const benchStakeCalls = async () => {
    await usdc.connect(client).approve(await escrow.getAddress(), 20_000n);
    await escrow.connect(client).createJob({
      templateId: template,
      totalSteps: 20,
      checkpointInterval: 10,
      maxPricePerStep: 1000,
      budget: 20_000,
      disputeWindow: 60,
    });
    await escrow.connect(coordinator).assign(2, p1.address);
    const bad = ethers.id("fabricated");
    await escrow.connect(p1).reportCheckpoint(2, 1n, 10, bad);
    const fault = {
      step: 3,
      inputHash: ethers.id("in"),
      committedHash: ethers.id("out"),
      replayedHash: ethers.id("re"),
      finder: v1.address,
    };
    const faultDigest = faultRefusalDigest(domain, { jobId: 2n, epoch: 1n, step: 10, checkpointHash: bad, fault });
    const slashGas = (await (await escrow.refuseWithFault(2, 1n, 10, bad, fault, await sign(faultDigest))).wait())!
      .gasUsed;
    await networkHelpers.time.increase(7 * 86_400 + 1);
    const expireGas = (await (await escrow.expire(2)).wait())!.gasUsed;
    const unbondGas = (await (await registry.connect(p2).requestUnbond(stake)).wait())!.gasUsed;
    await networkHelpers.time.increase(Number(await registry.unbondingDelay()));
    const withdrawGas = (await (await registry.connect(p2).withdrawStake()).wait())!.gasUsed;
    return {
      gas_refuse_with_fault: Number(slashGas),
      gas_expire: Number(expireGas),
      gas_request_unbond: Number(unbondGas),
      gas_withdraw_stake: Number(withdrawGas),
    };
  };
  const stakeGas = await benchStakeCalls();
  return {
    gas_assign_with_stake_lock: Number(assignGas),
    gas_deposit_stake: Number(depositGas[0]),
    ...stakeGas,
    gas_job_total: Number(total),
    gas_per_verdict: Number(verdictGas),
    gas_per_accepted_checkpoint: Number(acceptGas.reduce((a, b) => a + b, 0n) / BigInt(acceptGas.length)),
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  for (const [k, v] of Object.entries(await benchGas())) console.log(`${k}: ${v}`);
}
