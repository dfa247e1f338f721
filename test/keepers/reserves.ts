/** The reserves watch against a simulated chain: held vs owed on every new block; a failed proof in --strict. */
import { expect } from "chai";
import { AbiCoder, keccak256, toBeHex } from "ethers";
import { createReservesWatch, RESERVES_FAILED } from "../../keepers/reserves/tick.ts";
import { runLoop } from "../../sdk/run/runner.ts";
import { createJob, errors, load, networkHelpers, testContext } from "./fixture.ts";

describe("keepers: reserves watch on chain", function () {
  it("logs held and owed for every new block", async function () {
    const p = await load();
    const { ctx, lines } = await testContext(p, { component: "reserves" });
    const watch = createReservesWatch(ctx, { strict: true, maxBlocksPerTick: 50 });
    expect((await watch.tick()).checked).to.have.length(1);
    await createJob(p);
    await createJob(p);
    const r = await watch.tick();
    // reserves() counts the providers' stakes (held by the registry) as well as the escrow's budgets.
    const stakes = await p.registry.totalStaked();
    expect(r.checked.map((c) => [c.held, c.owes, c.ok])).to.deep.equal([
      [100_000n + stakes, 100_000n + stakes, true],
      [200_000n + stakes, 200_000n + stakes, true],
    ]);
    expect((await watch.tick()).checked).to.deep.equal([]);
    const total = String(200_000n + stakes);
    expect(lines.filter((l) => l.msg === "reserves").at(-1)).to.include({ held: total, owed: total, surplus: "0" });
  });

  it(`logs ${RESERVES_FAILED} when held < owed, and stops with exit code 1 in --strict`, async function () {
    const p = await load();
    await createJob(p);
    // Take 1 unit out of the escrow's token balance behind its back (ERC20 balances: mapping at slot 0).
    const slot = keccak256(AbiCoder.defaultAbiCoder().encode(["address", "uint256"], [p.deployment.escrow, 0]));
    await networkHelpers.setStorageAt(p.deployment.usdc, slot, toBeHex(99_999n, 32));
    await networkHelpers.mine();
    const { ctx, lines } = await testContext(p, { component: "reserves" });
    const lenient = createReservesWatch(ctx, { strict: false, maxBlocksPerTick: 50 });
    expect(await lenient.tick()).to.not.have.property("stop");
    const strict = createReservesWatch(ctx, { strict: true, maxBlocksPerTick: 50 });
    const code = await runLoop({
      name: "reserves",
      tick: strict.tick,
      intervalMs: 10,
      once: false,
      signal: new AbortController().signal,
      logger: ctx.logger,
    });
    expect(code).to.equal(1);
    const failed = errors(lines);
    expect(failed).to.have.length(2);
    expect(String(failed[0].msg)).to.contain(RESERVES_FAILED);
    const stakes = await p.registry.totalStaked();
    expect(failed[0]).to.include({ held: String(99_999n + stakes), owed: String(100_000n + stakes), deficit: "1" });
  });
});
