/** sdk/words/format.ts: one way to show USDC amounts and times. */
import { expect } from "chai";
import {
  formatDeadline,
  formatDuration,
  formatPrice,
  formatTime,
  formatUsdc,
  formatWait,
  usdcAmount,
  usdcUnits,
} from "../../sdk/words/format.ts";
import { priceStanding } from "../../sdk/rules/jobFit.ts";

describe("sdk/format: amounts and times", function () {
  it("shows USDC with 6 fixed decimals and the unit", function () {
    expect(formatUsdc(40_000n)).to.equal("0.040000 USDC");
    expect(formatUsdc(0n)).to.equal("0.000000 USDC");
    expect(formatUsdc(1n)).to.equal("0.000001 USDC");
    expect(formatUsdc(60_000_000n)).to.equal("60.000000 USDC");
    expect(formatUsdc(-1_500_000n)).to.equal("-1.500000 USDC");
    expect(usdcAmount(123_456_789n)).to.equal("123.456789");
    expect(formatPrice(1_000n)).to.equal("0.001000 USDC/step");
  });

  it("shows times as ISO 8601 UTC to the second", function () {
    expect(formatTime(0n)).to.equal("1970-01-01T00:00:00Z");
    expect(formatTime(1_796_114_223)).to.equal("2026-12-01T08:37:03Z");
    expect(formatTime(new Date("2026-12-01T08:37:03.999Z"))).to.equal("2026-12-01T08:37:03Z");
  });

  it("shows spans with their two largest units", function () {
    expect(formatDuration(0)).to.equal("0 s");
    expect(formatDuration(59)).to.equal("59 s");
    expect(formatDuration(60)).to.equal("1 min");
    expect(formatDuration(61)).to.equal("1 min 1 s");
    expect(formatDuration(3_600)).to.equal("1 h");
    expect(formatDuration(2 * 86_400 + 3 * 3_600 + 59)).to.equal("2 d 3 h");
    expect(formatDuration(3 * 86_400)).to.equal("3 d");
  });

  it("says how long a person waits, or how long ago", function () {
    expect(formatWait(1_000 + 2 * 86_400 + 3 * 3_600, 1_000)).to.equal("in 2 d 3 h");
    expect(formatWait(1_000, 1_000)).to.equal("in 0 s");
    expect(formatWait(1_000, 1_001)).to.equal("1 s ago");
    expect(formatDeadline(86_400n, 0n)).to.equal("1970-01-02T00:00:00Z (in 1 d)");
  });

  it("reads a typed USDC amount: up to 6 decimals, above zero, else nothing", function () {
    expect(usdcUnits("0.001")).to.equal(1_000n);
    expect(usdcUnits("0.0010")).to.equal(1_000n);
    expect(usdcUnits(".5")).to.equal(500_000n);
    expect(usdcUnits("2")).to.equal(2_000_000n);
    expect(usdcUnits("0.000001")).to.equal(1n);
    for (const bad of ["", ".", "1.", "0", "0.000000", "-1", "0.0000001", "1e-3", "abc", " "]) {
      expect(usdcUnits(bad), JSON.stringify(bad)).to.equal(null);
    }
  });

  it("cheaper than N of M: only offers asking strictly more count; nothing for an unset or non-positive price", function () {
    const others = [800n, 1_000n, 1_200n];
    expect(priceStanding(999n, others)).to.deep.equal({ cheaperThan: 2, of: 3 });
    // The boundary: an equal price is not cheaper (it was counted as cheaper: "2 of 3" at 0.001000).
    expect(priceStanding(1_000n, others)).to.deep.equal({ cheaperThan: 1, of: 3 });
    expect(priceStanding(1_001n, others)).to.deep.equal({ cheaperThan: 1, of: 3 });
    expect(priceStanding(1_200n, others)).to.deep.equal({ cheaperThan: 0, of: 3 });
    expect(priceStanding(1n, others)).to.deep.equal({ cheaperThan: 3, of: 3 });
    for (const none of [null, 0n, -1n, -1_000_000n]) expect(priceStanding(none, others), String(none)).to.equal(null);
    expect(priceStanding(1_000n, [])).to.equal(null);
  });
});
