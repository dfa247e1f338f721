/**
 * The finalizer against a simulated chain: settle after the dispute window and after the arbiter's silence,
 * claims on Settled and Cancelled jobs (providers from CheckpointAccepted events), races with someone else,
 * restart at every point of a send, the node-cron schedule without overlapping runs, the deadline watch that
 * settles in the block after the one that made a job settleable, batch boundaries, --dry-run.
 */
import { expect } from "chai";
import type { Sender } from "../../keepers/chain.ts";
import { finalizerConfig } from "../../keepers/finalizer/config.ts";
import { BATCH_MIN, sendBatched } from "../../keepers/finalizer/batch.ts";
import { derivedStatus, STALE_HEAD_SLACK_S, staleDeadline } from "../../keepers/finalizer/decide.ts";
import { createFinalizer, runFinalizer, type Finalizer } from "../../keepers/finalizer/tick.ts";
import { withdrawAll } from "../../demo/withdrawals.ts";
import {
  ARBITER_TIMEOUT,
  CRASH_POINTS,
  crashingSender,
  createJob,
  errors,
  eventCount,
  ethers,
  load,
  networkHelpers,
  reportAndAccept,
  submitVerdict,
  testContext,
  trainToEnd,
  warnings,
  type Protocol,
  type TestContextOptions,
} from "./fixture.ts";

async function finalizerFor(p: Protocol, o: TestContextOptions = {}) {
  const { ctx, lines } = await testContext(p, { signer: p.stranger, component: "finalizer", ...o });
  return { ctx, lines, finalizer: createFinalizer(ctx, { fromBlock: 0 }) };
}

/**
 * Time passes 20 s beyond the job's dispute deadline on the node and on the keeper's clock, but no block comes
 * (stock anvil, a Hardhat node): a finalizer whose clock (`clock.ms`, movable) reads the same.
 */
async function pastDeadlineWithoutBlock(p: Protocol, jobId: bigint) {
  const [, , , , deadline] = (await p.escrow.queryFilter(p.escrow.filters.VerdictSubmitted(jobId)))[0].args;
  const head = (await ethers.provider.getBlock("latest"))!;
  const lateS = Number(deadline) - head.timestamp + 20;
  await ethers.provider.send("evm_increaseTime", [lateS]);
  const clock = { ms: (head.timestamp + lateS) * 1000 };
  return { clock, ...(await finalizerFor(p, { nowMs: () => clock.ms })) };
}

/** The finalizer's loop with no cron run and a 20 ms deadline watch, until `controller` aborts. */
function watchEvery20ms(ctx: Awaited<ReturnType<typeof finalizerFor>>["ctx"], finalizer: Finalizer) {
  const controller = new AbortController();
  const config = finalizerConfig({ cron: "0 0 0 1 1 *", "watch-ms": "20" });
  return { controller, done: runFinalizer(ctx, config, controller.signal, finalizer) };
}

/** JobSettled events of the job, polled every 25 ms up to `tries` times until there is one. */
async function settlements(p: Protocol, jobId: bigint, tries: number): Promise<number> {
  let settled = 0;
  for (let i = 0; i < tries && settled === 0; i++) {
    await new Promise((r) => setTimeout(r, 25));
    settled = await eventCount(p, "JobSettled", jobId);
  }
  return settled;
}

/** `n` one-checkpoint jobs trained by provider1, each with its verdict in (settleable once the window passes). */
async function jobsWithVerdicts(p: Protocol, n: number): Promise<bigint[]> {
  const ids: bigint[] = [];
  for (let i = 0; i < n; i++) {
    const jobId = await createJob(p, { totalSteps: 10, checkpointInterval: 10, budget: 10_000n });
    await submitVerdict(p, jobId, await trainToEnd(p, jobId, p.provider1));
    ids.push(jobId);
  }
  return ids;
}

/** provider1 trains 10 steps and is unassigned; provider2 finishes; the verdict is in. */
async function jobWithVerdict(p: Protocol): Promise<bigint> {
  const jobId = await createJob(p);
  await p.escrow.connect(p.coordinator).assign(jobId, p.provider1.address);
  await reportAndAccept(p, jobId, p.provider1, 10);
  await p.escrow.connect(p.coordinator).unassign(jobId);
  await p.escrow.connect(p.coordinator).assign(jobId, p.provider2.address);
  await submitVerdict(p, jobId, await trainToEnd(p, jobId, p.provider2));
  return jobId;
}

const EARNED = { provider1: 10n * 900n, provider2: 90n * 1_000n };

describe("keepers: finalizer on chain", function () {
  it("with a confirmation depth of 2 it settles only once the first block past the window has 2 blocks on top", async function () {
    const p = await load();
    const jobId = await jobWithVerdict(p);
    const { ctx } = await testContext(p, { signer: p.stranger, component: "finalizer" });
    const finalizer = createFinalizer(ctx, { fromBlock: 0, confirmations: 2 });
    await networkHelpers.time.increase(3_601); // mines the first block past the window: t − 2
    expect((await finalizer.tick()).plan, "head t − 2").to.deep.equal([]);
    await networkHelpers.mine(1);
    expect((await finalizer.tick()).plan, "head t − 1").to.deep.equal([]);
    await networkHelpers.mine(1);
    const r = await finalizer.tick();
    expect(
      r.sent.map((s) => s.action.method),
      "head t",
    ).to.deep.equal(["settle", "claimEarnings", "claimEarnings"]);
    expect(await eventCount(p, "JobSettled", jobId)).to.equal(1);
  });

  it("settles a job once its dispute window passed and releases each provider's earnings, once", async function () {
    const p = await load();
    const jobId = await jobWithVerdict(p);
    const { finalizer } = await finalizerFor(p);
    expect((await finalizer.tick()).plan).to.deep.equal([]); // window still open
    await networkHelpers.time.increase(3_601);
    const r = await finalizer.tick();
    expect(r.sent.map((s) => [s.action.method, s.outcome.kind])).to.deep.equal([
      ["settle", "confirmed"],
      ["claimEarnings", "confirmed"],
      ["claimEarnings", "confirmed"],
    ]);
    expect(await p.escrow.owed(p.provider1.address)).to.equal(EARNED.provider1);
    expect(await p.escrow.owed(p.provider2.address)).to.equal(EARNED.provider2);
    expect(await p.escrow.owed(p.client.address)).to.equal(100_000n - EARNED.provider1 - EARNED.provider2);
    expect((await finalizer.tick()).plan).to.deep.equal([]);
    expect(await eventCount(p, "JobSettled", jobId)).to.equal(1);
    expect(await eventCount(p, "EarningsReleased", jobId)).to.equal(2);
  });

  it("reads only jobs whose status may have changed: the window's end from its event (t: no read, t+1: settles)", async function () {
    const p = await load();
    const jobId = await jobWithVerdict(p);
    const open = await createJob(p);
    const { finalizer } = await finalizerFor(p);
    expect((await finalizer.tick()).read).to.deep.equal([1n, open]); // the first run reads every job
    expect((await finalizer.tick()).read).to.deep.equal([]);
    const [, , , , deadline] = (await p.escrow.queryFilter(p.escrow.filters.VerdictSubmitted(jobId)))[0].args;
    await networkHelpers.time.setNextBlockTimestamp(deadline);
    await networkHelpers.mine();
    expect((await finalizer.tick()).read, "at the deadline").to.deep.equal([]);
    await networkHelpers.mine(); // deadline + 1
    const r = await finalizer.tick();
    // Nothing named it since its verdict was read: Settleable follows from the deadline, no read.
    expect(r.read).to.deep.equal([]);
    expect(r.derived).to.deep.equal([jobId]);
    expect(r.sent.map((s) => s.action.method)).to.deep.equal(["settle", "claimEarnings", "claimEarnings"]);
    await p.escrow.connect(p.client).cancel(open);
    expect((await finalizer.tick()).read).to.deep.equal([jobId, open]); // its own transactions, and the cancel
    expect((await finalizer.tick()).read).to.deep.equal([]);
  });

  it("many settleable jobs: settles and claims go as Multicall3 batches (2 transactions), each exactly once", async function () {
    const p = await load();
    const ids = await jobsWithVerdicts(p, 9);
    const { finalizer, lines, ctx } = await finalizerFor(p);
    await finalizer.tick();
    await networkHelpers.time.increase(3_601);
    await p.escrow.connect(p.client).settle(ids[4]); // someone else, first
    const before = await ethers.provider.getBlockNumber();
    const r = await finalizer.tick();
    const settles = r.sent.filter((s) => s.action.method === "settle");
    // The one settled by someone else needs only its claim.
    expect(settles.map((s) => s.action.jobId)).to.deep.equal(ids.filter((id) => id !== ids[4]));
    expect(settles.every((s) => s.outcome.kind === "confirmed")).to.equal(true);
    const claims = r.sent.filter((s) => s.action.method === "claimEarnings");
    expect(claims.map((s) => [s.action.jobId, s.outcome.kind])).to.deep.equal(ids.map((id) => [id, "confirmed"]));
    for (const id of ids) expect(await eventCount(p, "JobSettled", id), `job ${id}`).to.equal(1);
    for (const id of ids) expect(await eventCount(p, "EarningsReleased", id), `job ${id}`).to.equal(1);
    // One transaction of 8 settles, one of 9 claims.
    expect((await ethers.provider.getBlockNumber()) - before).to.equal(2);
    expect(lines.some((l) => l.reason === "many jobs settleable: batched through Multicall3")).to.equal(true);
    expect((await finalizer.tick()).plan).to.deep.equal([]);
    // Sent again (batches go unsimulated): one transaction in which every call fails as a race, and nothing changes.
    const again = ids.map((id) => ({ jobId: id, method: "settle" as const, args: [id] as [bigint], reason: "again" }));
    const block = await ethers.provider.getBlockNumber();
    const raced = await sendBatched(ctx, again, ctx.logger);
    expect(raced.map((s) => s.outcome.kind)).to.deep.equal(ids.map(() => "race"));
    expect(await ethers.provider.getBlockNumber()).to.equal(block + 1);
    for (const id of ids) expect(await eventCount(p, "JobSettled", id), `job ${id}`).to.equal(1);
  });

  it("a batch's outcomes come from its receipt: a job someone else settled first is a race, the others settle", async function () {
    const p = await load();
    const ids = await jobsWithVerdicts(p, BATCH_MIN + 1);
    await networkHelpers.time.increase(3_601);
    const { ctx, lines } = await finalizerFor(p);
    await p.escrow.connect(p.client).settle(ids[3]); // someone else, first
    const settle = (id: bigint) => ({ jobId: id, method: "settle" as const, args: [id] as [bigint], reason: "test" });
    const before = await ethers.provider.getBlockNumber();
    const sent = await sendBatched(ctx, ids.map(settle), ctx.logger);
    expect((await ethers.provider.getBlockNumber()) - before).to.equal(1); // one transaction, not simulated first
    expect(sent.map((s) => [s.action.jobId, s.outcome.kind])).to.deep.equal(
      ids.map((id) => [id, id === ids[3] ? "race" : "confirmed"]),
    );
    expect(warnings(lines).map((l) => [l.job, l.error])).to.deep.equal([
      [ids[3], `JobEscrowUnexpectedStatus(${ids[3]}, 7, 80)`],
    ]);
    expect(errors(lines)).to.deep.equal([]);
    for (const id of ids) expect(await eventCount(p, "JobSettled", id), `job ${id}`).to.equal(1);
    // Nothing lost: every job's earnings are there to claim.
    for (const id of ids) expect(await p.escrow.earningsOf(id, p.provider1.address), `job ${id}`).to.be.greaterThan(0n);
  });

  it("batches sized from one estimate: a later batch that runs short is redone, never lost or settled twice", async function () {
    const p = await load();
    const ids = await jobsWithVerdicts(p, 6);
    await networkHelpers.time.increase(3_601);
    const { ctx } = await finalizerFor(p);
    // The first batch (the one estimated) is cheap: two of its three calls fail at once, already settled.
    for (const id of ids.slice(0, 2)) await p.escrow.connect(p.client).settle(id);
    const settle = (id: bigint) => ({ jobId: id, method: "settle" as const, args: [id] as [bigint], reason: "test" });
    const sent = await sendBatched(ctx, ids.map(settle), ctx.logger, 3);
    const kind = new Map(sent.map((s) => [s.action.jobId, s.outcome.kind]));
    expect([kind.get(ids[0]), kind.get(ids[1]), kind.get(ids[2])]).to.deep.equal(["race", "race", "confirmed"]);
    const short = ids.slice(3).filter((id) => kind.get(id) !== "confirmed");
    expect(short.length, "the second batch's gas share is short").to.be.greaterThan(0);
    expect(
      short.map((id) => kind.get(id)),
      JSON.stringify(sent.map((s) => s.outcome)),
    ).to.deep.equal(short.map(() => "retry-later"));
    // The next run redoes exactly those.
    const again = await sendBatched(ctx, short.map(settle), ctx.logger);
    expect(again.map((s) => s.outcome.kind)).to.deep.equal(short.map(() => "confirmed"));
    for (const id of ids) expect(await eventCount(p, "JobSettled", id), `job ${id}`).to.equal(1);
  });

  it("settles after the arbiter stayed silent past 3 days: verdict stands, bond returned", async function () {
    const p = await load();
    const jobId = await jobWithVerdict(p);
    await p.escrow.connect(p.client).dispute(jobId);
    const { finalizer } = await finalizerFor(p);
    await networkHelpers.time.increase(ARBITER_TIMEOUT);
    expect((await finalizer.tick()).plan).to.deep.equal([]); // the arbiter may still decide at the deadline
    await networkHelpers.time.increase(1);
    await finalizer.tick();
    const [settled] = await p.escrow.queryFilter(p.escrow.filters.JobSettled(jobId));
    expect(settled.args.bondReturned).to.equal(50_000_000n);
    expect(await eventCount(p, "ArbiterTimedOut", jobId)).to.equal(1);
    expect(await eventCount(p, "EarningsReleased", jobId)).to.equal(2);
  });

  it("claims a provider's accepted work on a Cancelled job", async function () {
    const p = await load();
    const jobId = await createJob(p);
    await p.escrow.connect(p.coordinator).assign(jobId, p.provider1.address);
    await reportAndAccept(p, jobId, p.provider1, 10);
    await p.escrow.connect(p.coordinator).unassign(jobId);
    await p.escrow.connect(p.client).cancel(jobId);
    const { finalizer } = await finalizerFor(p);
    const r = await finalizer.tick();
    expect(r.sent.map((s) => [s.action.method, s.outcome.kind])).to.deep.equal([["claimEarnings", "confirmed"]]);
    expect(await p.escrow.owed(p.provider1.address)).to.equal(EARNED.provider1);
  });

  it("someone else settles first: an expected race (warning), and the claims still go out", async function () {
    const p = await load();
    const jobId = await jobWithVerdict(p);
    await networkHelpers.time.increase(3_601);
    let frontRun = true;
    const { finalizer, lines } = await finalizerFor(p, {
      sender: (base: Sender): Sender => ({
        simulate: base.simulate,
        async send(m, a) {
          if (m === "settle" && frontRun) {
            frontRun = false;
            await p.escrow.connect(p.client).settle(jobId);
          }
          return base.send(m, a);
        },
      }),
    });
    const r = await finalizer.tick();
    expect(r.sent.map((s) => [s.action.method, s.outcome.kind])).to.deep.equal([
      ["settle", "race"],
      ["claimEarnings", "confirmed"],
      ["claimEarnings", "confirmed"],
    ]);
    expect(warnings(lines).map((l) => l.error)).to.deep.equal([`JobEscrowUnexpectedStatus(${jobId}, 7, 80)`]);
    expect(errors(lines)).to.deep.equal([]);
    expect(await eventCount(p, "JobSettled", jobId)).to.equal(1);
  });

  for (const point of CRASH_POINTS) {
    it(`restarted after dying ${point} while settling: settles once and claims once`, async function () {
      const p = await load();
      const jobId = await jobWithVerdict(p);
      await networkHelpers.time.increase(3_601);
      const dying = await finalizerFor(p, { sender: crashingSender(point) });
      await dying.finalizer.tick();
      const fresh = await finalizerFor(p);
      await fresh.finalizer.tick();
      await fresh.finalizer.tick();
      expect(await eventCount(p, "JobSettled", jobId)).to.equal(1);
      expect(await eventCount(p, "EarningsReleased", jobId)).to.equal(2);
      expect(await p.escrow.owed(p.provider2.address)).to.equal(EARNED.provider2);
    });
  }

  it("runs on its node-cron schedule, never two runs at once, and stops cleanly", async function () {
    const p = await load();
    const jobId = await jobWithVerdict(p);
    await networkHelpers.time.increase(3_601);
    let inFlight = 0;
    let maxInFlight = 0;
    const slow = (base: Sender): Sender => ({
      simulate: base.simulate,
      async send(m, a) {
        maxInFlight = Math.max(maxInFlight, ++inFlight);
        await new Promise((r) => setTimeout(r, m === "settle" ? 1_500 : 0));
        try {
          return await base.send(m, a);
        } finally {
          inFlight--;
        }
      },
    });
    const { ctx, lines } = await testContext(p, { signer: p.stranger, component: "finalizer", sender: slow });
    const controller = new AbortController();
    const done = runFinalizer(ctx, finalizerConfig({ cron: "* * * * * *" }), controller.signal);
    await new Promise((r) => setTimeout(r, 3_200));
    controller.abort();
    expect(await done).to.equal(0);
    expect(maxInFlight).to.equal(1);
    expect(await eventCount(p, "JobSettled", jobId)).to.equal(1);
    expect(await eventCount(p, "EarningsReleased", jobId)).to.equal(2);
    expect(lines.map((l) => l.msg)).to.include.members(["started", "stopped"]);
    expect(errors(lines)).to.deep.equal([]);
  });

  it("derives statusOf's clock statuses from the deadline: t: as read, t+1: Settleable / ArbiterTimedOut", function () {
    const d = 1_000n;
    expect(derivedStatus("DisputeWindow", d, d - 1n)).to.equal(undefined);
    expect(derivedStatus("DisputeWindow", d, d)).to.equal(undefined);
    expect(derivedStatus("DisputeWindow", d, d + 1n)).to.equal("Settleable");
    expect(derivedStatus("Disputed", d, d)).to.equal(undefined);
    expect(derivedStatus("Disputed", d, d + 1n)).to.equal("ArbiterTimedOut");
    expect(derivedStatus("Settled", d, d + 1n)).to.equal("Settled");
    // Not derivable: an unknown deadline (0), a status never read, a status the clock does not move.
    expect(derivedStatus("DisputeWindow", 0n, d)).to.equal(undefined);
    expect(derivedStatus(undefined, d, d + 1n)).to.equal(undefined);
    expect(derivedStatus("Running", d, d + 1n)).to.equal(undefined);
  });

  it("watches the head: the block after the one past the window settles it, long before the next cron run", async function () {
    const p = await load();
    const jobId = await jobWithVerdict(p);
    const [, , , , deadline] = (await p.escrow.queryFilter(p.escrow.filters.VerdictSubmitted(jobId)))[0].args;
    const { ctx, finalizer, lines } = await finalizerFor(p);
    await finalizer.tick(); // learns the deadline
    const controller = new AbortController();
    // A cron run once a year: only the watch can settle it here.
    const config = finalizerConfig({ cron: "0 0 0 1 1 *", "watch-ms": "20" });
    const done = runFinalizer(ctx, config, controller.signal, finalizer);
    await networkHelpers.time.setNextBlockTimestamp(deadline);
    await networkHelpers.mine(); // t = deadline: not settleable yet
    await new Promise((r) => setTimeout(r, 300));
    expect(await eventCount(p, "JobSettled", jobId), "at the deadline").to.equal(0);
    await networkHelpers.mine(); // t + 1: settleable from this block on
    const settleable = await ethers.provider.getBlockNumber();
    let settled: number | undefined;
    for (let i = 0; i < 200 && settled === undefined; i++) {
      await new Promise((r) => setTimeout(r, 25));
      settled = (await p.escrow.queryFilter(p.escrow.filters.JobSettled(jobId)))[0]?.blockNumber;
    }
    controller.abort();
    expect(await done).to.equal(0);
    expect(settled, "settled in the very next block").to.equal(settleable + 1);
    expect(await eventCount(p, "EarningsReleased", jobId)).to.equal(2);
    expect(errors(lines)).to.deep.equal([]);
  });

  it("a node that mines only on a transaction: past the deadline with no block since, it asks for one and settles", async function () {
    const p = await load();
    const jobId = await jobWithVerdict(p);
    const { clock, ctx, finalizer, lines } = await pastDeadlineWithoutBlock(p, jobId);
    await finalizer.tick(); // learns the deadline; the head is before it: nothing to settle
    expect(await eventCount(p, "JobSettled", jobId)).to.equal(0);
    const { controller, done } = watchEvery20ms(ctx, finalizer);
    await new Promise((r) => setTimeout(r, 300));
    expect(await eventCount(p, "JobSettled", jobId), "the head has not stood still for the slack yet").to.equal(0);
    clock.ms += 16_000; // the same head for more than STALE_HEAD_SLACK_S on the keeper's clock
    const settled = await settlements(p, jobId, 200);
    controller.abort();
    expect(await done).to.equal(0);
    expect(settled, "settled after the block it asked for").to.equal(1);
    expect(lines.map((l) => l.msg)).to.include("no block since a deadline passed: asked the node to mine one");
    expect(errors(lines)).to.deep.equal([]);
  });

  it("evm_mine that fails like an outage (429 past the bound) is asked again, not taken as 'unsupported'; it settles", async function () {
    const p = await load();
    const jobId = await jobWithVerdict(p);
    const { clock, ctx, finalizer, lines } = await pastDeadlineWithoutBlock(p, jobId);
    // The first two evm_mine requests fail as an RPC outage does once sdk/node/rpc.ts gave up (HTTP 429, SERVER_ERROR).
    let outage = 2;
    const provider = ctx.provider;
    type Send = (method: string, params: unknown[]) => Promise<unknown>;
    const send: Send = async (method, params) => {
      if (method === "evm_mine" && outage-- > 0) {
        throw Object.assign(new Error("server response 429 Too Many Requests"), { code: "SERVER_ERROR" });
      }
      return (provider as unknown as { send: Send }).send(method, params);
    };
    (ctx as { provider: unknown }).provider = new Proxy(provider, {
      get: (t, k) => {
        if (k === "send") return send;
        const v = Reflect.get(t, k, t);
        return typeof v === "function" ? v.bind(t) : v;
      },
    });
    await finalizer.tick();
    const { controller, done } = watchEvery20ms(ctx, finalizer);
    await new Promise((r) => setTimeout(r, 300)); // the watch sees the head first
    clock.ms += 16_000;
    const settled = await settlements(p, jobId, 400);
    controller.abort();
    expect(await done).to.equal(0);
    expect(settled, JSON.stringify(lines.map((l) => l.msg))).to.equal(1);
    const msgs = lines.map((l) => String(l.msg));
    expect(msgs.filter((m) => m.includes("could not be asked now"))).to.have.length(2);
    expect(msgs).to.not.include(
      "no block since a deadline passed, and the node cannot be asked for one: waiting for its next",
    );
    expect(msgs).to.include("no block since a deadline passed: asked the node to mine one");
  });

  it("stale deadlines: the wall clock past deadline + slack while the head is not (t − 1, t, t + 1)", function () {
    const d = 1_000n;
    const at = d + STALE_HEAD_SLACK_S;
    expect(staleDeadline([d], d, at - 1n)).to.equal(undefined);
    expect(staleDeadline([d], d, at)).to.equal(undefined);
    expect(staleDeadline([d], d, at + 1n)).to.equal(d);
    expect(staleDeadline([d], d + 1n, at + 1n), "the head is past it: a normal run settles").to.equal(undefined);
    expect(staleDeadline([0n, 2_000n, d], 0n, 10_000n), "the earliest; an unknown deadline (0) never").to.equal(d);
  });

  it("batch boundaries: BATCH_MIN - 1 settles go one by one, BATCH_MIN in one batch, a batch size splits them", async function () {
    const p = await load();
    const ids = await jobsWithVerdicts(p, BATCH_MIN + BATCH_MIN - 1);
    await networkHelpers.time.increase(3_601);
    const few = ids.slice(0, BATCH_MIN - 1);
    const { ctx } = await finalizerFor(p);
    const { finalizer } = await finalizerFor(p);
    // Only the first BATCH_MIN - 1 are due to this finalizer: the others are settled by hand below first.
    const rest = ids.slice(BATCH_MIN - 1);
    const settle = (id: bigint) => ({ jobId: id, method: "settle" as const, args: [id] as [bigint], reason: "test" });
    let before = await ethers.provider.getBlockNumber();
    const split = await sendBatched(ctx, rest.map(settle), ctx.logger, 3); // 8 calls, 3 per batch: 3 transactions
    expect(split.map((s) => s.outcome.kind)).to.deep.equal(rest.map(() => "confirmed"));
    expect((await ethers.provider.getBlockNumber()) - before).to.equal(3);
    const hashes = new Set(split.map((s) => (s.outcome as { hash: string }).hash));
    expect(hashes.size).to.equal(3);
    before = await ethers.provider.getBlockNumber();
    const r = await finalizer.tick();
    const settles = r.sent.filter((s) => s.action.method === "settle");
    expect(settles.map((s) => s.action.jobId)).to.deep.equal(few);
    // BATCH_MIN - 1 settles and their claims, each its own transaction.
    expect((await ethers.provider.getBlockNumber()) - before).to.equal(2 * few.length + rest.length);
    for (const id of ids) expect(await eventCount(p, "JobSettled", id), `job ${id}`).to.equal(1);
  });

  it("a provider withdrawing as soon as it sees the settlement leaves the claim to the finalizer: no claim reverts (claims sent in one block raced)", async function () {
    this.timeout(60_000);
    const p = await load();
    const jobId = await jobWithVerdict(p);
    const { finalizer } = await finalizerFor(p);
    await networkHelpers.time.increase(3_601);
    const from = await ethers.provider.getBlockNumber();
    // Blocks only every 400 ms, as on a public chain: two claims sent within one block land in the same block.
    await ethers.provider.send("evm_setAutomine", [false]);
    const mining = setInterval(() => void ethers.provider.send("evm_mine", []), 400);
    try {
      const finalizing = finalizer.tick();
      // The demo's providers: withdraw the moment the settlement is on chain (demo/watch.ts returns on JobSettled).
      while ((await eventCount(p, "JobSettled", jobId)) === 0) await new Promise((r) => setTimeout(r, 10));
      await withdrawAll(p.escrow, [p.provider1, p.provider2, p.client], jobId, { claimWaitMs: 30_000, pollMs: 20 });
      const sent = (await finalizing).sent.map((s) => [s.action.method, s.outcome.kind]);
      expect(sent).to.deep.equal([
        ["settle", "confirmed"],
        ["claimEarnings", "confirmed"],
        ["claimEarnings", "confirmed"],
      ]);
    } finally {
      clearInterval(mining);
      await ethers.provider.send("evm_setAutomine", [true]);
    }
    const reverted: string[] = [];
    for (let b = from + 1; b <= (await ethers.provider.getBlockNumber()); b++) {
      for (const hash of (await ethers.provider.getBlock(b))!.transactions) {
        if ((await ethers.provider.getTransactionReceipt(hash))!.status !== 1) reverted.push(`block ${b}: ${hash}`);
      }
    }
    expect(reverted, "reverted transactions").to.deep.equal([]);
    for (const who of [p.provider1, p.provider2, p.client]) expect(await p.escrow.owed(who.address)).to.equal(0n);
    expect(await eventCount(p, "Withdrawn")).to.equal(3);
  });

  it("--dry-run decides without sending", async function () {
    const p = await load();
    const jobId = await jobWithVerdict(p);
    await networkHelpers.time.increase(3_601);
    const { finalizer } = await finalizerFor(p, { dryRun: true });
    const before = await ethers.provider.getBlockNumber();
    const r = await finalizer.tick();
    expect(r.sent.map((s) => s.outcome.kind)).to.deep.equal(["dry-run", "dry-run", "dry-run"]);
    expect(await ethers.provider.getBlockNumber()).to.equal(before);
    expect(Number(await p.escrow.statusOf(jobId))).to.equal(4); // Settleable
  });
});
