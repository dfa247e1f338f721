/**
 * Beats from fresh keys (THREATS.md, "Outsider (any key)"): a sender signing each
 * beat with a new key made the coordinator read the registry once per beat. Reads for unknown senders are now
 * capped per second (keepers/coordinator/registered.ts); a registered provider the coordinator has not seen yet
 * (registered before its scan) is still found, a second later. Real chain, real registry reads.
 */
import { expect } from "chai";
import { createServer } from "node:net";
import { Network, Wallet } from "ethers";
import { connectProtocol } from "../../sdk/node/contracts.ts";
import { JsonRpcClient } from "../../sdk/node/jsonRpc.ts";
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
    const answers = [];
    for (let i = 0; i < 3 * MAX_UNKNOWN_READS_PER_SECOND; i++) answers.push(await check(Wallet.createRandom().address));
    expect(answers.slice(0, MAX_UNKNOWN_READS_PER_SECOND).every((a) => a === false)).to.equal(true); // read: no
    expect(answers.slice(MAX_UNKNOWN_READS_PER_SECOND).every((a) => a === undefined)).to.equal(true); // not read
    // The budget is spent: a registered provider beating in the same second gets "cannot tell now" (no read).
    expect(await check(p.provider1.address)).to.equal(undefined);
    clock.advance(999);
    expect(await check(p.provider1.address)).to.equal(undefined);
    clock.advance(1);
    expect(await check(p.provider1.address), "found the next second").to.equal(true);
  });

  it("a registry read that fails is 'cannot tell now' (503 to the beat), never 'not registered'", async function () {
    const p = await load();
    const { ctx } = await testContext(p, { nowMs: manualClock().now });
    const server = createServer();
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const { port } = server.address() as { port: number };
    await new Promise<void>((r) => server.close(() => r()));
    const network = Network.from(p.chainId);
    const dead = new JsonRpcClient(`http://127.0.0.1:${port}`, network, { staticNetwork: network }, { budgetMs: 300 });
    try {
      const check = registryCheck({ ...ctx, registry: connectProtocol(p.deployment, dead).registry }, new Set());
      expect(await check(p.provider1.address)).to.equal(undefined);
      expect(await check(Wallet.createRandom().address)).to.equal(undefined);
    } finally {
      dead.destroy();
    }
  });
});
