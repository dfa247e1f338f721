/**
 * The coordinator keeper against a simulated chain: heartbeats over HTTP, assignment, failover at the timeout
 * boundary, restart at every point of a send, two coordinators at once, flaky RPC, dropped transactions, an old
 * worker writing after reassignment, a non-coordinator key, and --dry-run.
 */
import { expect } from "chai";
import { createCoordinator } from "../../keepers/coordinator/tick.ts";
import { coordinatorConfig } from "../../keepers/coordinator/config.ts";
import { startJsonServer } from "../../keepers/http.ts";
import type { KeeperContext } from "../../keepers/chain.ts";
import { JobStatus } from "../../sdk/rules/job.ts";
import { DeviceKind, depositStake } from "../helpers/fixture.ts";
import {
  CRASH_POINTS,
  LEASE,
  barrier,
  beat,
  captureLogger,
  crashingSender,
  createJob,
  droppingSender,
  errors,
  eventCount,
  ethers,
  flakySender,
  load,
  manualClock,
  networkHelpers,
  testContext,
  warnings,
  wallet,
  type Protocol,
  type TestContextOptions,
} from "./fixture.ts";

const TIMEOUT = 5_000;
const P1 = wallet(8);
const P2 = wallet(9);
const P3 = wallet(10);

async function coordinatorFor(p: Protocol, clock: ReturnType<typeof manualClock>, o: TestContextOptions = {}) {
  const { ctx, lines } = await testContext(p, {
    signer: p.coordinator,
    nowMs: clock.now,
    component: "coordinator",
    ...o,
  });
  // No start grace here: these tests time a silent new assignee from the plain heartbeat timeout, the off-chain
  // bound every holder meets with `--newcomer-failover fast` (priced, a newcomer waits for the chain's own
  // bounds: coordinatorIdle.ts).
  const config = coordinatorConfig({
    "heartbeat-timeout-ms": String(TIMEOUT),
    "start-grace-ms": "0",
    "newcomer-failover": "fast",
  });
  const keeper = createCoordinator(ctx, config);
  // An agent's clock only moves forward: two beats in the same millisecond get distinct sentAt values.
  const lastSentAt = new Map<string, number>();
  const send = async (w = P1, jobId = 0n, epoch = 0n) => {
    const sentAt = Math.max(clock.now(), (lastSentAt.get(w.address) ?? -1) + 1);
    lastSentAt.set(w.address, sentAt);
    return keeper.book.receive(await beat(w, p, sentAt, jobId, epoch), clock.now());
  };
  return { ctx, lines, keeper, send };
}

const statusOf = async (p: Protocol, jobId: bigint) => Number(await p.escrow.statusOf(jobId));
const RUNNING = JobStatus.Running;
const OPEN = 1;

describe("keepers: coordinator on chain", function () {
  it("takes heartbeats over HTTP (200, or 400 with the reason) and assigns an Open job to the cheapest live provider", async function () {
    const p = await load();
    const jobId = await createJob(p);
    const clock = manualClock(Date.now());
    const { keeper, ctx } = await coordinatorFor(p, clock);
    const server = await startJsonServer({
      host: "127.0.0.1",
      port: 0,
      logger: ctx.logger,
      routes: { "POST /heartbeat": keeper.book.handler(clock.now) },
    });
    try {
      const post = (body: unknown) =>
        fetch(`${server.url}/heartbeat`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify(body),
        });
      const good = await beat(P2, p, clock.now());
      expect((await post(good)).status).to.equal(200);
      const replay = await post(good);
      expect(replay.status).to.equal(400);
      expect(((await replay.json()) as { reason: string }).reason).to.contain("replayed");
      const forged = { ...(await beat(P3, p, clock.now())), provider: P1.address };
      expect(((await (await post(forged)).json()) as { reason: string }).reason).to.contain("signature");
      expect((await post(await beat(P1, { ...p, chainId: 1n }, clock.now()))).status).to.equal(400);
      expect((await post({ hello: 1 })).status).to.equal(400);
      const malformed = await fetch(`${server.url}/heartbeat`, { method: "POST", body: "{not json" });
      expect(malformed.status).to.equal(400);
      expect((await post(await beat(P3, p, clock.now()))).status).to.equal(200);
    } finally {
      await server.close();
    }
    // provider1 (cheapest) never beat: provider2 (1000) beats provider3 (1100).
    const report = await keeper.tick();
    expect(report.sent.map((s) => s.outcome.kind)).to.deep.equal(["confirmed"]);
    expect((await p.escrow.jobOf(jobId)).provider).to.equal(P2.address);
  });

  it("never picks an identity without stake at risk, however cheap; offers it work once a deposit names it", async function () {
    const p = await load();
    const sybil = p.provider4; // registered at price 1, the cheapest by far, but no stake deposited
    await p.registry.connect(sybil).register("sybil", 1n, DeviceKind.GPU, "NVIDIA H200", 143_771);
    const first = await createJob(p);
    const clock = manualClock(Date.now());
    const { keeper, send } = await coordinatorFor(p, clock);
    const sybilWallet = wallet(14);
    expect(sybilWallet.address).to.equal(sybil.address);
    expect((await send(sybilWallet)).ok).to.equal(true);
    expect((await send(P1)).ok).to.equal(true);
    const report = await keeper.tick();
    // One assignment, to the staked provider: no transaction was wasted on the unstaked one (it would revert
    // JobEscrowStakeShort on chain, tick after tick).
    expect(report.sent.map((s) => [s.decision.provider, s.outcome.kind])).to.deep.equal([[P1.address, "confirmed"]]);
    expect((await p.escrow.jobOf(first)).provider).to.equal(P1.address);
    // A deposit is a registry event naming the provider: the next tick re-reads it and the sybil, now at risk,
    // gets the next job.
    await depositStake(p, sybil);
    const second = await createJob(p);
    clock.advance(1_000);
    expect((await send(sybilWallet)).ok).to.equal(true);
    expect((await keeper.tick()).sent.map((s) => s.decision.provider)).to.deep.equal([sybil.address]);
    expect((await p.escrow.jobOf(second)).provider).to.equal(sybil.address);
  });

  it("unassigns a provider silent for (job, epoch) exactly past the timeout: t and t−1 keep, t+1 unassigns", async function () {
    const p = await load();
    const jobId = await createJob(p);
    const clock = manualClock();
    const { keeper, send, lines } = await coordinatorFor(p, clock);
    await send(P1);
    await keeper.tick();
    expect(await statusOf(p, jobId)).to.equal(RUNNING);
    expect((await send(P1, jobId, 1n)).ok).to.equal(true);
    const last = clock.now();
    for (const dt of [TIMEOUT - 1, TIMEOUT]) {
      clock.set(last + dt);
      const r = await keeper.tick();
      expect(r.sent, `at t${dt - TIMEOUT}`).to.deep.equal([]);
    }
    clock.set(last + TIMEOUT + 1);
    const r = await keeper.tick();
    expect(r.sent.map((s) => [s.decision.action, s.outcome.kind])).to.deep.equal([["unassign", "confirmed"]]);
    expect(await statusOf(p, jobId)).to.equal(OPEN);
    const line = lines.find((l) => l.action === "unassign" && l.msg === "decision")!;
    expect(line).to.include({ job: "1", epoch: "1", step: 0 });
    expect(String(line.reason)).to.contain(`${TIMEOUT + 1} ms`);
  });

  it("fails over in one tick: unassigns the silent provider and, once that is mined, assigns the next one", async function () {
    const p = await load();
    const jobId = await createJob(p);
    const clock = manualClock();
    const { keeper, send } = await coordinatorFor(p, clock);
    await send(P1);
    await keeper.tick();
    expect((await p.escrow.jobOf(jobId)).provider).to.equal(P1.address);
    clock.advance(TIMEOUT + 1); // P1 falls silent; P2 beats idle
    expect((await send(P2)).ok).to.equal(true);
    const r = await keeper.tick();
    expect(r.sent.map((s) => [s.decision.action, s.decision.provider, s.outcome.kind])).to.deep.equal([
      ["unassign", P1.address, "confirmed"],
      ["assign", P2.address, "confirmed"],
    ]);
    const job = await p.escrow.jobOf(jobId);
    expect([await statusOf(p, jobId), job.provider, job.epoch]).to.deep.equal([RUNNING, P2.address, 3n]);
    expect(await eventCount(p, "ProviderAssigned")).to.equal(2);
    // Its own reason, which the chain cannot say (GET /unassignments; the dashboard shows it).
    expect(keeper.unassigns.map((u) => [u.jobId, u.epoch, u.provider])).to.deep.equal([["1", "1", P1.address]]);
    expect(keeper.unassigns[0].reason).to.match(/^no heartbeat for \(job 1, epoch 1\)/);
    // The next tick has nothing to redo: the new assignee is within its timeout.
    expect((await keeper.tick()).sent).to.deep.equal([]);
  });

  for (const point of CRASH_POINTS) {
    it(`restarted after dying ${point}: a fresh coordinator rebuilds from chain, assigns once and unassigns once`, async function () {
      const p = await load();
      const jobId = await createJob(p);
      const clock = manualClock();
      // Assign: the first keeper dies at `point`; a fresh one takes over.
      const dying = await coordinatorFor(p, clock, { sender: crashingSender(point) });
      await dying.send(P1);
      const first = await dying.keeper.tick();
      expect(first.sent[0].outcome.kind).to.equal("failed");
      const fresh = await coordinatorFor(p, clock);
      await fresh.send(P1);
      await fresh.keeper.tick();
      await fresh.keeper.tick();
      expect(await eventCount(p, "ProviderAssigned", jobId)).to.equal(1);
      expect((await p.escrow.jobOf(jobId)).provider).to.equal(P1.address);
      // Unassign: provider1 goes silent; a keeper dies at `point` while unassigning; a fresh one takes over.
      const dying2 = await coordinatorFor(p, clock, { sender: crashingSender(point) });
      await dying2.keeper.tick(); // first sight of (job, epoch 1): the timeout starts now
      clock.advance(TIMEOUT + 1);
      expect((await dying2.keeper.tick()).sent[0].decision.action).to.equal("unassign");
      const fresh2 = await coordinatorFor(p, clock);
      await fresh2.keeper.tick();
      clock.advance(TIMEOUT + 1);
      await fresh2.keeper.tick();
      expect(await eventCount(p, "ProviderUnassigned", jobId)).to.equal(1);
      expect(await statusOf(p, jobId)).to.equal(OPEN);
    });
  }

  it("two coordinators ticking at once: exactly one assignment lands, the other logs an expected race (warning)", async function () {
    const p = await load();
    const jobId = await createJob(p);
    const clock = manualClock();
    const both = barrier(2);
    const a = await coordinatorFor(p, clock, { sender: both });
    const b = await coordinatorFor(p, clock, { sender: both });
    await a.send(P2);
    await b.send(P2);
    const [ra, rb] = await Promise.all([a.keeper.tick(), b.keeper.tick()]);
    const kinds = [ra, rb].map((r) => r.sent[0].outcome.kind).sort();
    expect(kinds).to.deep.equal(["confirmed", "race"]);
    expect([ra, rb].map((r) => r.sent[0].decision.provider)).to.deep.equal([P2.address, P2.address]);
    expect(await eventCount(p, "ProviderAssigned", jobId)).to.equal(1);
    const loser = kinds[0] === "race" && ra.sent[0].outcome.kind === "race" ? a.lines : b.lines;
    expect(warnings(loser).map((l) => l.error)).to.satisfy((e: string[]) =>
      e.some((x) => x.startsWith("JobEscrowUnexpectedStatus")),
    );
    expect(errors(loser)).to.deep.equal([]);
  });

  it("retries RPC failures with backoff: failing sends and a hanging read", async function () {
    const p = await load();
    const jobId = await createJob(p);
    const clock = manualClock();
    const k = await coordinatorFor(p, clock, { sender: flakySender(2), rpcTimeoutMs: 200 });
    // The first block read hangs past the RPC timeout (then retried).
    const provider = k.ctx.provider;
    let hung = false;
    const hanging = new Proxy(provider, {
      get(target, prop, receiver) {
        if (prop === "getBlock" && !hung) {
          hung = true;
          return () => new Promise(() => {});
        }
        const v = Reflect.get(target, prop, receiver);
        return typeof v === "function" ? v.bind(target) : v;
      },
    });
    (k.ctx as { provider: KeeperContext["provider"] }).provider = hanging;
    await k.send(P1);
    const r = await k.keeper.tick();
    expect(r.sent.map((s) => s.outcome.kind)).to.deep.equal(["confirmed"]);
    expect(await eventCount(p, "ProviderAssigned", jobId)).to.equal(1);
    const retries = warnings(k.lines).map((l) => l.msg);
    expect(retries.filter((m) => m === "send failed, retrying")).to.have.length(2);
    expect(retries.filter((m) => m === "rpc read failed, retrying")).to.have.length(1);
  });

  it("a dropped transaction (sent, never mined) is redone safely by the next tick", async function () {
    const p = await load();
    const jobId = await createJob(p);
    const clock = manualClock();
    let drop = true;
    const k = await coordinatorFor(p, clock, {
      txTimeoutMs: 100,
      sender: (base) => {
        const dropped = droppingSender(base);
        return { simulate: base.simulate, send: (m, a) => (drop ? dropped.send(m, a) : base.send(m, a)) };
      },
    });
    await k.send(P1);
    const first = await k.keeper.tick();
    expect(first.sent[0].outcome.kind).to.equal("unconfirmed");
    expect(await statusOf(p, jobId)).to.equal(OPEN);
    drop = false;
    const second = await k.keeper.tick();
    expect(second.sent[0].outcome.kind).to.equal("confirmed");
    await k.keeper.tick();
    expect(await eventCount(p, "ProviderAssigned", jobId)).to.equal(1);
  });

  it("an old worker writing after reassignment is rejected (JobEscrowStaleEpoch) and changes nothing in the coordinator", async function () {
    const p = await load();
    const jobId = await createJob(p);
    const clock = manualClock();
    const k = await coordinatorFor(p, clock);
    await k.send(P1);
    await k.keeper.tick(); // provider1, epoch 1
    await k.keeper.tick(); // first sight of (job, epoch 1): its timeout starts
    clock.advance(TIMEOUT + 1);
    await k.send(P2);
    await k.keeper.tick(); // provider1 silent: unassigned (epoch 2)
    await k.keeper.tick(); // provider2 assigned (epoch 3)
    const job = await p.escrow.jobOf(jobId);
    expect([job.provider, job.epoch]).to.deep.equal([P2.address, 3n]);
    // The old worker wakes up and keeps going with epoch 1: beats and a report.
    expect((await k.send(P1, jobId, 1n)).ok).to.equal(true);
    await expect(p.escrow.connect(p.provider1).reportCheckpoint(jobId, 1n, 10, ethers.id("old")))
      .to.be.revertedWithCustomError(p.escrow, "JobEscrowStaleEpoch")
      .withArgs(jobId, 1n, 3n);
    // provider2 beats for epoch 3 and reports (so its unassignment below is not an idle hold, which would keep it
    // off this job): kept. Then it goes silent while the old worker keeps beating: unassigned.
    await k.send(P2, jobId, 3n);
    await p.escrow.connect(p.provider2).reportCheckpoint(jobId, 3n, 10, ethers.id("p2"));
    expect((await k.keeper.tick()).sent).to.deep.equal([]);
    for (let i = 0; i < 3; i++) {
      clock.advance(TIMEOUT / 2);
      await k.send(P1, jobId, 1n);
    }
    const r = await k.keeper.tick();
    expect(r.sent.map((s) => [s.decision.action, s.decision.epoch])).to.deep.equal([["unassign", 3n]]);
    // Nor does the old worker get work (even the cheapest) while it still beats for a job it lost. provider2's
    // hold ended without an accepted checkpoint (a strike): it takes the job again once its back-off (60 s) ran.
    await networkHelpers.time.increase(60);
    await k.send(P2);
    const job2 = await createJob(p);
    const ds = (await k.keeper.tick()).decisions;
    expect(ds.map((d) => [d.jobId, d.action, d.provider])).to.deep.equal([
      [jobId, "assign", P2.address],
      [job2, "wait", undefined],
    ]);
    expect(ds[1].reason).to.contain("stale heartbeat ×1");
  });

  it("with a key that is not the coordinator: never assigns, and unassigns only once the on-chain lease lapsed", async function () {
    const p = await load();
    const jobId = await createJob(p);
    await p.escrow.connect(p.coordinator).assign(jobId, P1.address);
    const clock = manualClock();
    const k = await coordinatorFor(p, clock, { signer: p.stranger });
    clock.advance(10 * TIMEOUT);
    expect((await k.keeper.tick()).sent).to.deep.equal([]);
    await networkHelpers.time.increase(LEASE + 1n);
    const r = await k.keeper.tick();
    expect(r.sent.map((s) => [s.decision.action, s.outcome.kind])).to.deep.equal([["unassign", "confirmed"]]);
    const [ev] = await p.escrow.queryFilter(p.escrow.filters.ProviderUnassigned(jobId));
    expect(ev.args.reason).to.equal(1n); // LeaseLapsed
    await k.send(P1);
    const again = await k.keeper.tick();
    expect(again.sent).to.deep.equal([]);
    expect(again.decisions[0].reason).to.contain("not the coordinator");
  });

  it("a lapsed-lease unassign overtaken by a reassignment reverts harmlessly (JobEscrowLeaseActive: a race warning)", async function () {
    const p = await load();
    const jobId = await createJob(p);
    await p.escrow.connect(p.coordinator).assign(jobId, P1.address);
    await networkHelpers.time.increase(LEASE + 1n);
    const clock = manualClock();
    const k = await coordinatorFor(p, clock, {
      signer: p.stranger,
      sender: (base) => ({
        simulate: base.simulate,
        async send(m, a) {
          // Between our decision and our send, the coordinator fails the job over to provider2.
          await p.escrow.connect(p.coordinator).unassign(jobId);
          await p.escrow.connect(p.coordinator).assign(jobId, P2.address);
          return base.send(m, a);
        },
      }),
    });
    const r = await k.keeper.tick();
    expect(r.sent.map((s) => s.outcome.kind)).to.deep.equal(["race"]);
    expect(String(warnings(k.lines).at(-1)!.error)).to.match(/^JobEscrowLeaseActive/);
    expect(errors(k.lines)).to.deep.equal([]);
    const job = await p.escrow.jobOf(jobId);
    expect([job.provider, job.epoch]).to.deep.equal([P2.address, 3n]);
  });

  it("--dry-run decides and simulates without sending a transaction", async function () {
    const p = await load();
    const jobId = await createJob(p);
    const clock = manualClock();
    const k = await coordinatorFor(p, clock, { dryRun: true });
    await k.send(P1);
    const before = await ethers.provider.getBlockNumber();
    const r = await k.keeper.tick();
    expect(r.sent.map((s) => [s.decision.action, s.outcome])).to.deep.equal([
      ["assign", { kind: "dry-run", simulation: "ok" }],
    ]);
    expect(await ethers.provider.getBlockNumber()).to.equal(before);
    expect(await statusOf(p, jobId)).to.equal(OPEN);
  });

  it("logs one line per decision with job, epoch, step, action and reason", async function () {
    const p = await load();
    await createJob(p);
    const clock = manualClock();
    const { logger, lines } = captureLogger();
    const k = await coordinatorFor(p, clock);
    void logger;
    await k.keeper.tick();
    await k.keeper.tick(); // unchanged "wait": not repeated
    const waits = k.lines.filter((l) => l.msg === "decision");
    expect(waits).to.have.length(1);
    expect(waits[0]).to.include({ job: "1", epoch: "0", step: 0, action: "wait" });
    // The provider-only rules are checked first (once per tick), so silence is named before the price.
    expect(waits[0].reason).to.equal("no eligible provider (no recent heartbeat ×3)");
    expect(lines).to.deep.equal([]);
  });
});
