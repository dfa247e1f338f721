/**
 * Issue 19 (low), "every signed beat from a fresh key costs the coordinator a registry read": a sender signing each
 * beat with a new key made the coordinator read the registry once per beat. Reads for unknown senders are now
 * capped per second (keepers/coordinator/registered.ts); a registered provider the coordinator has not seen yet
 * (registered before its scan) is still found, a second later. Real chain, real registry reads.
 */
import { expect } from "chai";
import { Wallet } from "ethers";
import { MAX_UNKNOWN_READS_PER_SECOND, registryCheck } from "../../keepers/coordinator/registered.ts";
import { load, manualClock, testContext } from "../keepers/fixture.ts";

describe("adversary: fresh keys cannot buy the coordinator a registry read per beat", function () {
  it("past the cap an unknown sender waits a second; the registered one is then found", async function () {
    const p = await load();
    const clock = manualClock();
    const { ctx } = await testContext(p, { nowMs: clock.now });
    const check = registryCheck(ctx, new Set()); // as a restarted coordinator that knows no provider yet
    // Control: with the budget untouched, a registered provider unknown to the scan is found by one read.
    expect(await check(p.provider2.address)).to.equal(true);
    clock.advance(1_000);
    // The attack: a burst of beats, each from a fresh key, in one second.
    for (let i = 0; i < 3 * MAX_UNKNOWN_READS_PER_SECOND; i++)
      expect(await check(Wallet.createRandom().address)).to.equal(false);
    // The budget is spent: a registered provider beating in the same second gets "cannot tell now" (no read).
    expect(await check(p.provider1.address)).to.equal(false);
    clock.advance(999);
    expect(await check(p.provider1.address)).to.equal(false);
    clock.advance(1);
    expect(await check(p.provider1.address), "found the next second").to.equal(true);
  });
});
