/**
 * The auditor's test: a long seeded random scenario of real calls (several clients, four providers, many jobs:
 * creates, assigns, reports, accepts, refuses, unassigns, lease lapses, verdicts, disputes upheld / rejected /
 * timed out, settles, cancels, expiries, claims, withdrawals, fault refusals that slash, stake deposits, unbonding
 * and withdrawals), proof of reserves checked after every transaction, then every balance, job, stake and total
 * rebuilt from the escrow's and the registry's events alone (sdk/rules/ledger.ts) and compared with the contracts.
 */
import { expect } from "chai";
import type { BaseContract, ContractTransactionResponse, EventLog } from "ethers";
import type { HardhatEthersSigner } from "@nomicfoundation/hardhat-ethers/types";
import { foldEscrowEvents, statusAt, walletOf, type Ledger } from "../../sdk/rules/ledger.ts";
import * as fx from "../helpers/fixture.ts";
import { mulberry32 } from "../helpers/random.ts";

const SEED = 0x6a09e667;
const STEPS = 500;

/** A seeded PRNG with helpers, so a failure replays exactly. */
function prng(seed: number) {
  const next = mulberry32(seed);
  return {
    next,
    int: (lo: number, hi: number) => lo + Math.floor(next() * (hi - lo + 1)),
    pick: <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)],
    chance: (p: number) => next() < p,
  };
}

class Scenario {
  readonly rng = prng(SEED);
  readonly counts = new Map<string, number>();
  readonly clients: HardhatEthersSigner[];
  readonly providers: HardhatEthersSigner[];
  readonly accounts: string[];
  readonly p: fx.Protocol;
  constructor(p: fx.Protocol) {
    this.p = p;
    this.clients = [p.client, p.client2, p.client3];
    this.providers = [p.provider1, p.provider2, p.provider3, p.provider4];
    this.accounts = [...this.clients, ...this.providers, ...p.verifiers, p.feeRecipient, p.stranger, p.owner].map(
      (s) => s.address,
    );
  }

  /** Sends, counts the action, and checks proof of reserves right after the transaction. */
  async send(action: string, tx: Promise<ContractTransactionResponse>) {
    await (await tx).wait();
    this.counts.set(action, (this.counts.get(action) ?? 0) + 1);
    const [held, owes] = await this.p.escrow.reserves();
    expect(held >= owes, `reserves after ${action}: held ${held} < owes ${owes}`).to.equal(true);
  }

  /** Jobs not yet Settled or Cancelled, and those that are (the driver's own bookkeeping, not the audit's). */
  readonly live = new Set<bigint>();
  readonly done: bigint[] = [];

  async step() {
    const { p, rng } = this;
    if (this.live.size < 3 || rng.chance(0.05)) return this.create();
    if (rng.chance(0.12)) return this.claimOrWithdraw();
    if (rng.chance(0.05)) return this.registryChurn();
    if (rng.chance(0.01))
      return this.send(
        "setFeeRecipient",
        p.escrow.connect(p.owner).setFeeRecipient(rng.pick([p.feeRecipient, p.stranger]).address),
      );
    const jobId = rng.pick([...this.live]);
    await this.advance(jobId);
    const s = Number(await p.escrow.statusOf(jobId));
    if (s === fx.Status.Settled || s === fx.Status.Cancelled) {
      this.live.delete(jobId);
      this.done.push(jobId);
    }
  }

  async create() {
    const { rng } = this;
    const totalSteps = rng.pick([10, 20, 30]);
    const maxPricePerStep = BigInt(rng.pick([1_000, 1_200]));
    // Sometimes a budget too short for some providers, so that the coordinator must skip them.
    const budget = (BigInt(totalSteps) * maxPricePerStep * BigInt(rng.int(85, 150))) / 100n;
    const request = {
      templateId: fx.TEMPLATE,
      totalSteps,
      checkpointInterval: rng.pick([5, 10, 10]),
      maxPricePerStep,
      budget,
      disputeWindow: BigInt(rng.pick([60, 600, 3_600])),
    };
    const client = rng.pick(this.clients);
    await this.send("createJob", this.p.escrow.connect(client).createJob(request));
    this.live.add(await this.p.escrow.jobCount());
  }

  async advance(jobId: bigint) {
    const { p, rng } = this;
    const job = await p.escrow.jobOf(jobId);
    const status = Number(await p.escrow.statusOf(jobId));
    const t = (await fx.now()) + 1n;
    // A checkpoint stays decidable after its reporter is unassigned, on its own epoch, until the window closes.
    const decidable = job.pendingStep !== 0n && t <= job.reportedAt + fx.DECISION_TIMEOUT;
    if (decidable && (status === fx.Status.Open || rng.chance(0.8))) return this.decide(jobId, job);
    switch (status) {
      case fx.Status.Open: {
        if (job.acceptedStep === job.totalSteps) return this.verdict(jobId, job.acceptedHash);
        if (rng.chance(0.03)) {
          const expirable = job.stallSince + 7n * 86_400n + 1n; // reopening does not restart the stall clock
          if (expirable > t) await fx.networkHelpers.time.increaseTo(expirable);
          return this.send("expire", p.escrow.connect(p.stranger).expire(jobId));
        }
        if (rng.chance(0.08)) return this.send("cancel", p.escrow.connect(await this.signer(job.client)).cancel(jobId));
        const candidates = [];
        for (const pr of this.providers) {
          const [price, , active] = await p.registry.quote(pr.address);
          const fits =
            price <= job.maxPricePerStep && (job.totalSteps - job.acceptedStep) * price <= job.budget - job.paid;
          const [stakeNeeded, stakeFree] = await p.registry.stakeQuote(
            pr.address,
            jobId,
            price * job.checkpointInterval,
          );
          const staked = stakeNeeded <= stakeFree;
          if (active && fits && staked && !(await p.escrow.isFenced(jobId, pr.address))) candidates.push(pr);
        }
        if (candidates.length === 0)
          return this.send("cancel (no provider fits)", p.escrow.connect(await this.signer(job.client)).cancel(jobId));
        return this.send("assign", p.escrow.connect(p.coordinator).assign(jobId, rng.pick(candidates).address));
      }
      case fx.Status.Running: {
        const provider = await this.signer(job.provider);
        if (t > job.leaseExpiresAt)
          return this.send("unassign (lease lapsed)", p.escrow.connect(p.stranger).unassign(jobId));
        if (decidable) {
          if (rng.chance(0.5))
            return this.send("unassign (coordinator)", p.escrow.connect(p.coordinator).unassign(jobId));
          return this.lapse();
        }
        if (job.acceptedStep === job.totalSteps) {
          return rng.chance(0.8) ? this.verdict(jobId, job.acceptedHash) : this.lapse();
        }
        const r = rng.next();
        if (r < 0.86) {
          const maxStep = Math.min(Number(job.acceptedStep + job.checkpointInterval), Number(job.totalSteps));
          const step = rng.chance(0.8) ? maxStep : rng.int(Number(job.acceptedStep) + 1, maxStep);
          return this.send(
            "report",
            p.escrow.connect(provider).reportCheckpoint(jobId, job.epoch, step, fx.ckpt(jobId, step, `:${job.epoch}`)),
          );
        }
        const stalled = t > job.lastProgressAt + job.progressTimeout; // heartbeats no longer hold the job
        if (r < 0.96 && !stalled) return this.send("heartbeat", p.escrow.connect(provider).heartbeat(jobId, job.epoch));
        return this.lapse();
      }
      case fx.Status.DisputeWindow: {
        if (rng.chance(0.5))
          return this.send("dispute", p.escrow.connect(await this.signer(job.client)).dispute(jobId));
        await fx.networkHelpers.time.increase(job.disputeWindow + 1n);
        return this.send("settle (window passed)", p.escrow.connect(p.stranger).settle(jobId));
      }
      case fx.Status.Settleable:
        return this.send("settle (window passed)", p.escrow.connect(p.stranger).settle(jobId));
      case fx.Status.Disputed: {
        const r = rng.next();
        if (r < 0.3) return this.send("resolve (upheld)", p.escrow.connect(p.arbiter).resolveDispute(jobId, true));
        if (r < 0.55) return this.send("resolve (rejected)", p.escrow.connect(p.arbiter).resolveDispute(jobId, false));
        await fx.networkHelpers.time.increase(fx.ARBITER_TIMEOUT + 1n);
        return this.send("settle (arbiter timed out)", p.escrow.connect(p.stranger).settle(jobId));
      }
      case fx.Status.ArbiterTimedOut:
        return this.send("settle (arbiter timed out)", p.escrow.connect(p.stranger).settle(jobId));
      default:
        throw new Error(`unexpected status ${status} for live job ${jobId}`);
    }
  }

  /** The verifiers decide the pending checkpoint, on the epoch it was reported at (its reporter may be gone). */
  async decide(jobId: bigint, job: Awaited<ReturnType<fx.Protocol["escrow"]["jobOf"]>>) {
    const { p, rng } = this;
    const [epoch, step, hash] = [job.pendingEpoch, Number(job.pendingStep), job.pendingHash];
    const r = rng.next();
    const orphan = job.provider !== job.pendingProvider ? " (reporter unassigned)" : "";
    if (r < 0.72) {
      const sigs = await fx.signDecision(p, jobId, epoch, step, hash, true, this.verifierPair());
      return this.send(
        `accept${orphan}`,
        p.escrow.connect(p.stranger).acceptCheckpoint(jobId, epoch, step, hash, sigs),
      );
    }
    if (r < 0.86) {
      const sigs = await fx.signDecision(p, jobId, epoch, step, hash, false, this.verifierPair());
      return this.send("refuse", p.escrow.connect(p.stranger).refuseCheckpoint(jobId, epoch, step, hash, sigs));
    }
    const fault = fx.faultAt(p, rng.int(Number(job.acceptedStep) + 1, step), rng.pick(p.verifiers).address);
    const sigs = await fx.signFault(p, jobId, epoch, step, hash, fault, this.verifierPair());
    return this.send(
      "refuse with fault (slash)",
      p.escrow.connect(p.stranger).refuseWithFault(jobId, epoch, step, hash, fault, sigs),
    );
  }

  async verdict(jobId: bigint, modelHash: string) {
    const passed = this.rng.chance(0.85);
    const metric = passed ? fx.METRIC : 4_200n;
    const sigs = await fx.signVerdict(this.p, jobId, modelHash, metric, passed, this.verifierPair());
    await this.send(
      "submitVerdict",
      this.p.escrow.connect(this.p.stranger).submitVerdict(jobId, modelHash, metric, passed, sigs),
    );
  }

  /** Lets every running lease lapse (the silent provider case). */
  async lapse() {
    await fx.networkHelpers.time.increase(fx.LEASE + 1n);
    this.counts.set("lease lapsed", (this.counts.get("lease lapsed") ?? 0) + 1);
  }

  async claimOrWithdraw() {
    const { p, rng } = this;
    if (rng.chance(0.5)) {
      for (let tries = 0; tries < 5 && this.done.length > 0; tries++) {
        const jobId = rng.pick(this.done);
        for (const pr of this.providers) {
          if ((await p.escrow.earningsOf(jobId, pr.address)) > 0n) {
            return this.send(
              "claimEarnings",
              p.escrow.connect(rng.pick([p.stranger, pr])).claimEarnings(jobId, pr.address),
            );
          }
        }
      }
      return;
    }
    const owed = [];
    for (const s of [...this.clients, ...this.providers, ...p.verifiers, p.feeRecipient, p.stranger]) {
      if ((await p.escrow.owed(s.address)) > 0n) owed.push(s);
    }
    if (owed.length > 0) await this.send("withdraw", p.escrow.connect(rng.pick(owed)).withdraw());
  }

  async registryChurn() {
    const { p, rng } = this;
    const pr = rng.pick(this.providers.slice(1));
    if (rng.chance(0.5)) return this.stakeChurn(pr);
    if (await p.registry.isActive(pr.address)) {
      if (rng.chance(0.5)) return this.send("registry: deactivate", p.registry.connect(pr).deactivate());
      return this.send(
        "registry: update price",
        p.registry.connect(pr).update(BigInt(rng.int(800, 1_300)), 1, "GPU", 16_384),
      );
    }
    return this.send("registry: reactivate", p.registry.connect(pr).reactivate());
  }

  /** Deposits more, asks free stake back, or withdraws what finished unbonding. */
  async stakeChurn(pr: HardhatEthersSigner) {
    const { p, rng } = this;
    const st = await p.registry.stakeOf(pr.address);
    const free = st.deposited - st.locked - st.unbonding;
    if (st.unbonding > 0n && (await fx.now()) >= st.unbondingReadyAt) {
      return this.send("stake: withdraw", p.registry.connect(pr).withdrawStake());
    }
    if (free > 2_000_000n && rng.chance(0.6))
      return this.send("stake: unbond", p.registry.connect(pr).requestUnbond(free / 2n));
    await p.usdc.mint(pr.address, 3_000_000n);
    await p.usdc.connect(pr).approve(await p.registry.getAddress(), 3_000_000n);
    return this.send("stake: deposit", p.registry.connect(pr).depositStake(3_000_000n));
  }

  verifierPair() {
    const v = this.p.verifiers;
    return this.rng.pick([
      [v[0], v[1]],
      [v[0], v[2]],
      [v[1], v[2]],
    ]);
  }

  async signer(address: string) {
    const all = [...this.clients, ...this.providers];
    const s = all.find((x) => x.address === address);
    if (s === undefined) throw new Error(`no signer for ${address}`);
    return s;
  }

  /** Ends every job that can end: settles what the clock allows, claims every earning, everyone withdraws. */
  async drain() {
    const { p } = this;
    await fx.networkHelpers.time.increase(fx.ARBITER_TIMEOUT + 31n * 86_400n);
    const jobCount = await p.escrow.jobCount();
    for (let id = 1n; id <= jobCount; id++) {
      const s = Number(await p.escrow.statusOf(id));
      if (s === fx.Status.Settleable || s === fx.Status.ArbiterTimedOut)
        await this.send("settle (drain)", p.escrow.settle(id));
      if (s === fx.Status.Running) await this.send("unassign (drain)", p.escrow.connect(p.stranger).unassign(id));
      if (Number(await p.escrow.statusOf(id)) === fx.Status.Open) {
        const job = await p.escrow.jobOf(id);
        await this.send("cancel (drain)", p.escrow.connect(await this.signer(job.client)).cancel(id));
      }
      {
        for (const pr of this.providers) {
          if ((await p.escrow.earningsOf(id, pr.address)) > 0n)
            await this.send("claimEarnings (drain)", p.escrow.claimEarnings(id, pr.address));
        }
      }
    }
    for (const s of [...this.clients, ...this.providers, ...p.verifiers, p.feeRecipient, p.stranger]) {
      if ((await p.escrow.owed(s.address)) > 0n) await this.send("withdraw (drain)", p.escrow.connect(s).withdraw());
    }
    // Every lock is released once every job is final: all stake can be asked back and withdrawn.
    for (const pr of this.providers) {
      const st = await p.registry.stakeOf(pr.address);
      expect(st.locked, `locked stake of ${pr.address} after every job ended`).to.equal(0n);
      const free = st.deposited - st.unbonding;
      if (free > 0n) await this.send("stake: unbond (drain)", p.registry.connect(pr).requestUnbond(free));
    }
    await fx.networkHelpers.time.increase(fx.UNBONDING);
    for (const pr of this.providers) {
      if ((await p.registry.stakeOf(pr.address)).unbonding > 0n) {
        await this.send("stake: withdraw (drain)", p.registry.connect(pr).withdrawStake());
      }
    }
  }
}

async function auditorWorld() {
  const p = await fx.deployProtocol();
  await p.registry.connect(p.provider4).register("provider4", 950n, 1, "NVIDIA A100", 81_920);
  await fx.depositStake(p, p.provider4);
  return p;
}

/** Rebuilds the books from events only, then compares every figure with the contract. */
async function audit(p: fx.Protocol, accounts: string[]): Promise<Ledger> {
  // Every log of the escrow, whatever its event (the typed contract only accepts one event at a time).
  const logs = await (p.escrow as unknown as BaseContract).queryFilter("*", 0, "latest");
  const events = logs.filter((l): l is EventLog => "eventName" in l);
  expect(events.length).to.equal(logs.length, "every escrow log decodes");
  const registryLogs = await (p.registry as unknown as BaseContract).queryFilter("*", 0, "latest");
  const registryEvents = registryLogs.filter((l): l is EventLog => "eventName" in l);
  expect(registryEvents.length).to.equal(registryLogs.length, "every registry log decodes");
  const ledger = foldEscrowEvents([...events, ...registryEvents]);
  const t = await fx.now();

  const jobCount = await p.escrow.jobCount();
  expect(BigInt(ledger.jobs.size)).to.equal(jobCount);
  for (let id = 1n; id <= jobCount; id++) {
    const job = await p.escrow.jobOf(id);
    const mine = ledger.jobs.get(id)!;
    const label = `job ${id}`;
    expect(statusAt(mine, t), `${label} status`).to.equal(Number(await p.escrow.statusOf(id)));
    expect(mine.phase, `${label} phase`).to.equal(Number(job.phase));
    expect(mine.epoch, `${label} epoch`).to.equal(job.epoch);
    expect(mine.acceptedStep, `${label} acceptedStep`).to.equal(Number(job.acceptedStep));
    expect(mine.acceptedHash ?? "0x" + "0".repeat(64), `${label} acceptedHash`).to.equal(job.acceptedHash);
    expect(mine.pendingStep, `${label} pendingStep`).to.equal(Number(job.pendingStep));
    expect(mine.paid, `${label} paid`).to.equal(job.paid);
    expect(mine.provider ?? "0x0000000000000000000000000000000000000000", `${label} provider`).to.equal(job.provider);
    expect(mine.client).to.equal(job.client);
    for (const pr of accounts) {
      expect(mine.earnings.get(pr) ?? 0n, `${label} earnings of ${pr}`).to.equal(await p.escrow.earningsOf(id, pr));
      expect(mine.fenced.has(pr), `${label} fenced ${pr}`).to.equal(await p.escrow.isFenced(id, pr));
    }
  }
  for (const account of accounts) {
    expect(walletOf(ledger, account).withdrawable, `owed(${account})`).to.equal(await p.escrow.owed(account));
  }
  for (const account of accounts) {
    const st = await p.registry.stakeOf(account);
    const mine = ledger.stakes.get(account) ?? { deposited: 0n, locked: 0n, unbonding: 0n };
    expect([mine.deposited, mine.locked, mine.unbonding], `stake of ${account}`).to.deep.equal([
      st.deposited,
      st.locked,
      st.unbonding,
    ]);
  }
  expect(ledger.totalStaked, "totalStaked").to.equal(await p.registry.totalStaked());
  expect(ledger.totalLocked, "totalLocked").to.equal(await p.escrow.totalLocked());
  expect(ledger.totalBonds, "totalBonds").to.equal(await p.escrow.totalBonds());
  expect(ledger.totalWithdrawable, "totalWithdrawable").to.equal(await p.escrow.totalWithdrawable());
  expect([ledger.held, ledger.owes], "reserves").to.deep.equal([...(await p.escrow.reserves())]);
  expect(ledger.roles.feeRecipient).to.equal(await p.escrow.feeRecipient());
  return ledger;
}

describe("auditor: a long seeded random scenario, rebuilt from events alone", function () {
  it(`${STEPS} random steps (seed ${SEED.toString(16)}): reserves hold after every transaction; events rebuild every balance, job and total`, async function () {
    const p = await fx.networkHelpers.loadFixture(auditorWorld);
    const scenario = new Scenario(p);
    for (let i = 0; i < STEPS; i++) await scenario.step();

    const mid = await audit(p, scenario.accounts);
    if (process.env.AUDITOR_VERBOSE) console.log(Object.fromEntries(scenario.counts));
    // The scenario really exercised every path it claims to (guards against a seed that drifts into a corner).
    const must = [
      "createJob",
      "assign",
      "report",
      "accept",
      "refuse",
      "heartbeat",
      "unassign (coordinator)",
      "unassign (lease lapsed)",
      "submitVerdict",
      "dispute",
      "resolve (upheld)",
      "resolve (rejected)",
      "settle (arbiter timed out)",
      "settle (window passed)",
      "cancel",
      "claimEarnings",
      "withdraw",
      "refuse with fault (slash)",
      "accept (reporter unassigned)",
      "expire",
      "stake: deposit",
      "stake: unbond",
    ];
    const missing = must.filter((m) => !scenario.counts.has(m));
    expect(missing, `actions never taken: ${JSON.stringify(Object.fromEntries(scenario.counts))}`).to.deep.equal([]);
    expect(mid.jobs.size).to.be.at.least(25);

    await scenario.drain();
    const end = await audit(p, scenario.accounts);
    expect(end.totalLocked).to.equal(0n);
    expect(end.totalBonds).to.equal(0n);
    expect(end.totalWithdrawable).to.equal(0n);
    expect(end.held).to.equal(0n);
    expect(end.totalStaked).to.equal(0n);
    // Conservation: every token that came in went out to someone, and providers got exactly the released pay.
    let released = 0n;
    for (const job of end.jobs.values()) for (const amount of job.released.values()) released += amount;
    let providersWithdrawn = 0n;
    for (const pr of scenario.providers) providersWithdrawn += end.withdrawn.get(pr.address) ?? 0n;
    expect(providersWithdrawn).to.equal(released);
  });
});
