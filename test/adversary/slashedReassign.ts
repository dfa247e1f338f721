/**
 * Before: a provider slashed for a proven fault was assigned the network's next job and slashed again.
 * Rule: a provider slashed for a proven fault is not assigned again until it has re-staked (a StakeDeposited after
 * its latest StakeSlashed; sdk/rules/restake.ts). On the real chain (the Ignition deployment, its real 2-of-3 Safe) and
 * the real coordinator (keepers/coordinator: chain view from events, decide.ts, sends): provider1 fabricates a
 * checkpoint and is slashed through `refuseWithFault` signed by two verifiers; it keeps 9 USDC of free stake, far
 * more than a lock, and is the cheapest. The next Open job goes to the honest control (provider2), not to it; a job
 * only it could take waits with a line naming its slash; a restarted coordinator (from block 0, and from the
 * `--from-block` of the first registration, as an operator passes the deployment block) decides the same; after a
 * deposit it is assigned again.
 */
import { expect } from "chai";
import { coordinatorConfig } from "../../keepers/coordinator/config.ts";
import { createCoordinator } from "../../keepers/coordinator/tick.ts";
import type { Decision } from "../../keepers/coordinator/decide.ts";
import { formatTime } from "../../sdk/words/format.ts";
import { ckpt, depositStake, faultAt, MIN_STAKE, networkHelpers, signFault, STAKE } from "../helpers/fixture.ts";
import { beat, createJob, ethers, load, manualClock, testContext, wallet, type Protocol } from "../keepers/fixture.ts";

const P1 = wallet(8); // provider1: price 900, the cheapest; it will cheat
const P2 = wallet(9); // provider2: price 1,000, the honest control

/** A coordinator (the coordinator key) scanning from `fromBlock`, and a way to send it idle beats. */
async function coordinatorOn(p: Protocol, clock: ReturnType<typeof manualClock>, fromBlock = 0) {
  const { ctx, lines } = await testContext(p, { signer: p.coordinator, nowMs: clock.now, component: "coordinator" });
  const config = coordinatorConfig({
    "heartbeat-timeout-ms": "5000",
    "start-grace-ms": "0",
    "from-block": String(fromBlock),
  });
  const keeper = createCoordinator(ctx, config);
  let sentAt = clock.now();
  const idle = async (...ws: (typeof P1)[]) => {
    for (const w of ws) expect((await keeper.book.receive(await beat(w, p, ++sentAt), clock.now())).ok).to.equal(true);
  };
  return { keeper, lines, idle };
}

const shown = (ds: Decision[]) => ds.map((d) => [d.jobId, d.action, d.provider ?? null, d.reason]);

describe("adversary: a slashed provider is not assigned again until it re-stakes", function () {
  it("the honest control gets the next job; the slashed one waits, named with its slash, also after a restart; a deposit lifts it", async function () {
    const p = await load();
    expect(P1.address).to.equal(p.provider1.address);
    expect(P2.address).to.equal(p.provider2.address);
    const clock = manualClock(Date.now());
    const follower = await coordinatorOn(p, clock);
    const registrations = await p.registry.queryFilter(p.registry.filters.ProviderRegistered());
    const deployedAt = Math.min(...registrations.map((e) => e.blockNumber));
    expect(deployedAt).to.be.greaterThan(0);

    // provider1 takes job 1 as the cheapest, reports a fabricated checkpoint, and is slashed for the proven fault.
    const first = await createJob(p);
    await follower.idle(P1);
    expect((await follower.keeper.tick()).sent.map((s) => [s.decision.provider, s.outcome.kind])).to.deep.equal([
      [P1.address, "confirmed"],
    ]);
    const hash = ckpt(first, 10, "fabricated");
    await p.escrow.connect(p.provider1).reportCheckpoint(first, 1n, 10, hash);
    const fault = faultAt(p, 7, p.verifier3.address);
    const sigs = await signFault(p, first, 1n, 10, hash, fault); // verifier1 + verifier2, through the Safe
    const tx = await p.escrow.connect(p.stranger).refuseWithFault(first, 1n, 10, hash, fault, sigs);
    const receipt = (await tx.wait())!;
    const slashes = await p.registry.queryFilter(p.registry.filters.StakeSlashed(P1.address));
    expect(slashes.map((e) => [e.blockNumber, e.args.jobId, e.args.amount])).to.deep.equal([
      [receipt.blockNumber, first, MIN_STAKE],
    ]);
    const slashedAt = formatTime((await ethers.provider.getBlock(receipt.blockNumber))!.timestamp);
    // Its own job is gone (the client cancels the reopened job); it keeps 9 USDC free: 9 locks' worth.
    await p.escrow.connect(p.client).cancel(first);
    const stake = await p.registry.stakeOf(P1.address);
    expect(stake.deposited - stake.locked - stake.unbonding).to.equal(STAKE - MIN_STAKE);

    // The next Open job: provider1 (900, stake enough) and provider2 (1,000) both beat idle. provider2 gets it.
    const next = await createJob(p);
    clock.advance(1_000);
    await follower.idle(P1, P2);
    const r = await follower.keeper.tick();
    expect(follower.keeper.chain.providers.get(P1.address.toLowerCase())!.stakeFree).to.equal(STAKE - MIN_STAKE);
    expect(r.sent.map((s) => [s.decision.jobId, s.decision.provider, s.outcome.kind])).to.deep.equal([
      [next, P2.address, "confirmed"],
    ]);
    expect((await p.escrow.jobOf(next)).provider).to.equal(P2.address);

    // A job only provider1 could take now (provider2 holds the other): it waits, and the line says why.
    const third = await createJob(p);
    clock.advance(1_000);
    await follower.idle(P1, P2);
    const waiting = await follower.keeper.tick();
    expect(waiting.sent).to.deep.equal([]);
    const line =
      `provider ${P1.address}: slashed at block ${receipt.blockNumber} (${slashedAt}) on job ${first}, ` +
      `not assigned until it re-stakes`;
    const wait = waiting.decisions.find((d) => d.jobId === third)!;
    expect(wait.action).to.equal("wait");
    expect(wait.reason).to.contain("awaiting re-stake after a slash ×1");
    expect(wait.reason).to.contain(line);
    const logged = follower.lines.find((l) => l.msg === "decision" && l.job === String(third));
    expect(String(logged?.reason)).to.contain(line);

    // Restarted coordinators rebuild the rule from events (like the stakes): from block 0, and from the first
    // registration's block as --from-block. Same decisions as the follower.
    const plan = async (c: Awaited<ReturnType<typeof coordinatorOn>>) => {
      await c.idle(P1, P2);
      return shown((await c.keeper.plan()).decisions);
    };
    const expected = await plan(follower);
    expect(expected).to.deep.include.members([[third, "wait", null, wait.reason]]);
    for (const from of [0, deployedAt]) {
      const restarted = await coordinatorOn(p, clock, from);
      expect(await plan(restarted), `restarted from block ${from}`).to.deep.equal(expected);
      expect(restarted.keeper.chain.last.stakesRead, `restarted from block ${from}: stakes folded`).to.equal(0);
    }

    // provider1 deposits again: eligible again, for the follower and for a coordinator restarted after it, once
    // the refused hold's strike has run its back-off (60 s of chain time for one strike).
    await depositStake(p, p.provider1, MIN_STAKE);
    await networkHelpers.time.increase(60);
    clock.advance(1_000);
    const restarted = await coordinatorOn(p, clock);
    const again = await plan(restarted);
    expect(again).to.deep.include.members([[third, "assign", P1.address, again.find((d) => d[0] === third)![3]]]);
    expect(await plan(follower)).to.deep.equal(again);
    const assigned = await follower.keeper.tick();
    expect(assigned.sent.map((s) => [s.decision.jobId, s.decision.provider, s.outcome.kind])).to.deep.equal([
      [third, P1.address, "confirmed"],
    ]);
    expect((await p.escrow.jobOf(third)).provider).to.equal(P1.address);
  });
});
