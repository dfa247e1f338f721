/**
 * sdk/rules/reserves.ts on a simulated chain: the parts of what the escrow and the registry owe — locked budgets, bonds,
 * withdrawable balances and stakes — add up to `reserves().owes` (before, the parts people saw left the
 * stakes out, so they did not add up), and are said with 6 decimals.
 */
import { expect } from "chai";
import { owedParts, readReserves, type ReservesSource } from "../../sdk/rules/reserves.ts";
import { createJob, deployProtocol, networkHelpers, submitVerdict, trainToEnd } from "../keepers/fixture.ts";

describe("sdk/reserves: proof of reserves with stakes", function () {
  it("the owed parts add up to what reserves() owes, stakes included", async function () {
    const p = await networkHelpers.loadFixture(deployProtocol);
    const ids = [await createJob(p), await createJob(p)];
    await submitVerdict(p, ids[1], await trainToEnd(p, ids[1], p.provider1));
    const r = await readReserves({ escrow: p.escrow, registry: p.registry } as unknown as ReservesSource);
    expect(r.staked).to.equal(await p.registry.totalStaked());
    expect(r.staked > 0n, "the fixture's providers staked").to.equal(true);
    expect(r.locked + r.bonds + r.withdrawable + r.staked).to.equal(r.owes);
    expect(r.held >= r.owes).to.equal(true);
    const text = owedParts(r);
    expect(text).to.match(
      /^locked budgets \d+\.\d{6} USDC \+ bonds \d+\.\d{6} USDC \+ withdrawable \d+\.\d{6} USDC \+ stakes \d+\.\d{6} USDC$/,
    );
  });
});
