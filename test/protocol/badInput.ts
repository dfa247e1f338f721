/**
 * Bad input, table-driven. Each case names the call, the custom error (with its arguments) it must revert with,
 * and proves that nothing moved: token balances of the escrow, clients, providers, fee recipient and stranger,
 * `reserves()` and everyone's `owed()` are identical before and after.
 *
 * All cases run against one "world" fixture holding a job in every interesting state.
 */
import { expect } from "chai";
import type { ContractTransactionResponse } from "ethers";
import * as fx from "../helpers/fixture.ts";

const { time } = fx.networkHelpers;
const DAY = 86_400n;

async function badInputWorld() {
  const p = await fx.deployProtocol();
  const { escrow } = p;

  const settled = (await fx.runToVerdict(p, { overrides: { totalSteps: 20, disputeWindow: 60n } })).jobId;
  await time.increase(61);
  await escrow.settle(settled);

  const upheld = (await fx.runToVerdict(p, { overrides: { totalSteps: 10 } })).jobId;
  await escrow.connect(p.client).dispute(upheld);
  await escrow.connect(p.arbiter).resolveDispute(upheld, true);

  const verdict = await fx.runToVerdict(p, { overrides: { totalSteps: 20 } });
  const disputed = (await fx.runToVerdict(p, { overrides: { totalSteps: 20 } })).jobId;
  await escrow.connect(p.client).dispute(disputed);

  const cancelled = await fx.createJob(p);
  await escrow.connect(p.client).cancel(cancelled);

  const fenced = await fx.startJob(p, {}, p.provider2);
  const bad = fx.ckpt(fenced, 10, "bad");
  await escrow.connect(p.provider2).reportCheckpoint(fenced, 1n, 10, bad);
  await escrow.refuseCheckpoint(fenced, 1n, 10, bad, await fx.signDecision(p, fenced, 1n, 10, bad, false));

  const short = await fx.createJob(p, { budget: 50_000n });
  const complete = await fx.createJob(p, { totalSteps: 20 });
  const completeHash = await fx.trainToEnd(p, complete);
  const progress = await fx.startJob(p);
  await fx.reportAndAccept(p, progress, p.provider1, 10);
  const open = await fx.createJob(p);
  const running = await fx.startJob(p);
  const pending = await fx.startJob(p);
  const pendingHash = fx.ckpt(pending, 10);
  await escrow.connect(p.provider1).reportCheckpoint(pending, 1n, 10, pendingHash);
  const lease = (await escrow.jobOf(running)).leaseExpiresAt;
  // A reporter unassigned with its checkpoint still decidable; and one whose job was handed to someone else.
  const orphan = await fx.startJob(p);
  await escrow.connect(p.provider1).reportCheckpoint(orphan, 1n, 10, fx.ckpt(orphan, 10));
  await escrow.connect(p.coordinator).unassign(orphan);
  const handedOver = await fx.startJob(p, { maxPricePerStep: 1_100n, budget: 110_000n });
  await escrow.connect(p.provider1).reportCheckpoint(handedOver, 1n, 10, fx.ckpt(handedOver, 10));
  await escrow.connect(p.coordinator).unassign(handedOver);
  await escrow.connect(p.coordinator).assign(handedOver, p.provider3.address); // epoch 3
  // provider4 registers without stake; provider2 (its refused hold on probation forfeited one lock) asks all of
  // its free stake back.
  await p.registry.connect(p.provider4).register("unstaked", 900n, 1, "GPU", 8_192);
  const p2 = await p.registry.stakeOf(p.provider2.address);
  await p.registry.connect(p.provider2).requestUnbond(p2.deposited - p2.locked - p2.unbonding);
  const unbondReadyAt = (await p.registry.stakeOf(p.provider2.address)).unbondingReadyAt;
  const { reportedAt } = await escrow.jobOf(pending);
  const stallSince = (await escrow.jobOf(open)).stallSince;
  const fault = fx.faultAt(p, 7);
  const digests = {
    accept: await escrow.checkpointDecisionDigest(pending, 1n, 10, pendingHash, true),
    refuse: await escrow.checkpointDecisionDigest(pending, 1n, 10, pendingHash, false),
    verdict: await escrow.verdictDigest(complete, completeHash, fx.METRIC, true),
  };

  const jobs = {
    settled,
    upheld,
    verdict: verdict.jobId,
    disputed,
    cancelled,
    fenced,
    short,
    complete,
    progress,
    open,
    running,
    pending,
    orphan,
    handedOver,
  };
  return {
    ...p,
    token: p.usdc,
    jobs,
    completeHash,
    pendingHash,
    lease,
    digests,
    unbondReadyAt,
    reportedAt,
    stallSince,
    fault,
  };
}
type World = Awaited<ReturnType<typeof badInputWorld>>;

/**
 * Sends acceptCheckpoint (accept) or refuseCheckpoint of (job, epoch, step, hash) carrying two verifiers' signatures
 * over that decision — or over `signedAs` instead, to test mismatched signatures — from `signers`.
 */
async function signedDecision(
  w: World,
  accept: boolean,
  jobId: bigint,
  epoch: bigint,
  step: number,
  hash: string,
  o: { signedAs?: boolean; signers?: Parameters<typeof fx.signDecision>[6] } = {},
) {
  const signatures = await fx.signDecision(w, jobId, epoch, step, hash, o.signedAs ?? accept, o.signers);
  return accept
    ? w.escrow.acceptCheckpoint(jobId, epoch, step, hash, signatures)
    : w.escrow.refuseCheckpoint(jobId, epoch, step, hash, signatures);
}

/** The escrow of the same protocol, but on a token whose transfers return false. */
async function falseTokenWorld() {
  const p = await fx.deployProtocol();
  const token = await fx.ethers.deployContract("FalseReturningToken");
  const roles = fx.escrowRoles(p);
  const registry = await fx.ethers.deployContract("ProviderRegistry", [await token.getAddress(), 1n, 7_200n]);
  const escrow = await fx.ethers.deployContract("JobEscrow", [
    await token.getAddress(),
    await registry.getAddress(),
    roles,
    fx.LEASE,
    fx.BOND,
  ]);
  await escrow.connect(p.owner).setTemplateApproval(fx.TEMPLATE, true);
  await token.mint(p.client.address, 1_000_000n);
  await token.connect(p.client).approve(await escrow.getAddress(), 1_000_000n);
  return { ...p, escrow, escrowAddress: await escrow.getAddress(), token };
}

interface Case {
  name: string;
  world?: "false-token";
  /** Runs before the "before" state is read (e.g. to let time pass or to spend an allowance). */
  prepare?: (w: World) => Promise<unknown>;
  /** The instant the bad call is evaluated at (default: one second after the latest block). */
  at?: (w: World) => bigint;
  act: (w: World) => Promise<ContractTransactionResponse>;
  error: [contract: "escrow" | "registry" | "usdc", name: string];
  args?: (w: World) => unknown[] | Promise<unknown[]>;
}

const req = (o: Partial<typeof fx.DEFAULT_REQUEST>) => ({ ...fx.DEFAULT_REQUEST, ...o });
const E = (name: string): Case["error"] => ["escrow", `JobEscrow${name}`];
const R = (name: string): Case["error"] => ["registry", `ProviderRegistry${name}`];
const MAXW = 30n * DAY;
const other = fx.ethers.id("not the checkpoint");
const SETTLEABLE = fx.bits(fx.Status.Settleable, fx.Status.ArbiterTimedOut);

type JobName = keyof World["jobs"];

/**
 * Calls of one action on jobs in a status it does not accept, one row each: [the case's name after the action's,
 * the job (by name in the world, or an id), its status, what to do first]. Each reverts with
 * JobEscrowUnexpectedStatus(job, its status, `allowed`).
 */
function wrongStatus(
  action: string,
  act: (w: World, jobId: bigint) => Promise<ContractTransactionResponse>,
  allowed: bigint,
  rows: [when: string, job: JobName | bigint, status: fx.Status, prepare?: Case["prepare"]][],
): Case[] {
  return rows.map(([when, job, status, prepare]) => {
    const id = (w: World) => (typeof job === "bigint" ? job : w.jobs[job]);
    return {
      name: `${action} ${when}`,
      prepare,
      act: (w) => act(w, id(w)),
      error: E("UnexpectedStatus"),
      args: (w) => [id(w), status, allowed],
    };
  });
}

/** Calls of one action, one row each: [the case's name after the action's, the call, the error, its arguments]. */
function calls(action: string, rows: [when: string, act: Case["act"], error: Case["error"], args?: Case["args"]][]) {
  return rows.map(([when, act, error, args]): Case => ({ name: `${action} ${when}`, act, error, args }));
}

/** provider1 reports `step` on a job at epoch 1, with that step's checkpoint hash. */
const reportStep = (job: JobName, step: number) => (w: World) =>
  w.escrow.connect(w.provider1).reportCheckpoint(w.jobs[job], 1n, step, fx.ckpt(w.jobs[job], step));

/** A call made twice: the first succeeds (before the "before" state is read), the second must revert. */
const twice = (c: Omit<Case, "prepare">): Case => ({ ...c, prepare: c.act });

/** The coordinator assigns `who` to a job. */
const assignTo = (job: JobName, who: "provider1" | "provider2" | "provider3" | "stranger") => (w: World) =>
  w.escrow.connect(w.coordinator).assign(w.jobs[job], w[who].address);

/** `who` registers as a CPU provider named `name` at `price`, offering `memory` MiB. */
const registerAs = (who: "provider1" | "stranger", name: string, price: bigint, memory: number) => (w: World) =>
  w.registry.connect(w[who]).register(name, price, 0, "cpu", memory);

/** A fault refusal of the pending checkpoint (job `pending`, epoch 1, step 10), unsigned unless `signatures`. */
const refusePending = (w: World, fault: World["fault"], signatures = "0x") =>
  w.escrow.refuseWithFault(w.jobs.pending, 1n, 10, w.pendingHash, fault, signatures);

async function freeStake(w: World, provider: string): Promise<bigint> {
  const st = await w.registry.stakeOf(provider);
  return st.deposited - st.locked - st.unbonding;
}

const cases: Case[] = [
  // ---- createJob
  {
    name: "createJob with a zero budget",
    act: (w) => w.escrow.connect(w.client).createJob(req({ budget: 0n })),
    error: E("ZeroAmount"),
  },
  {
    name: "createJob with a zero maximum price per step",
    act: (w) => w.escrow.connect(w.client).createJob(req({ maxPricePerStep: 0n })),
    error: E("ZeroAmount"),
  },
  {
    name: "createJob with an unapproved template",
    act: (w) => w.escrow.connect(w.client).createJob(req({ templateId: fx.ethers.id("unapproved") })),
    error: E("TemplateNotApproved"),
    args: () => [fx.ethers.id("unapproved")],
  },
  {
    name: "createJob with the zero template id",
    act: (w) => w.escrow.connect(w.client).createJob(req({ templateId: fx.ethers.ZeroHash })),
    error: E("TemplateNotApproved"),
    args: () => [fx.ethers.ZeroHash],
  },
  {
    name: "createJob with zero total steps",
    act: (w) => w.escrow.connect(w.client).createJob(req({ totalSteps: 0 })),
    error: E("InvalidSteps"),
    args: () => [0, 10],
  },
  {
    name: "createJob with a zero checkpoint interval",
    act: (w) => w.escrow.connect(w.client).createJob(req({ checkpointInterval: 0 })),
    error: E("InvalidSteps"),
    args: () => [100, 0],
  },
  {
    name: "createJob with an interval longer than the job",
    act: (w) => w.escrow.connect(w.client).createJob(req({ totalSteps: 10, checkpointInterval: 11 })),
    error: E("InvalidSteps"),
    args: () => [10, 11],
  },
  {
    name: "createJob with a dispute window one second below the minimum",
    act: (w) => w.escrow.connect(w.client).createJob(req({ disputeWindow: 59n })),
    error: E("InvalidDisputeWindow"),
    args: () => [59n, 60n, MAXW],
  },
  {
    name: "createJob with a dispute window one second above the maximum",
    act: (w) => w.escrow.connect(w.client).createJob(req({ disputeWindow: MAXW + 1n })),
    error: E("InvalidDisputeWindow"),
    args: () => [MAXW + 1n, 60n, MAXW],
  },
  {
    name: "createJob without allowance",
    prepare: (w) => w.usdc.connect(w.client).approve(w.escrowAddress, 0n),
    act: (w) => w.escrow.connect(w.client).createJob(fx.DEFAULT_REQUEST),
    error: ["usdc", "ERC20InsufficientAllowance"],
    args: (w) => [w.escrowAddress, 0n, fx.DEFAULT_REQUEST.budget],
  },
  {
    name: "createJob with an allowance but no balance",
    prepare: (w) => w.usdc.connect(w.stranger).approve(w.escrowAddress, fx.ethers.MaxUint256),
    act: (w) => w.escrow.connect(w.stranger).createJob(fx.DEFAULT_REQUEST),
    error: ["usdc", "ERC20InsufficientBalance"],
    args: (w) => [w.stranger.address, 0n, fx.DEFAULT_REQUEST.budget],
  },
  {
    name: "createJob on a token whose transferFrom returns false",
    world: "false-token",
    act: (w) => w.escrow.connect(w.client).createJob(fx.DEFAULT_REQUEST),
    error: ["escrow", "SafeERC20FailedOperation"],
    args: (w) => [w.token.target],
  },
  // ---- cancel
  ...wrongStatus("cancel", (w, id) => w.escrow.connect(w.client).cancel(id), fx.bits(fx.Status.Open), [
    ["while Running", "running", fx.Status.Running],
    ["twice", "cancelled", fx.Status.Cancelled],
    ["a job that does not exist", 999n, fx.Status.None],
    ["after the verdict", "verdict", fx.Status.DisputeWindow],
  ]),
  {
    name: "cancel by someone other than the client",
    act: (w) => w.escrow.connect(w.stranger).cancel(w.jobs.open),
    error: E("NotClient"),
    args: (w) => [w.jobs.open, w.stranger.address, w.client.address],
  },
  // ---- assign
  {
    name: "assign by someone other than the coordinator",
    act: (w) => w.escrow.connect(w.stranger).assign(w.jobs.open, w.provider1.address),
    error: E("NotCoordinator"),
    args: (w) => [w.stranger.address, w.coordinator.address],
  },
  ...calls("assign", [
    ["an unregistered provider", assignTo("open", "stranger"), E("ProviderInactive"), (w) => [w.stranger.address]],
  ]),
  {
    name: "assign the zero address",
    act: (w) => w.escrow.connect(w.coordinator).assign(w.jobs.open, fx.ethers.ZeroAddress),
    error: E("ProviderInactive"),
    args: () => [fx.ethers.ZeroAddress],
  },
  {
    name: "assign a deactivated provider",
    prepare: (w) => w.registry.connect(w.provider2).deactivate(),
    act: (w) => w.escrow.connect(w.coordinator).assign(w.jobs.open, w.provider2.address),
    error: E("ProviderInactive"),
    args: (w) => [w.provider2.address],
  },
  ...calls("assign", [
    [
      "a provider fenced off the job by a refusal",
      assignTo("fenced", "provider2"),
      E("ProviderFenced"),
      (w) => [w.jobs.fenced, w.provider2.address],
    ],
    [
      "a provider priced above the job's maximum",
      assignTo("open", "provider3"),
      E("PriceAboveMax"),
      (w) => [w.jobs.open, fx.PRICE.provider3, 1_000n],
    ],
  ]),
  {
    name: "assign when the budget is short for the remaining steps",
    act: assignTo("short", "provider1"),
    error: E("BudgetShort"),
    args: (w) => [w.jobs.short, 100n * fx.PRICE.provider1, 50_000n],
  },
  ...wrongStatus(
    "assign",
    (w, id) => w.escrow.connect(w.coordinator).assign(id, w.provider2.address),
    fx.bits(fx.Status.Open),
    [
      ["a Running job", "running", fx.Status.Running],
      ["a Settled job", "settled", fx.Status.Settled],
    ],
  ),
  // ---- unassign
  {
    name: "unassign by a stranger at the last instant of the lease",
    at: (w) => w.lease,
    act: (w) => w.escrow.connect(w.stranger).unassign(w.jobs.running),
    error: E("LeaseActive"),
    args: (w) => [w.jobs.running, w.lease, w.lease],
  },
  ...wrongStatus("unassign", (w, id) => w.escrow.connect(w.coordinator).unassign(id), fx.bits(fx.Status.Running), [
    ["an Open job", "open", fx.Status.Open],
  ]),
  // ---- heartbeat / reportCheckpoint
  {
    name: "heartbeat with a stale epoch",
    act: (w) => w.escrow.connect(w.provider1).heartbeat(w.jobs.running, 0n),
    error: E("StaleEpoch"),
    args: (w) => [w.jobs.running, 0n, 1n],
  },
  {
    name: "heartbeat by someone other than the assignee",
    act: (w) => w.escrow.connect(w.provider2).heartbeat(w.jobs.running, 1n),
    error: E("NotAssignee"),
    args: (w) => [w.jobs.running, w.provider2.address, w.provider1.address],
  },
  {
    name: "heartbeat after the lease lapsed",
    at: (w) => w.lease + 1n,
    act: (w) => w.escrow.connect(w.provider1).heartbeat(w.jobs.running, 1n),
    error: E("LeaseLapsed"),
    args: (w) => [w.jobs.running, w.lease, w.lease + 1n],
  },
  {
    name: "reportCheckpoint after the lease lapsed",
    at: (w) => w.lease + 1n,
    act: (w) => w.escrow.connect(w.provider1).reportCheckpoint(w.jobs.running, 1n, 10, fx.ckpt(w.jobs.running, 10)),
    error: E("LeaseLapsed"),
    args: (w) => [w.jobs.running, w.lease, w.lease + 1n],
  },
  {
    name: "reportCheckpoint with a future epoch",
    act: (w) => w.escrow.connect(w.provider1).reportCheckpoint(w.jobs.running, 2n, 10, fx.ckpt(w.jobs.running, 10)),
    error: E("StaleEpoch"),
    args: (w) => [w.jobs.running, 2n, 1n],
  },
  {
    name: "reportCheckpoint by someone other than the assignee",
    act: (w) => w.escrow.connect(w.stranger).reportCheckpoint(w.jobs.running, 1n, 10, fx.ckpt(w.jobs.running, 10)),
    error: E("NotAssignee"),
    args: (w) => [w.jobs.running, w.stranger.address, w.provider1.address],
  },
  {
    name: "reportCheckpoint while a checkpoint is pending",
    act: (w) => w.escrow.connect(w.provider1).reportCheckpoint(w.jobs.pending, 1n, 20, fx.ckpt(w.jobs.pending, 20)),
    error: E("CheckpointPending"),
    args: (w) => [w.jobs.pending, 10],
  },
  {
    name: "reportCheckpoint at the accepted step (non-increasing)",
    act: (w) =>
      w.escrow.connect(w.provider1).reportCheckpoint(w.jobs.progress, 1n, 10, fx.ckpt(w.jobs.progress, 10, "again")),
    error: E("InvalidStep"),
    args: (w) => [w.jobs.progress, 10, 10, 20],
  },
  ...calls("reportCheckpoint", [
    ["at step zero", reportStep("running", 0), E("InvalidStep"), (w) => [w.jobs.running, 0, 0, 10]],
    ["more than one interval ahead", reportStep("running", 11), E("InvalidStep"), (w) => [w.jobs.running, 11, 0, 10]],
    ["past the last step", reportStep("complete", 21), E("InvalidStep"), (w) => [w.jobs.complete, 21, 20, 20]],
  ]),
  {
    name: "reportCheckpoint with a zero hash",
    act: (w) => w.escrow.connect(w.provider1).reportCheckpoint(w.jobs.running, 1n, 10, fx.ethers.ZeroHash),
    error: E("ZeroHash"),
    args: (w) => [w.jobs.running],
  },
  ...wrongStatus(
    "reportCheckpoint",
    (w, id) => w.escrow.connect(w.provider1).reportCheckpoint(id, 0n, 10, fx.ckpt(id, 10)),
    fx.bits(fx.Status.Running),
    [["on an Open job", "open", fx.Status.Open]],
  ),
  // ---- acceptCheckpoint / refuseCheckpoint
  {
    name: "acceptCheckpoint with no checkpoint pending",
    act: async (w) =>
      w.escrow.acceptCheckpoint(
        w.jobs.running,
        1n,
        10,
        fx.ckpt(w.jobs.running, 10),
        await fx.signDecision(w, w.jobs.running, 1n, 10, fx.ckpt(w.jobs.running, 10), true),
      ),
    error: E("NoSuchPendingCheckpoint"),
    args: (w) => [w.jobs.running, 1n, 10, fx.ckpt(w.jobs.running, 10)],
  },
  {
    name: "acceptCheckpoint for another step than the pending one",
    act: async (w) => signedDecision(w, true, w.jobs.pending, 1n, 5, w.pendingHash),
    error: E("NoSuchPendingCheckpoint"),
    args: (w) => [w.jobs.pending, 1n, 5, w.pendingHash],
  },
  {
    name: "acceptCheckpoint for another hash than the pending one",
    act: async (w) => signedDecision(w, true, w.jobs.pending, 1n, 10, other),
    error: E("NoSuchPendingCheckpoint"),
    args: (w) => [w.jobs.pending, 1n, 10, other],
  },
  {
    name: "acceptCheckpoint with a stale epoch",
    act: async (w) => signedDecision(w, true, w.jobs.pending, 0n, 10, w.pendingHash),
    error: E("NoSuchPendingCheckpoint"),
    args: (w) => [w.jobs.pending, 0n, 10, w.pendingHash],
  },
  {
    name: "acceptCheckpoint with one verifier's signature",
    act: async (w) => signedDecision(w, true, w.jobs.pending, 1n, 10, w.pendingHash, { signers: [w.verifier1] }),
    error: E("InvalidVerifierSignatures"),
    args: (w) => [w.digests.accept],
  },
  ...wrongStatus(
    "acceptCheckpoint",
    (w, id) => w.escrow.acceptCheckpoint(id, 0n, 10, other, "0x"),
    fx.bits(fx.Status.Open, fx.Status.Running),
    [["on a Cancelled job", "cancelled", fx.Status.Cancelled]],
  ),
  {
    name: "acceptCheckpoint on an Open job with nothing pending",
    act: async (w) => w.escrow.acceptCheckpoint(w.jobs.open, 0n, 10, other, "0x"),
    error: E("NoSuchPendingCheckpoint"),
    args: (w) => [w.jobs.open, 0n, 10, other],
  },
  {
    name: "refuseCheckpoint with no checkpoint pending",
    act: async (w) => signedDecision(w, false, w.jobs.running, 1n, 10, other),
    error: E("NoSuchPendingCheckpoint"),
    args: (w) => [w.jobs.running, 1n, 10, other],
  },
  {
    name: "refuseCheckpoint for another hash than the pending one",
    act: async (w) => signedDecision(w, false, w.jobs.pending, 1n, 10, other),
    error: E("NoSuchPendingCheckpoint"),
    args: (w) => [w.jobs.pending, 1n, 10, other],
  },
  {
    name: "refuseCheckpoint with accept signatures",
    act: async (w) => signedDecision(w, false, w.jobs.pending, 1n, 10, w.pendingHash, { signedAs: true }),
    error: E("InvalidVerifierSignatures"),
    args: (w) => [w.digests.refuse],
  },
  // ---- submitVerdict
  {
    name: "submitVerdict before training is complete",
    act: async (w) => w.escrow.submitVerdict(w.jobs.progress, fx.ckpt(w.jobs.progress, 10), fx.METRIC, true, "0x"),
    error: E("TrainingIncomplete"),
    args: (w) => [w.jobs.progress, 10, 100],
  },
  {
    name: "submitVerdict with a model hash that is not the final checkpoint",
    act: async (w) =>
      w.escrow.submitVerdict(
        w.jobs.complete,
        other,
        fx.METRIC,
        true,
        await fx.signVerdict(w, w.jobs.complete, other, fx.METRIC, true),
      ),
    error: E("VerdictHashMismatch"),
    args: (w) => [w.jobs.complete, other, w.completeHash],
  },
  {
    name: "submitVerdict with signatures for another metric",
    act: async (w) =>
      w.escrow.submitVerdict(
        w.jobs.complete,
        w.completeHash,
        fx.METRIC,
        true,
        await fx.signVerdict(w, w.jobs.complete, w.completeHash, 1n, true),
      ),
    error: E("InvalidVerifierSignatures"),
    args: (w) => [w.digests.verdict],
  },
  ...wrongStatus(
    "submitVerdict",
    (w, id) => w.escrow.submitVerdict(id, other, fx.METRIC, true, "0x"),
    fx.bits(fx.Status.Open, fx.Status.Running),
    [["twice", "verdict", fx.Status.DisputeWindow]],
  ),
  // ---- dispute
  ...wrongStatus("dispute", (w, id) => w.escrow.connect(w.client).dispute(id), fx.bits(fx.Status.DisputeWindow), [
    ["after the window", "verdict", fx.Status.Settleable, () => time.increase(3_601)],
    ["twice", "disputed", fx.Status.Disputed],
    ["while Running", "running", fx.Status.Running],
  ]),
  {
    name: "dispute without a bond allowance",
    prepare: (w) => w.usdc.connect(w.client).approve(w.escrowAddress, 0n),
    act: (w) => w.escrow.connect(w.client).dispute(w.jobs.verdict),
    error: E("BondNotApproved"),
    args: (w) => [w.jobs.verdict, 0n, fx.BOND],
  },
  {
    name: "dispute by someone other than the client",
    act: (w) => w.escrow.connect(w.provider1).dispute(w.jobs.verdict),
    error: E("NotClient"),
    args: (w) => [w.jobs.verdict, w.provider1.address, w.client.address],
  },
  // ---- resolveDispute
  {
    name: "resolveDispute by someone other than the arbiter",
    act: (w) => w.escrow.connect(w.stranger).resolveDispute(w.jobs.disputed, true),
    error: E("NotArbiter"),
    args: (w) => [w.stranger.address, w.arbiter.address],
  },
  ...wrongStatus(
    "resolveDispute",
    (w, id) => w.escrow.connect(w.arbiter).resolveDispute(id, false),
    fx.bits(fx.Status.Disputed),
    [
      ["after the 3-day deadline", "disputed", fx.Status.ArbiterTimedOut, () => time.increase(3n * DAY + 1n)],
      ["on an undisputed job", "verdict", fx.Status.DisputeWindow],
    ],
  ),
  // ---- settle
  ...wrongStatus("settle", (w, id) => w.escrow.settle(id), SETTLEABLE, [
    ["before the dispute window passed", "verdict", fx.Status.DisputeWindow],
    ["twice", "settled", fx.Status.Settled],
    ["a dispute before the arbiter's deadline", "disputed", fx.Status.Disputed],
    ["an Open job", "open", fx.Status.Open],
  ]),
  // ---- claimEarnings / withdraw
  {
    name: "claimEarnings for an address with no earnings",
    act: (w) => w.escrow.claimEarnings(w.jobs.settled, w.stranger.address),
    error: E("NoEarnings"),
    args: (w) => [w.jobs.settled, w.stranger.address],
  },
  ...wrongStatus(
    "claimEarnings",
    (w, id) => w.escrow.claimEarnings(id, w.provider1.address),
    fx.bits(fx.Status.Settled, fx.Status.Cancelled),
    [["before settlement", "verdict", fx.Status.DisputeWindow]],
  ),
  twice({
    name: "claimEarnings twice",
    act: (w) => w.escrow.claimEarnings(w.jobs.settled, w.provider1.address),
    error: E("NoEarnings"),
    args: (w) => [w.jobs.settled, w.provider1.address],
  }),
  {
    name: "claimEarnings after the dispute was upheld",
    act: (w) => w.escrow.claimEarnings(w.jobs.upheld, w.provider1.address),
    error: E("NoEarnings"),
    args: (w) => [w.jobs.upheld, w.provider1.address],
  },
  ...calls("withdraw", [
    [
      "with nothing owed",
      (w) => w.escrow.connect(w.stranger).withdraw(),
      E("NothingOwed"),
      (w) => [w.stranger.address],
    ],
  ]),
  twice({
    name: "withdraw twice",
    act: (w) => w.escrow.connect(w.client).withdraw(),
    error: E("NothingOwed"),
    args: (w) => [w.client.address],
  }),
  // ---- admin
  {
    name: "setCoordinator to the zero address",
    act: (w) => w.escrow.connect(w.owner).setCoordinator(fx.ethers.ZeroAddress),
    error: E("ZeroAddress"),
  },
  {
    name: "setArbiter to the zero address",
    act: (w) => w.escrow.connect(w.owner).setArbiter(fx.ethers.ZeroAddress),
    error: E("ZeroAddress"),
  },
  {
    name: "setFeeRecipient to the zero address",
    act: (w) => w.escrow.connect(w.owner).setFeeRecipient(fx.ethers.ZeroAddress),
    error: E("ZeroAddress"),
  },
  {
    name: "setTemplateApproval for the zero template id",
    act: (w) => w.escrow.connect(w.owner).setTemplateApproval(fx.ethers.ZeroHash, true),
    error: E("ZeroTemplate"),
    args: () => [],
  },
  {
    name: "setFeeRecipient by someone other than the owner",
    act: (w) => w.escrow.connect(w.stranger).setFeeRecipient(w.stranger.address),
    error: ["escrow", "OwnableUnauthorizedAccount"],
    args: (w) => [w.stranger.address],
  },
  // ---- registry
  ...calls("register", [
    ["twice", registerAs("provider1", "again", 1n, 1), R("AlreadyRegistered"), (w) => [w.provider1.address]],
    ["with an empty name", registerAs("stranger", "", 1n, 1), R("InvalidName"), () => [0, 64]],
    ["with a 65-byte name", registerAs("stranger", "n".repeat(65), 1n, 1), R("InvalidName"), () => [65, 64]],
    ["with a zero price", registerAs("stranger", "n", 0n, 1), R("ZeroPrice"), (w) => [w.stranger.address]],
    ["with zero memory", registerAs("stranger", "n", 1n, 0), R("ZeroMemory"), (w) => [w.stranger.address]],
  ]),
  {
    name: "update by an unregistered address",
    act: (w) => w.registry.connect(w.stranger).update(1n, 0, "cpu", 1),
    error: R("NotRegistered"),
    args: (w) => [w.stranger.address],
  },
  twice({
    name: "deactivate twice",
    act: (w) => w.registry.connect(w.provider3).deactivate(),
    error: R("ActiveUnchanged"),
    args: (w) => [w.provider3.address, false],
  }),
  {
    name: "reactivate an active provider",
    act: (w) => w.registry.connect(w.provider3).reactivate(),
    error: R("ActiveUnchanged"),
    args: (w) => [w.provider3.address, true],
  },
  {
    name: "deactivate by an unregistered address",
    act: (w) => w.registry.connect(w.stranger).deactivate(),
    error: R("NotRegistered"),
    args: (w) => [w.stranger.address],
  },
  // ---- stake (registry)
  {
    name: "depositStake of zero",
    act: (w) => w.registry.connect(w.provider1).depositStake(0n),
    error: R("ZeroStake"),
    args: (w) => [w.provider1.address],
  },
  {
    name: "depositStake by an unregistered address",
    act: (w) => w.registry.connect(w.stranger).depositStake(1n),
    error: R("NotRegistered"),
    args: (w) => [w.stranger.address],
  },
  {
    name: "depositStake without an allowance",
    act: (w) => w.registry.connect(w.provider1).depositStake(1n),
    error: ["usdc", "ERC20InsufficientAllowance"],
    args: (w) => [w.registry.target, 0n, 1n],
  },
  {
    name: "requestUnbond of zero",
    act: (w) => w.registry.connect(w.provider1).requestUnbond(0n),
    error: R("ZeroStake"),
    args: (w) => [w.provider1.address],
  },
  {
    name: "requestUnbond of more than the free stake (one lock held)",
    act: (w) => w.registry.connect(w.provider1).requestUnbond(fx.STAKE),
    error: R("StakeShort"),
    args: async (w) => [w.provider1.address, await freeStake(w, w.provider1.address), fx.STAKE],
  },
  {
    name: "requestUnbond without any stake",
    act: (w) => w.registry.connect(w.stranger).requestUnbond(1n),
    error: R("StakeShort"),
    args: (w) => [w.stranger.address, 0n, 1n],
  },
  {
    name: "withdrawStake with nothing unbonding",
    act: (w) => w.registry.connect(w.provider1).withdrawStake(),
    error: R("NothingUnbonding"),
    args: (w) => [w.provider1.address],
  },
  {
    name: "withdrawStake one second before the unbonding delay passed",
    at: (w) => w.unbondReadyAt - 1n,
    act: (w) => w.registry.connect(w.provider2).withdrawStake(),
    error: R("UnbondingNotReady"),
    args: (w) => [w.provider2.address, w.unbondReadyAt, w.unbondReadyAt - 1n],
  },
  {
    name: "lockStake by someone other than the escrow",
    act: (w) => w.registry.connect(w.stranger).lockStake(w.provider1.address, 1n, 1n),
    error: R("NotEscrow"),
    args: (w) => [w.stranger.address, w.escrowAddress],
  },
  {
    name: "releaseStake by someone other than the escrow",
    act: (w) => w.registry.connect(w.provider1).releaseStake(w.provider1.address, w.jobs.running),
    error: R("NotEscrow"),
    args: (w) => [w.provider1.address, w.escrowAddress],
  },
  {
    name: "slashStake by someone other than the escrow",
    act: (w) => w.registry.connect(w.client).slashStake(w.provider1.address, w.jobs.running),
    error: R("NotEscrow"),
    args: (w) => [w.client.address, w.escrowAddress],
  },
  {
    name: "bindEscrow a second time by the deployer",
    act: (w) => w.registry.connect(w.owner).bindEscrow(w.stranger.address),
    error: R("CannotBind"),
    args: (w) => [w.owner.address, w.escrowAddress],
  },
  {
    name: "bindEscrow by someone other than the deployer",
    act: (w) => w.registry.connect(w.stranger).bindEscrow(w.stranger.address),
    error: R("CannotBind"),
    args: (w) => [w.stranger.address, w.escrowAddress],
  },
  // ---- stake and slashing (escrow)
  {
    name: "assign a provider without stake",
    act: (w) => w.escrow.connect(w.coordinator).assign(w.jobs.open, w.provider4.address),
    error: E("StakeShort"),
    args: (w) => [w.jobs.open, w.provider4.address, 0n, fx.MIN_STAKE],
  },
  {
    name: "assign a provider whose stake is all asked back",
    act: (w) => w.escrow.connect(w.coordinator).assign(w.jobs.open, w.provider2.address),
    error: E("StakeShort"),
    args: (w) => [w.jobs.open, w.provider2.address, 0n, fx.MIN_STAKE],
  },
  {
    name: "refuseWithFault whose replayed hash equals the committed one",
    act: (w) => refusePending(w, { ...w.fault, replayedHash: w.fault.committedHash }),
    error: E("NotAFault"),
    args: (w) => [w.jobs.pending, w.fault.committedHash, w.fault.committedHash],
  },
  {
    name: "refuseWithFault at the accepted step (0)",
    act: (w) => refusePending(w, { ...w.fault, step: 0 }),
    error: E("InvalidFaultStep"),
    args: (w) => [w.jobs.pending, 0, 0, 10],
  },
  {
    name: "refuseWithFault past the pending step (11)",
    act: (w) => refusePending(w, { ...w.fault, step: 11 }),
    error: E("InvalidFaultStep"),
    args: (w) => [w.jobs.pending, 11, 0, 10],
  },
  {
    name: "refuseWithFault naming no finder",
    act: (w) => refusePending(w, { ...w.fault, finder: fx.ethers.ZeroAddress }),
    error: E("ZeroAddress"),
  },
  {
    name: "refuseWithFault carrying plain refusal signatures",
    act: async (w) => refusePending(w, w.fault, await fx.signDecision(w, w.jobs.pending, 1n, 10, w.pendingHash, false)),
    error: E("InvalidVerifierSignatures"),
    args: async (w) => [await w.escrow.faultRefusalDigest(w.jobs.pending, 1n, 10, w.pendingHash, w.fault)],
  },
  {
    name: "refuseWithFault with nothing pending",
    act: async (w) => w.escrow.refuseWithFault(w.jobs.running, 1n, 10, other, w.fault, "0x"),
    error: E("NoSuchPendingCheckpoint"),
    args: (w) => [w.jobs.running, 1n, 10, other],
  },
  {
    name: "refuseWithFault one second after the decision window closed",
    at: (w) => w.reportedAt + fx.DECISION_TIMEOUT + 1n,
    act: async (w) => refusePending(w, w.fault, await fx.signFault(w, w.jobs.pending, 1n, 10, w.pendingHash, w.fault)),
    error: E("DecisionWindowClosed"),
    args: (w) => [w.jobs.pending, w.reportedAt + fx.DECISION_TIMEOUT, w.reportedAt + fx.DECISION_TIMEOUT + 1n],
  },
  {
    name: "acceptCheckpoint one second after the decision window closed",
    at: (w) => w.reportedAt + fx.DECISION_TIMEOUT + 1n,
    act: async (w) => signedDecision(w, true, w.jobs.pending, 1n, 10, w.pendingHash),
    error: E("DecisionWindowClosed"),
    args: (w) => [w.jobs.pending, w.reportedAt + fx.DECISION_TIMEOUT, w.reportedAt + fx.DECISION_TIMEOUT + 1n],
  },
  {
    name: "acceptCheckpoint of an unassigned reporter's checkpoint at the job's new epoch",
    act: async (w) => w.escrow.acceptCheckpoint(w.jobs.orphan, 2n, 10, fx.ckpt(w.jobs.orphan, 10), "0x"),
    error: E("NoSuchPendingCheckpoint"),
    args: (w) => [w.jobs.orphan, 2n, 10, fx.ckpt(w.jobs.orphan, 10)],
  },
  {
    name: "reportCheckpoint by the newcomer while its predecessor's checkpoint is decidable",
    act: (w) =>
      w.escrow.connect(w.provider3).reportCheckpoint(w.jobs.handedOver, 3n, 10, fx.ckpt(w.jobs.handedOver, 10)),
    error: E("CheckpointPending"),
    args: (w) => [w.jobs.handedOver, 10],
  },
  {
    name: "cancel while an unassigned reporter's checkpoint is decidable",
    act: (w) => w.escrow.connect(w.client).cancel(w.jobs.orphan),
    error: E("CheckpointPending"),
    args: (w) => [w.jobs.orphan, 10],
  },
  {
    name: "expire at stallSince + STALL_EXPIRY (not yet)",
    at: (w) => w.stallSince + 7n * DAY,
    act: (w) => w.escrow.connect(w.stranger).expire(w.jobs.open),
    error: E("NotExpired"),
    args: (w) => [w.jobs.open, w.stallSince + 7n * DAY, w.stallSince + 7n * DAY],
  },
  ...wrongStatus("expire", (w, id) => w.escrow.connect(w.stranger).expire(id), fx.bits(fx.Status.Open), [
    ["a Running job", "running", fx.Status.Running],
  ]),
];

/** Everything that could move: token balances, proof of reserves, what the escrow owes each account. */
async function balances(w: World) {
  const accounts = [
    w.escrowAddress,
    w.client,
    w.client2,
    w.provider1,
    w.provider2,
    w.provider3,
    w.feeRecipient,
    w.stranger,
  ].map((a) => (typeof a === "string" ? a : a.address));
  const providers = [w.provider1, w.provider2, w.provider3, w.provider4].map((s) => s.address);
  return {
    tokens: await Promise.all([...accounts, await w.registry.getAddress()].map((a) => w.token.balanceOf(a))),
    reserves: await w.escrow.reserves(),
    owed: await Promise.all(accounts.map((a) => w.escrow.owed(a))),
    stakes: await Promise.all(
      providers.map(async (a) => {
        const st = await w.registry.stakeOf(a);
        return [st.deposited, st.locked, st.unbonding, st.unbondingReadyAt];
      }),
    ),
  };
}

describe("bad input (table-driven): reverts with the expected custom error and moves nothing", function () {
  it(`has at least 60 cases (${cases.length})`, function () {
    expect(cases.length).to.be.at.least(60);
  });

  for (const c of cases) {
    it(`${c.name}: reverts with ${c.error[1]}`, async function () {
      const w = (c.world === "false-token"
        ? await fx.networkHelpers.loadFixture(falseTokenWorld)
        : await fx.networkHelpers.loadFixture(badInputWorld)) as unknown as World;
      await c.prepare?.(w);
      const before = await balances(w);
      await time.setNextBlockTimestamp(c.at ? c.at(w) : BigInt(await time.latest()) + 1n);
      const contract = c.error[0] === "escrow" ? w.escrow : c.error[0] === "registry" ? w.registry : w.usdc;
      const assertion = expect(c.act(w)).to.be.revertedWithCustomError(contract, c.error[1]);
      if (c.args) await assertion.withArgs(...(await c.args(w)));
      else await assertion;
      await fx.networkHelpers.mine(); // consume the pinned instant: the reverted call was never mined
      expect(await balances(w)).to.deep.equal(before);
    });
  }
});
