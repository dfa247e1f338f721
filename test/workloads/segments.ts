/** Segment commitments (workloads/segments.ts): what is stored, what a verifier replays, at the boundaries. */
import { expect } from "chai";
import {
  defaultSegmentSteps,
  maxSegmentSteps,
  sampleSpans,
  segmentsForBudget,
  segmentSpans,
  spanDetectionProbability,
  storedSteps,
} from "../../workloads/index.ts";

const salt = (i: number) => "0x" + i.toString(16).padStart(64, "0");

describe("workloads: segment commitments", function () {
  it("the default segment is about a twentieth of the interval, at least 2 steps from 3 steps on", function () {
    expect([1, 2, 3, 19, 20, 21, 40, 41, 100, 101, 1000].map(defaultSegmentSteps)).to.deep.equal([
      1, 1, 2, 2, 2, 2, 2, 3, 5, 6, 50,
    ]);
    expect(maxSegmentSteps(100)).to.equal(5);
  });

  it("stores the boundaries every m steps and the state before the last: n/m + 1 states with the embedded one", function () {
    expect(storedSteps(0, 100, 10)).to.deep.equal([10, 20, 30, 40, 50, 60, 70, 80, 90, 99]);
    expect(storedSteps(100, 200, 10).length + 1).to.be.at.most(100 / 10 + 1);
    expect(storedSteps(0, 6, 1)).to.deep.equal([1, 2, 3, 4, 5]);
    expect(storedSteps(0, 1, 1)).to.deep.equal([]); // one step: it replays from the accepted state
    expect(storedSteps(0, 2, 5)).to.deep.equal([1]);
    expect(storedSteps(0, 11, 10)).to.deep.equal([10]); // boundary and end − 1 coincide
    expect(storedSteps(0, 12, 10)).to.deep.equal([10, 11]);
    expect(() => storedSteps(0, 10, 0)).to.throw(RangeError);
  });

  it("segments tile the interval from the start, the last one being the single final step", function () {
    const spans = segmentSpans(20, 40, 2);
    expect(spans[0]).to.deep.equal({ from: 20, to: 22 });
    expect(spans.slice(-2)).to.deep.equal([
      { from: 38, to: 39 },
      { from: 39, to: 40 },
    ]);
    for (let i = 1; i < spans.length; i++) expect(spans[i].from).to.equal(spans[i - 1].to);
  });

  it("a budget of k steps buys k/m segments on average: floor, plus one with probability frac (t−1, t, t+1)", function () {
    expect(segmentsForBudget(3, 2, 0.49)).to.equal(2);
    expect(segmentsForBudget(3, 2, 0.5)).to.equal(1);
    expect(segmentsForBudget(3, 2, 0.51)).to.equal(1);
    expect(segmentsForBudget(25, 10, 0.49)).to.equal(3);
    expect(segmentsForBudget(25, 10, 0.5)).to.equal(2);
    expect(segmentsForBudget(10, 10, 0.99)).to.equal(1);
  });

  it("never fewer than one pool segment, whatever the budget or the salt (lazy providers)", function () {
    // Before, a budget below m replayed no pool segment with probability 1 − k/m (96 % at interval 1,000).
    for (const u of [0, 0.399, 0.4, 0.401, 0.999]) expect(segmentsForBudget(4, 10, u)).to.equal(1);
    expect(segmentsForBudget(0, 10, 0)).to.equal(1);
    expect(segmentsForBudget(4, 50, 0.99)).to.equal(1);
    for (let i = 0; i < 500; i++) expect(sampleSpans(salt(i), 0, 1000, 50, 4)).to.have.length(2);
    expect(spanDetectionProbability(0, 1000, 50, 4, 10)).to.equal(1 / 20);
    expect(spanDetectionProbability(0, 1000, 50, 0, 10)).to.equal(1 / 20);
  });

  it("samples by salt, deterministically, always with the last step, at the predicted rate", function () {
    expect(sampleSpans(salt(1), 0, 100, 10, 4)).to.deep.equal(sampleSpans(salt(1), 0, 100, 10, 4));
    let replayed = 0;
    let caught = 0;
    const trials = 4000;
    for (let i = 0; i < trials; i++) {
      const spans = sampleSpans(salt(i), 0, 100, 10, 4);
      expect(spans[spans.length - 1]).to.deep.equal({ from: 99, to: 100 });
      replayed += spans.reduce((a, s) => a + s.to - s.from, 0);
      if (spans.some((s) => s.from < 50 && 50 <= s.to)) caught++;
    }
    // Expected: one pool segment (the floor of one; nine of 10 steps and (90, 99] of 9) + the last step, and p = 1/10
    // for a step in the middle (binomial ±4 sd).
    expect(replayed / trials).to.be.within(10.8, 11);
    const p = spanDetectionProbability(0, 100, 10, 4, 50);
    expect(p).to.equal(1 / 10);
    const sd = Math.sqrt(trials * p * (1 - p));
    expect(caught).to.be.within(trials * p - 4 * sd, trials * p + 4 * sd);
    expect(spanDetectionProbability(0, 100, 10, 4, 100)).to.equal(1);
  });
});
