/** sdk/format.ts: one way to show USDC amounts and times. */
import { expect } from "chai";
import {
  formatDeadline,
  formatDuration,
  formatPrice,
  formatTime,
  formatUsdc,
  formatWait,
  usdcAmount,
} from "../../sdk/format.ts";

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
});
