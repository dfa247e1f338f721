// The probation rule in words (sdk/rules/probation.ts): the lock one hold puts at risk, as `gpuchain provide` and the
// Provide compute page state it.
import { expect } from "chai";
import { holdLock, probationLine, probationNote } from "../../sdk/rules/probation.ts";

describe("probation: what a hold puts at risk, in words", function () {
  it("a hold locks price × interval, at least the registry's minimum", function () {
    expect(holdLock(1_000_000n, 1_000n, 100n)).to.equal(1_000_000n);
    expect(holdLock(1_000_000n, 1_000n, 5_000n)).to.equal(5_000_000n);
  });

  it("gpuchain provide's line names the minimum at risk and who gets it", function () {
    expect(probationLine(1_000_000n)).to.equal(
      "probation: until your first accepted checkpoint, a hold that ends without one forfeits its lock " +
        "(at least 1.000000 USDC; price × the job's checkpoint interval when larger) to the job's client",
    );
  });

  it("the page's sentence computes the interval up to which the minimum is the lock at the typed price", function () {
    expect(probationNote(1_000_000n, 1_000n)).to.match(
      /forfeits its lock to the job's client: at least 1\.000000 USDC \(for a checkpoint interval of up to 1000 steps at your price; price × interval beyond\)\.$/,
    );
    expect(probationNote(1_000_000n, null)).to.match(/: at least 1\.000000 USDC\.$/);
    expect(probationNote(1_000_000n, 2_000_000n)).to.match(/your price × the job's checkpoint interval\.$/);
  });
});
