/**
 * No starving, the coordinator on chain: a holder that beats without progress is unassigned;
 * an idle hold keeps that provider off the job and backs it off across jobs — rebuilt by a fresh coordinator
 * from chain events alone; a track record (accepted steps) wins over a cheaper new identity within the margin.
 */
import { expect } from "chai";
import type { HDNodeWallet } from "ethers";
import { createCoordinator } from "../../keepers/coordinator/tick.ts";
import { coordinatorConfig } from "../../keepers/coordinator/config.ts";
import { UnassignReason } from "../../sdk/rules/ledger.ts";
import { loadTemplate } from "../../workloads/index.ts";
import { DeviceKind, depositStake } from "../helpers/fixture.ts";
import {
  beat,
  createJob,
  load,
  manualClock,
  networkHelpers,
  reportAndAccept,
  testContext,
  wallet,
  type Protocol,
} from "./fixture.ts";

const TIMEOUT = 5_000;
const FLOOR = 10_000;
const P1 = wallet(8); // provider1, price 900
const P2 = wallet(9); // provider2, price 1000
const P3 = wallet(10); // provider3, price 1100
const P4 = wallet(14); // provider4: registered by the tests that need it
const BLOBS = loadTemplate("blobs-tiny");
const PROFILE = "onnxruntime-1.30.0/cpu/x86_64-avx2-fma"; // proven for blobs-tiny (workloads/profile.ts)

/**
 * A coordinator on the manual clock. Most tests here time the off-chain bounds, which take a newcomer away only with
 * `--newcomer-failover fast`; "priced" (the default) waits for the chain's own bounds (the test that says so).
 */
async function coordinatorFor(p: Protocol, clock: ReturnType<typeof manualClock>, failover = "fast") {
  const { ctx, lines } = await testContext(p, { signer: p.coordinator, nowMs: clock.now, component: "coordinator" });
  const config = coordinatorConfig({
    "heartbeat-timeout-ms": String(TIMEOUT),
    "start-grace-ms": "0",
    "progress-floor-ms": String(FLOOR),
    "newcomer-failover": failover,
  });
  const keeper = createCoordinator(ctx, config);
  const lastSentAt = new Map<string, number>();
  /** A signed beat from `w`, at `step` for (jobId, epoch) (idle: job 0), received now. */
  const send = async (w: HDNodeWallet, jobId = 0n, epoch = 0n, step = 0) => {
    const sentAt = Math.max(clock.now(), (lastSentAt.get(w.address) ?? -1) + 1);
    lastSentAt.set(w.address, sentAt);
    const signed = await beat(w, p, sentAt, jobId, epoch, { step, profile: PROFILE });
    const r = await keeper.book.receive(signed, clock.now());
    expect(r.ok, JSON.stringify(r)).to.equal(true);
  };
  return { keeper, send, lines };
}

/** The manual clock and the chain's clock move together (whole seconds). */
async function pass(clock: ReturnType<typeof manualClock>, ms: number) {
  clock.advance(ms);
  await networkHelpers.time.increase(Math.ceil(ms / 1_000));
}

/** A job provider3 (1100) can take too. */
const PRICIER = { maxPricePerStep: 1_100n, budget: 110_000n };

const actions = (r: { sent: { decision: { jobId: bigint; action: string; provider?: string } }[] }) =>
  r.sent.map((s) => [s.decision.jobId, s.decision.action, s.decision.provider]);

describe("keepers: coordinator no starving on chain", function () {
  it("unassigns a holder that beats and heartbeats on chain without step progress; keeps one that progresses", async function () {
    const p = await load();
    await p.escrow.connect(p.owner).setTemplateApproval(BLOBS.templateId, true);
    const idleJob = await createJob(p, { templateId: BLOBS.templateId });
    const workJob = await createJob(p, { templateId: BLOBS.templateId });
    await p.escrow.connect(p.coordinator).assign(idleJob, P1.address);
    await p.escrow.connect(p.coordinator).assign(workJob, P2.address);
    const clock = manualClock(Date.now());
    const k = await coordinatorFor(p, clock);
    await k.keeper.tick(); // first sight of both (job, epoch 1): the bounds start now
    // provider2 shows 2 more steps every 2 s, and its checkpoint at 10 is accepted at the floor (progress on chain;
    // late, because the chain's clock also runs with the wall clock, which this test's clock does not).
    for (let t = 0; t <= FLOOR; t += 2_000) {
      if (t === FLOOR) await reportAndAccept(p, workJob, p.provider2, 10);
      await k.send(P1, idleJob, 1n, 0); // alive, never a step
      await k.send(P2, workJob, 1n, 2 * (t / 2_000 + 1));
      await p.escrow.connect(p.provider1).heartbeat(idleJob, 1n); // its lease keeps being extended
      expect((await k.keeper.tick()).sent, `at ${t} ms`).to.deep.equal([]); // kept up to the floor, inclusive
      if (t < FLOOR) await pass(clock, 2_000);
    }
    await pass(clock, 1);
    const r = await k.keeper.tick();
    expect(actions(r)).to.deep.equal([[idleJob, "unassign", P1.address]]);
    expect(r.sent[0].decision.reason).to.match(/^no step progress for \(job 1, epoch 1\) in 10001 ms > 10000 ms$/);
    const [ev] = await p.escrow.queryFilter(p.escrow.filters.ProviderUnassigned(idleJob));
    expect(ev.args.reason).to.equal(BigInt(UnassignReason.Coordinator));
  });

  it("priced newcomer failover (the default): a newcomer beating without progress is kept past the off-chain bounds and taken away once chain time passes its job's progress timeout: its lock goes to the client", async function () {
    const p = await load();
    await p.escrow.connect(p.owner).setTemplateApproval(BLOBS.templateId, true);
    await p.escrow.connect(p.owner).setTemplateStepBound(BLOBS.templateId, 13_000); // 10 steps: 130 s
    const job = await createJob(p, { templateId: BLOBS.templateId });
    await p.escrow.connect(p.coordinator).assign(job, P1.address);
    const { lastProgressAt, progressTimeout } = await p.escrow.jobOf(job);
    expect(progressTimeout).to.equal(130n);
    const clock = manualClock(Date.now());
    const k = await coordinatorFor(p, clock, "priced");
    await k.keeper.tick();
    const owedBefore = await p.escrow.owed(p.client.address);
    // Alive and beating, never a step: far past the 10 s off-chain floor, kept while the chain's bound runs.
    for (;;) {
      await k.send(P1, job, 1n, 0);
      const now = BigInt(await networkHelpers.time.latest());
      if (now + 10n <= lastProgressAt + progressTimeout) await p.escrow.connect(p.provider1).heartbeat(job, 1n);
      const r = await k.keeper.tick();
      const chainNow = BigInt(await networkHelpers.time.latest());
      if (chainNow > lastProgressAt + progressTimeout) {
        expect(actions(r)).to.deep.equal([[job, "unassign", P1.address]]);
        expect(r.sent[0].decision.reason).to.match(/^on probation, no progress on chain since \d+ \(timeout 130 s/);
        break;
      }
      expect(r.sent, `at chain time lastProgressAt + ${chainNow - lastProgressAt}`).to.deep.equal([]);
      expect(r.decisions.find((d) => d.jobId === job)?.reason).to.match(/^on probation: kept until/);
      await pass(clock, 10_000);
    }
    const [forfeit] = await p.escrow.queryFilter(p.escrow.filters.HoldForfeited(job));
    expect(forfeit.args.provider).to.equal(P1.address);
    expect((await p.escrow.owed(p.client.address)) - owedBefore).to.equal(forfeit.args.amount);
    expect(forfeit.args.amount > 0n).to.equal(true);
  });

  it("an idle hold: a fresh coordinator rebuilds it from events — not that job again, a back-off across jobs", async function () {
    const p = await load();
    const first = await createJob(p);
    const clock = manualClock(Date.now());
    const a = await coordinatorFor(p, clock);
    await a.send(P1);
    expect(actions(await a.keeper.tick())).to.deep.equal([[first, "assign", P1.address]]);
    await a.keeper.tick(); // first sight of (job, epoch 1)
    clock.advance(TIMEOUT + 1); // provider1 never beats for it and never reports
    expect(actions(await a.keeper.tick())).to.deep.equal([[first, "unassign", P1.address]]);

    // Restart: a new coordinator knows only the chain. Provider1 (the cheapest) is not handed that job again.
    const b = await coordinatorFor(p, clock);
    await b.send(P1);
    await b.send(P2);
    const r = await b.keeper.tick();
    expect(actions(r)).to.deep.equal([[first, "assign", P2.address]]);
    // Nor, while it backs off (60 s of chain time after one idle hold), any other job.
    const second = await createJob(p, PRICIER);
    await b.send(P1);
    await b.send(P2, first, 3n, 1);
    await b.send(P3);
    expect(actions(await b.keeper.tick())).to.deep.equal([[second, "assign", P3.address]]);
    const third = await createJob(p, PRICIER);
    await b.send(P1);
    const waiting = (await b.keeper.tick()).decisions.find((d) => d.jobId === third)!;
    expect(waiting.reason).to.contain("backing off after idle holds ×1");
    // Once the back-off is over it may take other jobs (the first one still never).
    await networkHelpers.time.increase(60);
    clock.advance(1_000);
    await b.send(P1);
    await b.send(P2, first, 3n, 2);
    await b.send(P3, second, 1n, 1);
    expect(actions(await b.keeper.tick())).to.deep.equal([[third, "assign", P1.address]]);
  });

  it("a track record wins over a new identity asking less, within 10 %; a report in the epoch is no idle hold", async function () {
    const p = await load();
    const first = await createJob(p);
    await p.escrow.connect(p.coordinator).assign(first, P2.address);
    await reportAndAccept(p, first, p.provider2, 10); // provider2: 10 accepted steps
    await p.escrow.connect(p.coordinator).unassign(first);
    // A new identity at 910: 1000 ≤ 910 × 1.1, so provider2's record wins.
    await p.registry.connect(p.provider4).register("newcomer", 910n, DeviceKind.GPU, "NVIDIA H200", 143_771);
    await depositStake(p, p.provider4);
    const clock = manualClock(Date.now());
    const k = await coordinatorFor(p, clock);
    expect(P4.address).to.equal(p.provider4.address);
    await k.send(P4);
    await k.send(P2);
    const r = await k.keeper.tick();
    expect(actions(r)).to.deep.equal([[first, "assign", P2.address]]);
    expect(r.sent[0].decision.reason).to.equal(
      "cheapest eligible of 2 (0.001000 USDC/step, 23034 MiB, track record 10 accepted steps)",
    );
  });
});
