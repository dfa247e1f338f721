// The round's outer step (workloads/merge.ts) and the lanes' data order (workloads/lanes.ts).
import { expect } from "chai";
import { createTrainer, batchIndices, encodeState, loadTemplate, stateHash, workSeed } from "../../workloads/index.ts";
import type { NamedTensor, Trainer, TrainingState } from "../../workloads/index.ts";
import { NonFiniteError } from "../../workloads/errors.ts";
import {
  DILOCO_OUTER,
  initialOuterState,
  MAX_LANES,
  MergeError,
  mergeLanes,
  outerParamsFor,
  outerStateHash,
  roundStateHash,
  TODAY_OUTER,
  type OuterParams,
  type OuterState,
} from "../../workloads/merge.ts";
import { laneOrderSeed, laneSeed, runRound, trainLane, type LaneJob } from "../../workloads/lanes.ts";
import { SEED_A, SEED_B } from "./helpers.ts";

const MAKERS = ["0x" + "11".repeat(20), "0x" + "22".repeat(20), "0x" + "33".repeat(20), "0x" + "44".repeat(20)];

/** A seeded stream of u32 (xorshift32): fixtures that replay exactly. */
function xorshift(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>>= 0);
  };
}

const F32 = new Float32Array(1);
const U32 = new Uint32Array(F32.buffer);
const fromBits = (u: number) => ((U32[0] = u >>> 0), F32[0]);
const bitsOf = (f: number) => ((F32[0] = f), U32[0]);

/**
 * A float32 from `next`: mostly near `base` (weights and small updates, as training gives), sometimes any finite
 * float32 of any exponent (subnormals included), ±0, or the smallest subnormal.
 */
function value(next: () => number, base: number): number {
  const pick = next() % 16;
  if (pick === 0) return 0;
  if (pick === 1) return -0;
  if (pick === 2) return fromBits(next() % 8 === 0 ? 1 : 0x80000001);
  if (pick <= 4) {
    let f: number;
    do f = fromBits(next());
    while (!Number.isFinite(f) || Math.abs(f) > 2 ** 100);
    return f;
  }
  return Math.fround(base + ((next() / 2 ** 32) * 2 - 1) * 2 ** -(next() % 30));
}

const SHAPES = [
  { name: "w0", dims: [7, 5] },
  { name: "b0", dims: [5] },
];

function tensors(next: () => number, bases: number[]): NamedTensor[] {
  return SHAPES.map((s, p) => {
    const data = new Float32Array(s.dims.reduce((a, b) => a * b, 1));
    for (let i = 0; i < data.length; i++) data[i] = value(next, bases[i % bases.length] * (p + 1));
    return { name: s.name, dims: s.dims.slice(), data };
  });
}

const bases = (next: () => number) => Array.from({ length: 6 }, () => Math.fround(((next() / 2 ** 32) * 2 - 1) * 0.5));

/** A start state, an outer momentum and K lane end states H = 4 steps later, all from one fixture seed. */
function fixture(seed: number, K: number): { start: TrainingState; outer: OuterState; lanes: TrainingState[] } {
  const next = xorshift(seed);
  const b = bases(next);
  const start = { step: 8, weights: tensors(next, b), momentum: tensors(next, [0.01]) };
  const outer = { momentum: tensors(next, [0.001]) };
  const lanes = Array.from({ length: K }, () => ({
    step: 12,
    weights: tensors(next, b),
    momentum: tensors(next, [0.01]),
  }));
  return { start, outer, lanes };
}

const clone = (s: TrainingState): TrainingState => ({
  step: s.step,
  weights: s.weights.map((t) => ({ ...t, dims: t.dims.slice(), data: t.data.slice() })),
  momentum: s.momentum.map((t) => ({ ...t, dims: t.dims.slice(), data: t.data.slice() })),
});

const bytesEqual = (a: Uint8Array, b: Uint8Array) => Buffer.from(a).equals(Buffer.from(b));

// ---- an independent check of correct rounding (exact rationals, written apart from merge.ts) ------------------------

const units = (x: number) => BigInt(x * 2 ** 149);
const abs = (x: bigint) => (x < 0n ? -x : x);

/** Throws unless f is the float32 nearest to n/d (n in units of 2^−149), ties to even. */
function expectNearest(f: number, n: bigint, d: bigint, where: string): void {
  const dist = (g: number) => abs(units(g) * d - n);
  const mine = dist(f);
  const u = bitsOf(f);
  const neighbours = f === 0 ? [fromBits(1), fromBits(0x80000001)] : [fromBits(u + 1), fromBits(u - 1)];
  for (const g of neighbours) {
    if (!Number.isFinite(g) || (f !== 0 && bitsOf(g) >>> 31 !== u >>> 31)) continue;
    const other = dist(g);
    if (other < mine) throw new Error(`${where}: ${g} is nearer than ${f}`);
    if (other === mine && (u & 1) === 1) throw new Error(`${where}: a tie went to the odd ${f}`);
  }
}

/** Checks every element of a DiLoCo-style merge against the exact rationals (the formulas of merge.ts). */
function expectCorrectlyRounded(
  start: TrainingState,
  outer: OuterState,
  lanes: TrainingState[],
  p: OuterParams,
  got: { state: TrainingState; outer: OuterState },
): void {
  const K = BigInt(lanes.length);
  const [a, b, c, d] = [p.lr.num, p.lr.den, p.momentum.num, p.momentum.den].map(BigInt);
  start.weights.forEach((w, t) => {
    for (let i = 0; i < w.data.length; i++) {
      const S = units(w.data[i]);
      const sumL = lanes.reduce((s, l) => s + units(l.weights[t].data[i]), 0n);
      const sumM = lanes.reduce((s, l) => s + units(l.momentum[t].data[i]), 0n);
      let vNew = 0;
      if (c !== 0n) {
        vNew = got.outer.momentum[t].data[i];
        expectNearest(vNew, c * K * units(outer.momentum[t].data[i]) + d * (K * S - sumL), d * K, `v' ${t}/${i}`);
      }
      // S' = S − (a/b)·((c/d)·v' + (K·S − ΣL)/K)
      const num = b * d * K * S - a * c * K * units(vNew) - a * d * (K * S - sumL);
      expectNearest(got.state.weights[t].data[i], num, b * d * K, `S' ${t}/${i}`);
      expectNearest(got.state.momentum[t].data[i], sumM, K, `m' ${t}/${i}`);
    }
  });
}

describe("workloads: the outer merge of a round's lanes", function () {
  describe("arithmetic", function () {
    it("DiLoCo's step is the correctly rounded exact value: a worked example", function () {
      const one = (x: number) => [{ name: "w", dims: [1], data: Float32Array.of(x) }];
      const start = { step: 0, weights: one(1), momentum: one(0) };
      const lane = { step: 5, weights: one(0.5), momentum: one(0.25) };
      const r = mergeLanes(start, initialOuterState(start, DILOCO_OUTER), [lane], DILOCO_OUTER);
      // Δ = 0.5, v' = 0.9·0 + 0.5, S' = 1 − 0.7·(0.9·0.5 + 0.5) = 0.335 (67/200, rounded once)
      expect(r.outer.momentum[0].data[0]).to.equal(0.5);
      expect(r.state.weights[0].data[0]).to.equal(Math.fround(0.335));
      expect(r.state.momentum[0].data[0]).to.equal(0.25);
      expect(r.state.step).to.equal(5);
    });

    it("every element is the float32 nearest the exact rational (ties to even), for K = 1..8 and other ratios", function () {
      const params: OuterParams[] = [
        DILOCO_OUTER,
        TODAY_OUTER,
        { lr: { num: 3, den: 7 }, momentum: { num: 1, den: 3 } },
        { lr: { num: 1000, den: 999 }, momentum: { num: 999, den: 1000 } },
      ];
      for (let K = 1; K <= MAX_LANES; K++) {
        for (const p of params) {
          const { start, outer, lanes } = fixture(1000 + K, K);
          const o = p.momentum.num === 0 ? { momentum: [] } : outer;
          expectCorrectlyRounded(start, o, lanes, p, mergeLanes(start, o, lanes, p));
        }
      }
    });

    it("ties and midpoints: the fast float64 path and the BigInt path agree bit for bit", function () {
      // Lanes one float32 step apart: their mean lies exactly on a midpoint (a tie), where float64 then fround
      // would be right only by luck; plus the random fixtures, where the fast path is taken.
      const t = (xs: number[]) => [{ name: "w", dims: [xs.length], data: Float32Array.from(xs) }];
      const xs = [1, 1.5, 3, -7, 2 ** -126, 2 ** -140, fromBits(1), 1e30, -123.456];
      const up = xs.map((x) => fromBits(bitsOf(Math.fround(x)) + 1));
      const start = { step: 0, weights: t(xs.map((x) => x * 2)), momentum: t(xs.map(() => 0)) };
      const lanes = [
        { step: 1, weights: t(xs), momentum: t(xs) },
        { step: 1, weights: t(up), momentum: t(up) },
      ];
      const cases: [TrainingState, OuterState, TrainingState[]][] = [[start, { momentum: [] }, lanes]];
      for (let K = 1; K <= MAX_LANES; K++) {
        const f = fixture(2000 + K, K);
        cases.push([f.start, f.outer, f.lanes]);
      }
      for (const [s, o, ls] of cases) {
        const p = o.momentum.length ? DILOCO_OUTER : { lr: { num: 1, den: 1 }, momentum: { num: 0, den: 1 } };
        const fast = mergeLanes(s, o, ls, p);
        const slow = mergeLanes(s, o, ls, p, { forceExact: true });
        expect(bytesEqual(encodeState(fast.state), encodeState(slow.state))).to.equal(true);
        expect(outerStateHash(fast.outer)).to.equal(outerStateHash(slow.outer));
        expectCorrectlyRounded(s, o, ls, p, fast);
      }
      // the tie itself: the mean of x and its upper neighbour rounds to the even one of the two
      const mean = mergeLanes(start, { momentum: [] }, lanes, TODAY_OUTER);
      const m = mean.state.momentum[0].data;
      for (let i = 0; i < xs.length; i++) {
        const x = Math.fround(xs[i]);
        expect(bitsOf(m[i]) & 1, `element ${i}`).to.equal(0);
        expect([x, up[i]]).to.include(m[i]);
      }
    });

    it("exactness: the lanes in any arrival order, once sorted by lane, give identical bytes", function () {
      const { start, outer, lanes } = fixture(77, 4);
      const tagged = lanes.map((state, lane) => ({ lane, state }));
      const arrivals = [
        [2, 0, 3, 1],
        [3, 2, 1, 0],
        [1, 3, 0, 2],
      ];
      const ref = mergeLanes(start, outer, lanes, DILOCO_OUTER);
      for (const order of arrivals) {
        const arrived = order.map((i) => ({ ...tagged[i], state: clone(tagged[i].state) }));
        const sorted = arrived.sort((x, y) => x.lane - y.lane).map((x) => x.state);
        const r = mergeLanes(start, outer, sorted, DILOCO_OUTER);
        expect(bytesEqual(encodeState(r.state), encodeState(ref.state))).to.equal(true);
        expect(outerStateHash(r.outer)).to.equal(outerStateHash(ref.outer));
        // and the exact sum is commutative: even unsorted lanes give the same bytes
        const u = mergeLanes(start, outer, arrived.map((x) => x.state).reverse(), DILOCO_OUTER);
        expect(bytesEqual(encodeState(u.state), encodeState(ref.state))).to.equal(true);
      }
      // the inputs were not touched
      expect(stateHash(fixture(77, 4).start)).to.equal(stateHash(start));
    });

    it("K = 1 under TODAY_OUTER returns the lane's end state bit for bit (−0, subnormals, extremes too)", function () {
      for (let seed = 1; seed <= 20; seed++) {
        const { start, lanes } = fixture(seed, 1);
        lanes[0].weights[0].data[0] = -0;
        lanes[0].weights[0].data[1] = fromBits(0x80000001);
        lanes[0].momentum[1].data[0] = -0;
        const outer = initialOuterState(start, TODAY_OUTER);
        expect(outer.momentum).to.deep.equal([]);
        const r = mergeLanes(start, outer, lanes, TODAY_OUTER);
        expect(bytesEqual(encodeState(r.state), encodeState(lanes[0]))).to.equal(true);
        expect(Object.is(r.state.weights[0].data[0], -0)).to.equal(true);
        expect(r.outer.momentum).to.deep.equal([]);
        expect(roundStateHash(r.state, r.outer)).to.equal(stateHash(lanes[0]));
      }
      expect(outerParamsFor(1)).to.deep.equal(TODAY_OUTER);
      expect(outerParamsFor(2)).to.deep.equal(DILOCO_OUTER);
    });

    it("K = 1 under DiLoCo's 0.7/0.9 is a different job: its state differs from the lane's", function () {
      const { start, outer, lanes } = fixture(5, 1);
      const r = mergeLanes(start, outer, lanes, DILOCO_OUTER);
      expect(stateHash(r.state)).to.not.equal(stateHash(lanes[0]));
    });

    it("the outer state's hash covers the momentum: one bit changes it and the round's state hash", function () {
      const { start, outer, lanes } = fixture(9, 2);
      const r = mergeLanes(start, outer, lanes, DILOCO_OUTER);
      const h = outerStateHash(r.outer);
      const rh = roundStateHash(r.state, r.outer);
      expect(rh).to.not.equal(stateHash(r.state));
      const flipped: OuterState = { momentum: r.outer.momentum.map((t) => ({ ...t, data: t.data.slice() })) };
      const last = flipped.momentum[1].data;
      last[last.length - 1] = fromBits(bitsOf(last[last.length - 1]) ^ 1);
      expect(outerStateHash(flipped)).to.not.equal(h);
      expect(roundStateHash(r.state, flipped)).to.not.equal(rh);
      // the momentum feeds the next step: a different momentum gives a different S_{r+2}
      const bumped: OuterState = {
        momentum: r.outer.momentum.map((t) => ({ ...t, data: t.data.map((v) => v + 0.25) })),
      };
      const next = fixture(10, 2).lanes.map((l) => ({ ...l, step: r.state.step + 4 }));
      const a = mergeLanes(r.state, r.outer, next, DILOCO_OUTER);
      const b = mergeLanes(r.state, bumped, next, DILOCO_OUTER);
      expect(stateHash(a.state)).to.not.equal(stateHash(b.state));
      expect(outerStateHash(a.outer)).to.not.equal(outerStateHash(b.outer));
      expect(outerStateHash(r.outer)).to.equal(h); // unchanged by the merges
    });
  });

  describe("bad input", function () {
    const { start, outer, lanes } = fixture(3, 2);
    const code = (f: () => unknown, c: string, words: RegExp) => {
      expect(f).to.throw(MergeError, words);
      try {
        f();
      } catch (e) {
        expect((e as MergeError).code).to.equal(c);
      }
    };

    it("K = 0 and K > 8 lanes are refused", function () {
      code(() => mergeLanes(start, outer, [], DILOCO_OUTER), "LANE_COUNT", /1 to 8 lanes, got 0/);
      const nine = Array.from({ length: 9 }, () => lanes[0]);
      code(() => mergeLanes(start, outer, nine, DILOCO_OUTER), "LANE_COUNT", /1 to 8 lanes, got 9/);
      code(() => outerParamsFor(0), "LANE_COUNT", /got 0/);
      code(() => laneOrderSeed(SEED_A, 9, 0, 0, MAKERS[0]), "LANE_COUNT", /got 9/);
    });

    it("mismatched shapes, names and tensor counts are refused, naming the tensor", function () {
      const bad = clone(lanes[1]);
      bad.weights[0] = { name: "w0", dims: [5, 7], data: bad.weights[0].data };
      code(
        () => mergeLanes(start, outer, [lanes[0], bad], DILOCO_OUTER),
        "SHAPE",
        /lane 1's weights tensor 0 is w0 \[5,7\]/,
      );
      const renamed = clone(lanes[0]);
      renamed.momentum[1].name = "other";
      code(
        () => mergeLanes(start, outer, [renamed, lanes[1]], DILOCO_OUTER),
        "SHAPE",
        /lane 0's inner state tensor 1 is other/,
      );
      const short = { momentum: outer.momentum.slice(0, 1) };
      code(() => mergeLanes(start, short, lanes, DILOCO_OUTER), "SHAPE", /outer momentum has 1 tensors/);
      const wrongLength = clone(lanes[0]);
      wrongLength.weights[1].data = new Float32Array(4);
      code(() => mergeLanes(start, outer, [wrongLength], DILOCO_OUTER), "SHAPE", /\(4 values\)/);
    });

    it("lanes at different steps, or not past the round's start, are refused", function () {
      const late = { ...lanes[1], step: 13 };
      code(
        () => mergeLanes(start, outer, [lanes[0], late], DILOCO_OUTER),
        "STEP",
        /lane 1 is at step 13, lane 0 at 12/,
      );
      const stale = lanes.map((l) => ({ ...l, step: 8 }));
      code(() => mergeLanes(start, outer, stale, DILOCO_OUTER), "STEP", /round started at step 8/);
    });

    it("bad outer parameters and an outer state without momentum are refused; NaN is refused", function () {
      const p = (lr: [number, number], mu: [number, number]) => ({
        lr: { num: lr[0], den: lr[1] },
        momentum: { num: mu[0], den: mu[1] },
      });
      code(() => mergeLanes(start, outer, lanes, p([0.7, 1], [9, 10])), "PARAMS", /learning rate/);
      code(() => mergeLanes(start, outer, lanes, p([0, 1], [9, 10])), "PARAMS", /learning rate/);
      code(() => mergeLanes(start, outer, lanes, p([7, 10], [10, 10])), "PARAMS", /below 1/);
      code(() => mergeLanes(start, outer, lanes, p([7, 1001], [9, 10])), "PARAMS", /1000/);
      code(() => mergeLanes(start, outer, lanes, TODAY_OUTER), "OUTER_STATE", /keeps no outer state/);
      const nan = clone(lanes[1]);
      nan.weights[1].data[2] = NaN;
      expect(() => mergeLanes(start, outer, [lanes[0], nan], DILOCO_OUTER)).to.throw(NonFiniteError, /lane 1 b0/);
      const huge = clone(lanes[0]);
      huge.weights[0].data.fill(-3e38);
      const big = clone(start);
      big.weights[0].data.fill(3e38);
      expect(() => mergeLanes(big, outer, [huge], DILOCO_OUTER)).to.throw(NonFiniteError, /merged/);
    });
  });

  describe("lane data order", function () {
    const t = loadTemplate("mnist-mlp");
    const base = laneSeed(SEED_A, 3, 1, MAKERS[0]);

    it("is a pure function of (job seed, round, lane, maker), each of which changes it", function () {
      expect(laneSeed(SEED_A, 3, 1, MAKERS[0])).to.equal(base);
      expect(laneSeed(SEED_A, 3, 1, MAKERS[0].toUpperCase().replace("0X", "0x"))).to.equal(base);
      const others = [
        laneSeed(SEED_B, 3, 1, MAKERS[0]),
        laneSeed(SEED_A, 4, 1, MAKERS[0]),
        laneSeed(SEED_A, 3, 2, MAKERS[0]),
        laneSeed(SEED_A, 3, 1, MAKERS[1]),
        workSeed(SEED_A, MAKERS[0]),
      ];
      expect(new Set([base, ...others]).size).to.equal(6);
      for (const s of [base, ...others]) expect(s).to.match(/^0x[0-9a-f]{64}$/);
    });

    it("lanes of one round draw different batches; K = 1 trains on today's workSeed", function () {
      const step = 3 * 25 + 1;
      const batches = [0, 1, 2, 3].map((k) =>
        Array.from(batchIndices(t, laneOrderSeed(SEED_A, 4, 3, k, MAKERS[0]), step)),
      );
      for (let i = 0; i < 4; i++)
        for (let j = i + 1; j < 4; j++) expect(batches[i], `lanes ${i}, ${j}`).to.not.deep.equal(batches[j]);
      // each lane's order walks an epoch permutation: no row twice within the round's 25 steps
      const seen = new Set<number>();
      const lane0 = laneOrderSeed(SEED_A, 4, 3, 0, MAKERS[0]);
      for (let s = 3 * 25 + 1; s <= 4 * 25; s++) for (const r of batchIndices(t, lane0, s)) seen.add(r);
      expect(seen.size).to.equal(25 * t.descriptor.globalBatch);
      for (const round of [0, 5])
        expect(laneOrderSeed(SEED_A, 1, round, 0, MAKERS[2])).to.equal(workSeed(SEED_A, MAKERS[2]));
    });

    it("refuses a lane outside 0..7 or the job's lanes, a negative round, a bad maker", function () {
      expect(() => laneSeed(SEED_A, 0, 8, MAKERS[0])).to.throw(RangeError, /0\.\.7/);
      expect(() => laneSeed(SEED_A, 0, -1, MAKERS[0])).to.throw(RangeError);
      expect(() => laneSeed(SEED_A, -1, 0, MAKERS[0])).to.throw(RangeError);
      expect(() => laneSeed(SEED_A, 0, 0, "0x1234")).to.throw(TypeError, /address/);
      expect(() => laneOrderSeed(SEED_A, 2, 0, 2, MAKERS[0])).to.throw(RangeError, /lane 2 of a 2-lane job/);
    });
  });

  describe("rounds on the real trainer (blobs-tiny, onnxruntime)", function () {
    const t = loadTemplate("blobs-tiny");
    let tr: Trainer;
    before(async () => {
      tr = await createTrainer(t);
    });
    after(() => tr?.close());

    it("K = 1 rounds are today's job: the same state hash as plain steps on workSeed after every round", async function () {
      const job: LaneJob = { seed: SEED_A, lanes: 1, innerSteps: 4, outer: outerParamsFor(1) };
      let state = tr.initialState(SEED_A);
      let outer = initialOuterState(state, job.outer);
      let plain = tr.initialState(SEED_A);
      for (let round = 0; round < 3; round++) {
        ({ state, outer } = await runRound(tr, job, state, outer, [MAKERS[1]]));
        plain = await trainLane(tr, plain, workSeed(SEED_A, MAKERS[1]), 4);
        expect(roundStateHash(state, outer)).to.equal(stateHash(plain));
        expect(bytesEqual(encodeState(state), encodeState(plain))).to.equal(true);
      }
      expect(state.step).to.equal(12);
    });

    it("a K = 4 DiLoCo round replays to the same bytes; its lanes differ; a verifier recomputes S_{r+1} exactly", async function () {
      const job: LaneJob = { seed: SEED_B, lanes: 4, innerSteps: 3, outer: outerParamsFor(4) };
      const run = async () => {
        const s0 = tr.initialState(SEED_B);
        const r0 = await runRound(tr, job, s0, initialOuterState(s0, job.outer), MAKERS);
        const r1 = await runRound(tr, job, r0.state, r0.outer, MAKERS);
        return { r0, r1 };
      };
      const a = await run();
      const b = await run();
      expect(roundStateHash(a.r1.state, a.r1.outer)).to.equal(roundStateHash(b.r1.state, b.r1.outer));
      expect(bytesEqual(encodeState(a.r1.state), encodeState(b.r1.state))).to.equal(true);
      expect(new Set(a.r1.lanes.map(stateHash)).size).to.equal(4);
      for (const l of a.r1.lanes) expect(stateHash(l)).to.not.equal(stateHash(a.r1.state));
      expect(a.r1.state.step).to.equal(6);
      expect(a.r0.outer.momentum.some((m) => m.data.some((v) => v !== 0))).to.equal(true);
      // the verifier's check: S_{r+1} from S_r, the outer state and the accepted lanes alone
      const again = mergeLanes(a.r0.state, a.r0.outer, a.r1.lanes, job.outer);
      expect(roundStateHash(again.state, again.outer)).to.equal(roundStateHash(a.r1.state, a.r1.outer));
      expectCorrectlyRounded(a.r0.state, a.r0.outer, a.r1.lanes, job.outer, again);
    });
  });
});
