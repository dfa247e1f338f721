/** sdk/node/fees.ts: the pure fee rules (offer, cap, replacement bump, the speed-up timer at t−1, t, t+1). */
import { expect } from "chai";
import { parseUnits } from "ethers";
import {
  bumped,
  describeFees,
  formatGwei,
  maxFeeFor,
  offer,
  parseMaxFeeGwei,
  speedUpDue,
  speedUpRule,
  worstCost,
} from "../../sdk/node/fees.ts";

const gwei = (n: string) => parseUnits(n, "gwei");

describe("sdk/fees: the fee rules", function () {
  it("offers 2 × base fee + tip, both within the cap", function () {
    expect(offer({ baseFee: gwei("1"), tip: gwei("1"), gasPrice: 0n })).to.deep.equal({
      maxFeePerGas: gwei("3"),
      maxPriorityFeePerGas: gwei("1"),
    });
    expect(offer({ baseFee: gwei("10"), tip: gwei("3"), gasPrice: 0n }, gwei("2"))).to.deep.equal({
      maxFeePerGas: gwei("2"),
      maxPriorityFeePerGas: gwei("2"),
    });
  });

  it("offers the gas price, capped, where the node has no base fee", function () {
    expect(offer({ baseFee: null, tip: 0n, gasPrice: gwei("7") })).to.deep.equal({ gasPrice: gwei("7") });
    expect(offer({ baseFee: null, tip: 0n, gasPrice: gwei("7") }, gwei("5"))).to.deep.equal({ gasPrice: gwei("5") });
  });

  it("bumps both fees by 12.5 % (rounded up), or to the node's offer when that is higher", function () {
    const prev = { maxFeePerGas: gwei("8"), maxPriorityFeePerGas: gwei("1") };
    expect(bumped(prev, { baseFee: gwei("1"), tip: gwei("1"), gasPrice: 0n })).to.deep.equal({
      maxFeePerGas: gwei("9"),
      maxPriorityFeePerGas: gwei("1.125"),
    });
    expect(bumped(prev, { baseFee: gwei("20"), tip: gwei("2"), gasPrice: 0n })).to.deep.equal({
      maxFeePerGas: gwei("42"),
      maxPriorityFeePerGas: gwei("2"),
    });
    expect(bumped({ gasPrice: 1000n }, { baseFee: null, tip: 0n, gasPrice: 0n })).to.deep.equal({ gasPrice: 1125n });
  });

  it("never bumps above the cap, and not at all when the cap leaves less than the +10 % a node accepts", function () {
    const prev = { maxFeePerGas: gwei("8"), maxPriorityFeePerGas: gwei("1") };
    const node = { baseFee: gwei("20"), tip: gwei("1"), gasPrice: 0n };
    expect(bumped(prev, node, gwei("8.8"))).to.deep.equal({
      maxFeePerGas: gwei("8.8"),
      maxPriorityFeePerGas: gwei("1.125"),
    });
    expect(bumped(prev, node, gwei("8.799999999"))).to.equal(null);
    expect(bumped(prev, node, gwei("8"))).to.equal(null);
  });

  it("the speed-up timer: blocks and time since the version was sent, at t − 1, t and t + 1", function () {
    const rule = { afterBlocks: 3, afterMs: 60_000 };
    const sent = { block: 100, ms: 1_000_000 };
    expect(speedUpDue(sent, { head: 102, ms: 1_000_000 }, rule)).to.equal(false);
    expect(speedUpDue(sent, { head: 103, ms: 1_000_000 }, rule)).to.equal(true);
    expect(speedUpDue(sent, { head: 104, ms: 1_000_000 }, rule)).to.equal(true);
    expect(speedUpDue(sent, { head: 100, ms: 1_059_999 }, rule)).to.equal(false);
    expect(speedUpDue(sent, { head: 100, ms: 1_060_000 }, rule)).to.equal(true);
    expect(speedUpDue(sent, { head: 100, ms: 1_060_001 }, rule)).to.equal(true);
  });

  it("the cap: flag, then environment, then the network's default (none locally)", function () {
    expect(maxFeeFor(31337n, undefined, {})).to.equal(undefined);
    expect(maxFeeFor(84532n, undefined, {})).to.equal(gwei("5"));
    expect(maxFeeFor(1n, undefined, {})).to.equal(gwei("200"));
    expect(maxFeeFor(31337n, undefined, { GPUCHAIN_MAX_FEE_GWEI: "0.5" })).to.equal(gwei("0.5"));
    expect(maxFeeFor(84532n, "12", { GPUCHAIN_MAX_FEE_GWEI: "0.5" })).to.equal(gwei("12"));
    for (const bad of ["0", "-1", "abc", "1.0000000001", ""]) {
      expect(() => parseMaxFeeGwei(bad, "--max-fee-gwei")).to.throw(/positive number of gwei/);
    }
  });

  it("the speed-up rule from the environment; worst cost", function () {
    expect(speedUpRule({})).to.deep.equal({ afterBlocks: 3, afterMs: 60_000 });
    expect(speedUpRule({ GPUCHAIN_SPEED_UP_BLOCKS: "2", GPUCHAIN_SPEED_UP_MS: "500" })).to.deep.equal({
      afterBlocks: 2,
      afterMs: 500,
    });
    expect(() => speedUpRule({ GPUCHAIN_SPEED_UP_BLOCKS: "0" })).to.throw(/whole number/);
    expect(formatGwei(gwei("5"))).to.equal("5");
    expect(formatGwei(4_375_000_000n)).to.equal("4.375");
    expect(describeFees({ maxFeePerGas: gwei("3"), maxPriorityFeePerGas: gwei("1") })).to.equal(
      "max fee 3 gwei (tip 1)",
    );
    expect(worstCost({ maxFeePerGas: 10n, maxPriorityFeePerGas: 1n }, 21_000n, 5n)).to.equal(210_005n);
  });
});
