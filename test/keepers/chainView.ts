/**
 * The coordinator's event-driven chain view (keepers/coordinator/chainView.ts) on a simulated chain: a tick with no
 * new events re-reads nothing, an event re-reads exactly the job or provider it names, fencing is learned from
 * CheckpointRefused (no `isFenced` call), a job only its JobCreated names is known from that event without a read,
 * a restarted coordinator rebuilds from events the view one that followed along holds, and without Multicall3 the
 * same reads go one by one with the same result.
 */
import { expect } from "chai";
import type { Provider } from "ethers";
import { coordinatorConfig } from "../../keepers/coordinator/config.ts";
import { createCoordinator } from "../../keepers/coordinator/tick.ts";
import { batchReader } from "../../sdk/node/multicall.ts";
import type { CoordinatorJob } from "../../keepers/coordinator/decide.ts";
import { readJob } from "../../sdk/node/jobReads.ts";
import { depositStake, faultAt, MIN_STAKE, signDecision, signFault } from "../helpers/fixture.ts";
import {
  beat,
  ckpt,
  createJob,
  ethers,
  load,
  manualClock,
  networkHelpers,
  reportAndAccept,
  submitVerdict,
  testContext,
  trainToEnd,
  type Protocol,
} from "./fixture.ts";

/** The fields the coordinator decides on (decide.ts CoordinatorJob), from any job view. */
const COORDINATOR_FIELDS = [
  "jobId",
  "status",
  "epoch",
  "templateId",
  "totalSteps",
  "acceptedStep",
  "pendingStep",
  "maxPricePerStep",
  "checkpointInterval",
  "budget",
  "paid",
  "provider",
  "leaseExpiresAt",
  "lastProgressAt",
  "reportedAt",
] as const satisfies readonly (keyof CoordinatorJob)[];
const decided = (j: CoordinatorJob) => Object.fromEntries(COORDINATOR_FIELDS.map((f) => [f, j[f]]));
const viewOf = (jobs: Map<bigint, CoordinatorJob>) =>
  [...jobs.values()].sort((a, b) => (a.jobId < b.jobId ? -1 : 1)).map(decided);

/**
 * Counts the provider methods the keeper's reads go through and keeps every eth_call's data (the real provider
 * underneath answers them).
 */
function countingProvider(inner: Provider) {
  const counts = new Map<string, number>();
  const callData: string[] = [];
  const provider = new Proxy(inner, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
      if (typeof value !== "function" || typeof prop !== "string") return value;
      return (...args: unknown[]) => {
        counts.set(prop, (counts.get(prop) ?? 0) + 1);
        if (prop === "call") callData.push(String((args[0] as { data?: string }).data ?? ""));
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return { provider, counts, callData };
}

async function coordinatorOn(p: Protocol, o: { multicall?: string } = {}) {
  const clock = manualClock(Date.now());
  const { ctx } = await testContext(p, { signer: p.coordinator, nowMs: clock.now, component: "coordinator" });
  const counting = countingProvider(ethers.provider);
  const counted = {
    ...ctx,
    provider: counting.provider,
    batch: batchReader(counting.provider, o.multicall ?? p.deployment.multicall3),
  };
  const keeper = createCoordinator(
    counted,
    coordinatorConfig({ "heartbeat-timeout-ms": "5000", "start-grace-ms": "0" }),
  );
  let sentAt = clock.now();
  const send = async (w: Protocol["provider1"], jobId = 0n, epoch = 0n) =>
    keeper.book.receive(await beat(w as never, p, ++sentAt, jobId, epoch), clock.now());
  return { keeper, counts: counting.counts, callData: counting.callData, send, clock };
}

describe("keepers: coordinator chain view (events + Multicall3)", function () {
  it("re-reads only what events name: nothing on a quiet tick, the one job a heartbeat touched", async function () {
    const p = await load();
    for (let i = 0; i < 5; i++) await createJob(p);
    const { keeper, send } = await coordinatorOn(p);
    await send(p.provider1);
    await keeper.tick();
    // Five jobs that only their JobCreated names: known from those events, exactly as jobOf would read them.
    expect(keeper.chain.last).to.deep.include({ jobsRead: 0, jobsFromEvents: 5 });
    expect((await p.escrow.jobOf(1n)).provider).to.equal(p.provider1.address);
    await send(p.provider1, 1n, 1n);
    await keeper.tick(); // reads job 1 again: the assignment's own event
    await keeper.tick();
    expect(keeper.chain.last).to.deep.include({ jobsRead: 0, providersRead: 0, logs: 0 });
    await p.escrow.connect(p.provider1).heartbeat(1n, 1n);
    await keeper.tick();
    expect(keeper.chain.last).to.deep.include({ jobsRead: 1, logs: 1 });
    await createJob(p);
    await keeper.tick();
    expect(keeper.chain.last).to.deep.include({ jobsRead: 0, jobsFromEvents: 1 });
    expect(keeper.chain.jobs.size).to.equal(6);
  });

  it("a repriced provider is re-read from its ProviderUpdated event and the new price decides", async function () {
    const p = await load();
    const jobId = await createJob(p);
    const { keeper, send } = await coordinatorOn(p);
    await keeper.tick(); // nobody beat yet: only reads
    // provider2 undercuts provider1 (900) after the first read.
    await p.registry.connect(p.provider2).update(800n, 0, "bench-gpu", 16_384);
    await send(p.provider1);
    await send(p.provider2);
    const r = await keeper.tick();
    expect(keeper.chain.last.providersRead).to.equal(1);
    expect(r.sent.map((s) => s.decision.provider)).to.deep.equal([p.provider2.address]);
    expect((await p.escrow.jobOf(jobId)).provider).to.equal(p.provider2.address);
  });

  it("learns fencing from CheckpointRefused: never that job again, no isFenced", async function () {
    const p = await load();
    const jobId = await createJob(p);
    const other = await createJob(p);
    const { keeper, send, callData } = await coordinatorOn(p);
    await send(p.provider1);
    await keeper.tick();
    expect((await p.escrow.jobOf(jobId)).provider).to.equal(p.provider1.address);
    const hash = ckpt(jobId, 10);
    await p.escrow.connect(p.provider1).reportCheckpoint(jobId, 1n, 10, hash);
    const sigs = await signDecision(p, jobId, 1n, 10, hash, false);
    await p.escrow.connect(p.stranger).refuseCheckpoint(jobId, 1n, 10, hash, sigs);
    // The refused hold is a strike: provider1 waits out its back-off (60 s of chain time for one) first.
    await networkHelpers.time.increase(60);
    await send(p.provider1);
    const r = await keeper.tick();
    expect(keeper.chain.fenced.get(jobId.toString())).to.deep.equal(new Set([p.provider1.address.toLowerCase()]));
    // provider1 takes the other job; the refused one waits for someone else.
    expect(r.sent.map((s) => [s.decision.jobId, s.decision.provider])).to.deep.equal([[other, p.provider1.address]]);
    const waiting = r.decisions.find((d) => d.jobId === jobId)!;
    expect(waiting.reason).to.contain("fenced");
    // Neither alone nor inside a Multicall3 batch (its payload carries each call's data verbatim).
    const isFenced = p.escrow.interface.getFunction("isFenced")!.selector.slice(2);
    expect(callData.length).to.be.greaterThan(0);
    expect(callData.filter((d) => d.includes(isFenced))).to.deep.equal([]);
  });

  it("without Multicall3 at the given address, the same reads go one by one and decide the same", async function () {
    const p = await load();
    for (let i = 0; i < 3; i++) await createJob(p);
    const nowhere = ethers.Wallet.createRandom().address;
    const { keeper, send, counts } = await coordinatorOn(p, { multicall: nowhere });
    await send(p.provider1);
    await send(p.provider2);
    const r = await keeper.tick();
    expect(r.sent.map((s) => s.decision.provider)).to.deep.equal([p.provider1.address, p.provider2.address]);
    // Jobs and providers known from their events: only coordinator, jobCount and minStake, as single eth_calls.
    expect(keeper.chain.last).to.deep.include({ jobsFromEvents: 3, stakesRead: 0 });
    expect(counts.get("call")).to.be.greaterThanOrEqual(3);
    const before = counts.get("call")!;
    // The two assignments' events: those two jobs re-read (jobOf), plus coordinator and jobCount, each its own
    // eth_call; the assignees' locked stakes come from StakeLocked.
    await keeper.tick();
    expect(keeper.chain.last).to.deep.include({ jobsRead: 2, stakesRead: 0 });
    expect(counts.get("call")! - before).to.be.greaterThanOrEqual(2 + 2);
    for (const id of [1n, 2n]) {
      expect(decided(keeper.chain.jobs.get(id)!)).to.deep.equal(decided(await readJob(p.escrow, id)));
    }
  });

  it("a job only JobCreated names is known from the event, field for field as jobOf reads it", async function () {
    const p = await load();
    await createJob(p, { totalSteps: 70, checkpointInterval: 7, maxPricePerStep: 1_234n, budget: 98_765n });
    const { keeper } = await coordinatorOn(p);
    await keeper.tick();
    expect(keeper.chain.last).to.deep.include({ jobsRead: 0, jobsFromEvents: 1 });
    expect(decided(keeper.chain.jobs.get(1n)!)).to.deep.equal(decided(await readJob(p.escrow, 1n)));
  });

  it("providers' offers and stakes from their events alone, as quote and stakeOf read them, through every stake event", async function () {
    const p = await load();
    const follower = await coordinatorOn(p);
    const providers = [p.provider1, p.provider2, p.provider3];
    /** Each provider's view in `keeper` equals quote and stakeOf now. */
    const expectChain = async (keeper: typeof follower.keeper, when: string) => {
      for (const w of providers) {
        const [pricePerStep, memoryMiB, active] = await p.registry.quote(w.address);
        const st = await p.registry.stakeOf(w.address);
        expect(keeper.chain.providers.get(w.address.toLowerCase()), `${when}: ${w.address}`).to.deep.equal({
          address: w.address,
          pricePerStep,
          memoryMiB: Number(memoryMiB),
          active,
          registered: true,
          stakeFree: st.deposited - st.locked - st.unbonding,
        });
      }
    };
    const hash = ckpt(1n, 20, "fabricated");
    const steps: [string, () => Promise<unknown>][] = [
      [
        "two jobs",
        async () => {
          await createJob(p, { totalSteps: 40, checkpointInterval: 10 });
          await createJob(p, {
            totalSteps: 40,
            checkpointInterval: 10,
            maxPricePerStep: 300_000n,
            budget: 12_000_000n,
          });
        },
      ],
      [
        "repriced, toggled",
        async () => {
          await p.registry.connect(p.provider2).update(777n, 0, "bench-gpu", 8_192);
          await p.registry.connect(p.provider3).deactivate();
          await p.registry.connect(p.provider3).reactivate();
          await p.registry.connect(p.provider3).deactivate();
        },
      ],
      ["locked", () => p.escrow.connect(p.coordinator).assign(1n, p.provider1.address)],
      ["lock grown by an accepted checkpoint", () => reportAndAccept(p, 1n, p.provider1, 10)],
      [
        "slashed",
        async () => {
          await p.escrow.connect(p.provider1).reportCheckpoint(1n, 1n, 20, hash);
          const fault = faultAt(p, 17, p.verifier3.address);
          const sigs = await signFault(p, 1n, 1n, 20, hash, fault);
          await p.escrow.connect(p.stranger).refuseWithFault(1n, 1n, 20, hash, fault, sigs);
        },
      ],
      [
        "locked, a checkpoint pending, unassigned (the lock stays)",
        async () => {
          await p.escrow.connect(p.coordinator).assign(2n, p.provider2.address);
          await p.escrow.connect(p.provider2).reportCheckpoint(2n, 1n, 10, ckpt(2n, 10));
          await p.escrow.connect(p.coordinator).unassign(2n);
        },
      ],
      [
        "re-assigned at a higher price: the job's lock topped up",
        async () => {
          await p.registry.connect(p.provider2).update(250_000n, 0, "bench-gpu", 8_192);
          await p.escrow.connect(p.coordinator).assign(2n, p.provider2.address);
        },
      ],
      [
        "unassigned, its checkpoint accepted: released",
        async () => {
          await p.escrow.connect(p.coordinator).unassign(2n);
          const sigs = await signDecision(p, 2n, 1n, 10, ckpt(2n, 10), true);
          await p.escrow.connect(p.stranger).acceptCheckpoint(2n, 1n, 10, ckpt(2n, 10), sigs);
        },
      ],
      [
        "re-assigned after the release: a fresh lock",
        () => p.escrow.connect(p.coordinator).assign(2n, p.provider2.address),
      ],
      ["deposited", () => depositStake(p, p.provider2, 3n)],
      ["unbonding", () => p.registry.connect(p.provider2).requestUnbond(2n)],
      [
        "withdrawn",
        async () => {
          await networkHelpers.time.increase(await p.registry.unbondingDelay());
          await p.registry.connect(p.provider2).withdrawStake();
        },
      ],
    ];
    for (const [when, step] of steps) {
      await step();
      await follower.keeper.tick();
      expect(follower.keeper.chain.last.stakesRead, when).to.equal(0);
      await expectChain(follower.keeper, when);
    }
    const locks = await p.registry.queryFilter(p.registry.filters.StakeLocked(p.provider2.address, 2n));
    expect(locks.map((l) => l.args.amount)).to.deep.equal([MIN_STAKE, 2_500_000n, 2_500_000n]); // grown; fresh
    // Every kind of stake event happened; a restarted coordinator folds them all at once, reading no stake.
    for (const e of [
      "StakeDeposited",
      "StakeLocked",
      "StakeReleased",
      "StakeSlashed",
      "UnbondingStarted",
      "StakeWithdrawn",
    ]) {
      expect(await p.registry.queryFilter(p.registry.filters[e as "StakeLocked"]()), e).to.not.be.empty;
    }
    const restarted = await coordinatorOn(p);
    await restarted.keeper.tick();
    expect(restarted.keeper.chain.last).to.deep.include({ providersRead: 3, stakesRead: 0 });
    await expectChain(restarted.keeper, "restarted");
  });

  it("restarted, it rebuilds from events the view a coordinator that followed along holds", async function () {
    const p = await load();
    const follower = await coordinatorOn(p);
    // Open (fresh), Running with a lease extended and a checkpoint accepted, refused (fenced), over (verdict).
    for (let i = 0; i < 4; i++) await createJob(p, { totalSteps: 20, checkpointInterval: 10, maxPricePerStep: 2_000n });
    await follower.keeper.tick();
    await p.escrow.connect(p.coordinator).assign(2n, p.provider1.address);
    await p.escrow.connect(p.provider1).heartbeat(2n, 1n);
    await reportAndAccept(p, 2n, p.provider1, 10);
    await follower.keeper.tick();
    await p.escrow.connect(p.coordinator).assign(3n, p.provider2.address);
    const hash = ckpt(3n, 10);
    await p.escrow.connect(p.provider2).reportCheckpoint(3n, 1n, 10, hash);
    await p.escrow
      .connect(p.stranger)
      .refuseCheckpoint(3n, 1n, 10, hash, await signDecision(p, 3n, 1n, 10, hash, false));
    await submitVerdict(p, 4n, await trainToEnd(p, 4n, p.provider3));
    await follower.keeper.tick();
    const restarted = await coordinatorOn(p);
    await restarted.keeper.tick();
    // The finished job is dropped from its VerdictSubmitted without a read; the fresh one comes from its event.
    expect(restarted.keeper.chain.last).to.deep.include({ jobsRead: 2, jobsFromEvents: 1 });
    expect(viewOf(restarted.keeper.chain.jobs)).to.deep.equal(viewOf(follower.keeper.chain.jobs));
    expect([...restarted.keeper.chain.jobs.keys()].sort()).to.deep.equal([1n, 2n, 3n]);
    for (const id of [1n, 2n, 3n]) {
      expect(decided(restarted.keeper.chain.jobs.get(id)!)).to.deep.equal(decided(await readJob(p.escrow, id)));
    }
    expect(restarted.keeper.chain.fenced).to.deep.equal(follower.keeper.chain.fenced);
    expect(restarted.keeper.chain.fenced.get("3")).to.deep.equal(new Set([p.provider2.address.toLowerCase()]));
    expect([...restarted.keeper.chain.providers.values()]).to.deep.equal([...follower.keeper.chain.providers.values()]);
  });
});
