/**
 * sdk/node/events.ts on a simulated chain: the ledger read in small block chunks equals the one read in one range, and
 * narrowed to one job (by topic) or to one account's jobs it holds exactly those jobs, each as in the full ledger.
 */
import { expect } from "chai";
import { escrowLedger } from "../../sdk/node/events.ts";
import { createJob, deployProtocol, ethers, networkHelpers, submitVerdict, trainToEnd } from "../keepers/fixture.ts";

describe("sdk/events: chunked and per-job ledger reads", function () {
  it("chunks, one job, one account: the same books for what they cover", async function () {
    const p = await networkHelpers.loadFixture(deployProtocol);
    const ids = [await createJob(p), await createJob(p), await createJob(p)];
    await submitVerdict(p, ids[1], await trainToEnd(p, ids[1], p.provider1));
    await trainToEnd(p, ids[2], p.provider2);
    const last = await ethers.provider.getBlockNumber();
    const whole = await escrowLedger(p.escrow, 0, { chunk: 1_000_000 });
    const chunked = await escrowLedger(p.escrow, 0, { chunk: 3 });
    expect(chunked).to.deep.equal(whole);
    expect(whole.jobs.size).to.equal(3);

    const one = await escrowLedger(p.escrow, 0, { jobIds: [ids[1]], chunk: 7 });
    expect([...one.jobs.keys()]).to.deep.equal([ids[1]]);
    expect(one.jobs.get(ids[1])).to.deep.equal(whole.jobs.get(ids[1]));

    const provider2 = await escrowLedger(p.escrow, 0, { account: p.provider2.address, toBlock: last });
    expect([...provider2.jobs.keys()]).to.deep.equal([ids[2]]);
    expect(provider2.jobs.get(ids[2])).to.deep.equal(whole.jobs.get(ids[2]));
    const client = await escrowLedger(p.escrow, 0, { account: p.client.address });
    expect([...client.jobs.keys()].sort()).to.deep.equal(ids);
    const nobody = await escrowLedger(p.escrow, 0, { account: ethers.Wallet.createRandom().address });
    expect(nobody.jobs.size).to.equal(0);

    // With the registry's stake events folded in, the books owe what reserves() says (stakes included).
    const withStakes = await escrowLedger(p.escrow, 0, { registry: p.registry, chunk: 5 });
    expect([withStakes.held, withStakes.owes]).to.deep.equal([...(await p.escrow.reserves())]);
    expect(withStakes.totalStaked).to.equal(await p.registry.totalStaked());
  });
});
