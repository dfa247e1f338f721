/**
 * A real slash (refuseWithFault signed 2 of 3 through the real Safe, on the simulated chain) as people read it:
 * the ledger's stake books, the provider summary's "slashed: fault at step s, found by …" with the finder named
 * from the Safe's owners, the job's narrative line, and the stake column of `npm start`'s settlement table.
 */
import { expect } from "chai";
import { Contract } from "ethers";
import {
  MIN_STAKE,
  PRICE,
  STAKE,
  ckpt,
  faultAt,
  networkHelpers,
  reportAndAccept,
  signFault,
  startJob,
  deployProtocol,
} from "../helpers/fixture.ts";
import { escrowLedger } from "../../sdk/node/events.ts";
import { formatUsdc } from "../../sdk/words/format.ts";
import { stakeBookOf } from "../../sdk/rules/ledger.ts";
import { jobNarrative, labelOf, providerSummaries, verifierNames } from "../../sdk/words/narrative.ts";
import { verifierNamesOn } from "../../sdk/node/safeOwners.ts";
import { formatTable } from "../../demo/report.ts";

/** provider1 earns one accepted checkpoint on a job, then reports a fabricated one that is slashed (fault at 17). */
async function slashedJob() {
  const p = await networkHelpers.loadFixture(deployProtocol);
  const jobId = await startJob(p);
  await reportAndAccept(p, jobId, p.provider1, 10);
  const hash = ckpt(jobId, 20, "fabricated");
  await p.escrow.connect(p.provider1).reportCheckpoint(jobId, 1n, 20, hash);
  const fault = faultAt(p, 17, p.verifier3.address);
  const sigs = await signFault(p, jobId, 1n, 20, hash, fault);
  await (await p.escrow.connect(p.stranger).refuseWithFault(jobId, 1n, 20, hash, fault, sigs)).wait();
  const ledger = await escrowLedger(p.escrow, 0, { registry: p.registry });
  return { p, jobId, ledger };
}

describe("sdk: a slash as people read it (ledger, narrative, settlement table)", function () {
  it("names the verifier Safe's owners in the Safe's order", async function () {
    const { p } = await slashedJob();
    const names = await verifierNamesOn(p.escrow.runner!, p.safeAddress);
    const safe = new Contract(p.safeAddress, ["function getOwners() view returns (address[])"], p.escrow.runner);
    const owners = (await safe.getOwners()) as string[];
    expect(owners.map((o) => o.toLowerCase())).to.have.members(p.verifiers.map((v) => v.address.toLowerCase()));
    expect(names).to.deep.equal(verifierNames(owners));
    expect(names[owners[2].toLowerCase()]).to.equal("verifier3");
    expect(labelOf(p.stranger.address, names)).to.equal(p.stranger.address);
  });

  it("the provider summary says slashed: fault at step 17, found by the finder (name and address)", async function () {
    const { p, jobId, ledger } = await slashedJob();
    const names = await verifierNamesOn(p.escrow.runner!, p.safeAddress);
    const finder = labelOf(p.verifier3.address.toLowerCase(), names);
    expect(finder).to.match(/^verifier[123] \(0x[0-9a-f]{40}\)$/);
    const [s] = providerSummaries(ledger.jobs.get(jobId)!, names);
    expect(s.provider).to.equal(p.provider1.address.toLowerCase());
    expect(s.slashed).to.equal(MIN_STAKE);
    expect(s.slash).to.deep.equal({ faultStep: 17, finder: p.verifier3.address.toLowerCase() });
    expect(s.stepsAccepted).to.equal(10);
    expect(s.earned).to.equal(0n); // the 10 accepted steps' unclaimed credits were voided
    expect(s.why).to.equal(
      `slashed: fault at step 17, found by ${finder}; ${formatUsdc(MIN_STAKE)} of stake lost, unclaimed earnings voided`,
    );
    // Without names the finder is its address.
    expect(providerSummaries(ledger.jobs.get(jobId)!)[0].why).to.contain(
      `found by ${p.verifier3.address.toLowerCase()};`,
    );
  });

  it("the narrative names the finder and the split; the stake books show the slash", async function () {
    const { p, jobId, ledger } = await slashedJob();
    const names = {
      ...(await verifierNamesOn(p.escrow.runner!, p.safeAddress)),
      [p.provider1.address.toLowerCase()]: "provider1",
    };
    const lines = jobNarrative(ledger.jobs.get(jobId)!, names);
    const slashLine = lines.find((l) => l.includes("slashed"));
    expect(slashLine).to.match(/provider1 slashed: fault at step 17, found by verifier[123];/);
    expect(slashLine).to.contain(`${formatUsdc(10n * PRICE.provider1)} of unclaimed earnings voided`);
    const book = stakeBookOf(ledger, p.provider1.address);
    expect(book).to.deep.equal({
      deposited: STAKE - MIN_STAKE,
      locked: 0n,
      unbonding: 0n,
      paidIn: STAKE,
      slashed: MIN_STAKE,
      forfeited: 0n,
    });
    const onChain = await p.registry.stakeOf(p.provider1.address);
    expect([onChain.deposited, onChain.locked]).to.deep.equal([book.deposited, book.locked]);
    expect(stakeBookOf(ledger, p.provider2.address)).to.deep.equal({
      deposited: STAKE,
      locked: 0n,
      unbonding: 0n,
      paidIn: STAKE,
      slashed: 0n,
      forfeited: 0n,
    });
    expect(stakeBookOf(ledger, p.stranger.address).deposited).to.equal(0n);
  });

  it("the settlement table has a stake column: paid in / slashed / held now per provider (not 'deposited' for two figures)", async function () {
    const { p, jobId, ledger } = await slashedJob();
    const names = await verifierNamesOn(p.escrow.runner!, p.safeAddress);
    const [s] = providerSummaries(ledger.jobs.get(jobId)!, names);
    const row = (name: string, address: string, why: string) => ({
      name,
      stepsAccepted: name === "mallory" ? s.stepsAccepted : 0,
      checkpointsRefused: name === "mallory" ? s.checkpointsRefused : 0,
      earned: name === "mallory" ? s.earned : 0n,
      withdrawn: 0n,
      stake: stakeBookOf(ledger, address),
      why,
    });
    const table = formatTable([
      row("mallory", p.provider1.address, s.why),
      row("bob", p.provider2.address, "never assigned"),
    ]);
    expect(table[0]).to.match(/withdrawn USDC {2}stake USDC paid in\/slashed\/held now {2}why$/);
    expect(table[2]).to.match(/^mallory .* 10\.000000 \/ 1\.000000 \/ 9\.000000 +slashed: fault at step 17, found by/);
    expect(table[3]).to.match(/^bob .* 10\.000000 \/ 0\.000000 \/ 10\.000000 +never assigned$/);
  });
});
