/**
 * What an honest crash costs a provider, on Hardhat's simulated chain deployed by the protocol tests' fixture (the
 * same Ignition module as the local chain). A provider with no accepted checkpoint is on probation: a hold it ends
 * without one by its own failure forfeits its stake lock to the job's client (JobEscrow `unassign` → `_endHold`);
 * what is not its failure never does (test/protocol/probation.ts holds the rule's every edge). Each case starts from
 * the fixture's snapshot, provider1 (price 900, STAKE deposited) holding a DEFAULT_REQUEST job:
 * - honest_crash_loss_usdc_newcomer: its deposited stake before − after, when it is assigned, never reports, and a
 *   stranger unassigns it once the lease lapsed (leaseExpiresAt + 1); honest_crash_client_compensation_usdc_newcomer
 *   is what the client's withdrawable balance (`owed`) gained by it — the same lock;
 * - honest_crash_loss_usdc_proven: the same crash after its first accepted checkpoint (fx.proveProvider): 0;
 * - coordinator_unassign_loss_usdc_newcomer: the coordinator assigns and at once unassigns it (inside the progress
 *   timeout: the coordinator's choice, which is not trusted with stake): 0;
 * - undecided_report_loss_usdc_newcomer: it reports step 10, the verifiers stay silent past DECISION_TIMEOUT, then
 *   its lease lapses and a stranger unassigns it (the report lapsed: the verifiers' silence, not its failure): 0;
 * - probation_lock_usdc_default_job: the lock provider1's assignment to the default request takes (lockOf).
 * USDC has 6 decimals: every figure is the on-chain amount ÷ 1e6. Run alone: `node bench/probation.ts`.
 */
import {
  ckpt,
  DECISION_TIMEOUT,
  deployProtocol,
  networkHelpers,
  proveProvider,
  startJob,
  type Protocol,
} from "../test/helpers/fixture.ts";

const { time } = networkHelpers;
const usdc = (units: bigint) => Number(units) / 1e6;

/** provider1's stake and the client's balance owed, before and after `act`: what moved between them. */
async function moved(p: Protocol, act: () => Promise<unknown>) {
  const deposited = async () => (await p.registry.stakeOf(p.provider1.address)).deposited;
  const [stakeBefore, owedBefore] = [await deposited(), await p.escrow.owed(p.client.address)];
  await act();
  const [stakeAfter, owedAfter] = [await deposited(), await p.escrow.owed(p.client.address)];
  return { loss: usdc(stakeBefore - stakeAfter), compensation: usdc(owedAfter - owedBefore) };
}

/** A stranger unassigns `jobId` one second after its lease lapsed (anyone may; only the coordinator may before). */
async function lapseLease(p: Protocol, jobId: bigint, notBefore = 0n) {
  const { leaseExpiresAt } = await p.escrow.jobOf(jobId);
  await time.setNextBlockTimestamp((leaseExpiresAt > notBefore ? leaseExpiresAt : notBefore) + 1n);
  await p.escrow.connect(p.stranger).unassign(jobId);
}

/** (a) and (b): assigned, then crashed without a report; the lock the assignment took too. */
async function crash(prove: boolean) {
  const p = await networkHelpers.loadFixture(deployProtocol);
  if (prove) await proveProvider(p);
  let lock = 0n;
  const m = await moved(p, async () => {
    const jobId = await startJob(p);
    lock = await p.registry.lockOf(p.provider1.address, jobId);
    await lapseLease(p, jobId);
  });
  return { ...m, lock: usdc(lock) };
}

/** (c): the coordinator's own choice inside the progress timeout must not harvest a newcomer's lock. */
async function coordinatorUnassign() {
  const p = await networkHelpers.loadFixture(deployProtocol);
  return moved(p, async () => p.escrow.connect(p.coordinator).unassign(await startJob(p)));
}

/** (d): a report the verifiers never decide, then the lease lapses: the report lapses first, releasing the lock. */
async function undecidedReport() {
  const p = await networkHelpers.loadFixture(deployProtocol);
  return moved(p, async () => {
    const jobId = await startJob(p);
    await p.escrow.connect(p.provider1).reportCheckpoint(jobId, 1n, 10, ckpt(jobId, 10));
    const { reportedAt } = await p.escrow.jobOf(jobId);
    await lapseLease(p, jobId, reportedAt + DECISION_TIMEOUT);
  });
}

export async function benchProbation(): Promise<Record<string, number>> {
  const newcomer = await crash(false);
  const proven = await crash(true);
  return {
    honest_crash_loss_usdc_newcomer: newcomer.loss,
    honest_crash_client_compensation_usdc_newcomer: newcomer.compensation,
    honest_crash_loss_usdc_proven: proven.loss,
    coordinator_unassign_loss_usdc_newcomer: (await coordinatorUnassign()).loss,
    undecided_report_loss_usdc_newcomer: (await undecidedReport()).loss,
    probation_lock_usdc_default_job: newcomer.lock,
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  for (const [k, v] of Object.entries(await benchProbation())) console.log(`${k}: ${v}`);
}
