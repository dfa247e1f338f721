/** sdk/node/confirmations.ts: the confirmation-depth rule at the boundary (t − 1, t, t + 1) and its defaults. */
import { expect } from "chai";
import {
  confirmationsFor,
  confirmedBlock,
  CONFIRMATIONS_ENV,
  isConfirmed,
  parseConfirmations,
} from "../../sdk/node/confirmations.ts";

describe("sdk/confirmations: when a block is final for money actions", function () {
  it("a block is confirmed from head = block + depth on, not one block earlier", function () {
    for (const depth of [0, 1, 3]) {
      const block = 100;
      const t = block + depth; // the first head at which it is final
      expect(isConfirmed(block, t - 1, depth), `depth ${depth}, head t-1`).to.equal(false);
      expect(isConfirmed(block, t, depth), `depth ${depth}, head t`).to.equal(true);
      expect(isConfirmed(block, t + 1, depth), `depth ${depth}, head t+1`).to.equal(true);
      expect(confirmedBlock(t, depth)).to.equal(block);
    }
    expect(confirmedBlock(1, 3)).to.equal(-1);
  });

  it("defaults per network, the environment overrides them, an explicit flag overrides both", function () {
    expect(confirmationsFor(31337n, undefined, {})).to.equal(0);
    expect(confirmationsFor(84532n, undefined, {})).to.equal(3);
    expect(confirmationsFor(12345, undefined, {})).to.equal(3);
    expect(confirmationsFor(84532n, undefined, { [CONFIRMATIONS_ENV]: "0" })).to.equal(0);
    expect(confirmationsFor(31337n, undefined, { [CONFIRMATIONS_ENV]: "5" })).to.equal(5);
    expect(confirmationsFor(31337n, 2, { [CONFIRMATIONS_ENV]: "5" })).to.equal(2);
    expect(() => confirmationsFor(1, undefined, { [CONFIRMATIONS_ENV]: "-1" })).to.throw(/whole number/);
    expect(() => parseConfirmations("2.5", "--confirmations")).to.throw(/--confirmations/);
  });
});
