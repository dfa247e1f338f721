/** sdk/rules/jobFit.ts: why a job waits, by the escrow's own assign rules (boundaries at t-1, t, t+1). */
import { expect } from "chai";
import { describeWait, jobFit, type JobTerms, type Offer } from "../../sdk/rules/jobFit.ts";

const offer = (pricePerStep: bigint, memoryMiB = 1_024, active = true): Offer => ({
  address: `0x${pricePerStep}`,
  pricePerStep,
  memoryMiB,
  active,
});
// 100 steps at most 1000/step: needs 100 × price of the budget.
const job = (over: Partial<JobTerms> = {}): JobTerms => ({
  totalSteps: 100,
  acceptedStep: 0,
  maxPricePerStep: 1_000n,
  budget: 100_000n,
  paid: 0n,
  ...over,
});

describe("sdk/jobFit: why a job waits", function () {
  it("fits an offer at exactly the max price and exactly the budget", function () {
    expect(jobFit(job(), [offer(1_000n)]).fitting).to.have.length(1);
  });

  it("price one unit above the max: above every offer, naming the cheapest", function () {
    const fit = jobFit(job({ maxPricePerStep: 999n }), [offer(1_000n), offer(1_200n)]);
    expect(fit.fitting).to.deep.equal([]);
    expect(fit.reasons).to.deep.equal([{ kind: "price above every offer", cheapest: 1_000n, maxPricePerStep: 999n }]);
    expect(describeWait(fit.reasons[0])).to.equal(
      "the max price 0.000999 USDC/step is below every offer (the cheapest asks 0.001000 USDC/step)",
    );
  });

  it("budget one unit short at the cheapest price: budget short, with the steps it covers", function () {
    const fit = jobFit(job({ budget: 99_999n }), [offer(1_000n)]);
    expect(fit.reasons).to.deep.equal([
      { kind: "budget short", cheapest: 1_000n, needed: 100_000n, available: 99_999n, stepsAffordable: 99n },
    ]);
    expect(describeWait(fit.reasons[0])).to.contain("covers 99 steps");
    expect(jobFit(job({ budget: 100_001n }), [offer(1_000n)]).reasons).to.deep.equal([]);
  });

  it("counts only the remaining steps and the budget left", function () {
    expect(jobFit(job({ acceptedStep: 50, paid: 60_000n }), [offer(1_000n)]).reasons[0].kind).to.equal("budget short");
    expect(jobFit(job({ acceptedStep: 50, paid: 50_000n }), [offer(1_000n)]).reasons).to.deep.equal([]);
  });

  it("memory: needs at least what the coordinator asks (t-1 refused, t fits)", function () {
    expect(jobFit(job({ memoryNeedMiB: 1_025 }), [offer(1_000n, 1_024)]).reasons).to.deep.equal([
      { kind: "memory", needMiB: 1_025, largestMiB: 1_024 },
    ]);
    expect(jobFit(job({ memoryNeedMiB: 1_024 }), [offer(1_000n, 1_024)]).reasons).to.deep.equal([]);
  });

  it("inactive offers do not count", function () {
    expect(jobFit(job(), [offer(500n, 4_096, false)]).reasons).to.deep.equal([{ kind: "no active provider" }]);
    expect(jobFit(job(), []).reasons).to.deep.equal([{ kind: "no active provider" }]);
  });
});
