// The Status page's loss lines: a provider's line breaks where it stopped and resumed, not where another
// provider's heartbeats merely overlap with its own.
import { expect } from "chai";
import { lossRuns, type LossPoint } from "../../dashboard/src/model/lossRuns.ts";

let clock = 0;
const beats = (provider: string, ...steps: number[]): LossPoint[] =>
  steps.map((step) => ({ ms: ++clock, step, loss: 1, provider }));
const spans = (points: LossPoint[]) =>
  lossRuns(points).map((r) => `${r.provider} ${r.points[0].step}–${r.points[r.points.length - 1].step}`);

describe("dashboard: the loss chart's runs per provider", function () {
  it("a refused provider training on while its replacement starts from an earlier checkpoint is one line", function () {
    // recordings/char-transformer.jsonl: mallory's step 100 refused, alice restarts from 0, mallory's last
    // heartbeat (141) arrives after alice's first
    const points = [...beats("mallory", 1, 52, 133), ...beats("alice", 1, 20), ...beats("mallory", 141)];
    points.push(...beats("alice", 60, 119), ...beats("bob", 101, 600));
    expect(spans(points)).to.deep.equal(["mallory 1–141", "alice 1–119", "bob 101–600"]);
  });

  it("a provider that takes the job back after another trained past it gets a second line", function () {
    const points = [...beats("a", 10, 20), ...beats("b", 21, 40), ...beats("a", 41, 50)];
    expect(spans(points)).to.deep.equal(["a 10–20", "b 21–40", "a 41–50"]);
  });

  it("a provider whose step goes back (it resumed from an earlier checkpoint) gets a second line", function () {
    expect(spans(beats("a", 10, 20, 5, 15))).to.deep.equal(["a 10–20", "a 5–15"]);
  });

  it("another provider's heartbeat at exactly the provider's last step does not break it; one past it does", function () {
    expect(spans([...beats("a", 10, 20), ...beats("b", 20), ...beats("a", 30)])).to.deep.equal(["a 10–30", "b 20–20"]);
    expect(spans([...beats("a", 10, 20), ...beats("b", 21), ...beats("a", 30)])).to.deep.equal([
      "a 10–20",
      "b 21–21",
      "a 30–30",
    ]);
  });

  it("orders by time, not by the order the points were folded in", function () {
    const [x, y] = beats("a", 10, 20);
    expect(spans([y, x])).to.deep.equal(["a 10–20"]);
  });
});
