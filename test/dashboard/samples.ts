/**
 * The text a language template's verifiers sample from each accepted checkpoint reaches the
 * dashboard's state from their "checkpoint decided" lines (live and recorded alike); a refused checkpoint's never.
 */
import { expect } from "chai";
import { foldAll } from "../../dashboard/src/model/state.ts";
import type { Entry } from "../../sdk/run/recording.ts";

const decided = (ms: number, verifier: string, step: number, action: string, sample?: string): Entry =>
  ({
    ms,
    kind: "log",
    source: verifier,
    data: { component: "verifier", msg: "checkpoint decided", job: "1", epoch: 1, step, action, accuracy: 0.4, sample },
  }) as Entry;

describe("dashboard: text samples of accepted checkpoints", function () {
  it("keeps one sample per accepted step, in step order; refused checkpoints add none", function () {
    const s = foldAll([
      decided(1, "verifier1", 200, "accept", "The the sea"),
      decided(2, "verifier2", 200, "accept", "The the sea"),
      decided(3, "verifier1", 100, "accept", "the the the"),
      decided(4, "verifier1", 300, "refuse", "garbage"),
      decided(5, "verifier1", 400, "accept"),
    ]);
    expect(s.samples.get("1")).to.deep.equal([
      { step: 100, text: "the the the" },
      { step: 200, text: "The the sea" },
    ]);
  });
});
