/**
 * Detection matrix: each fault class × several job seeds, each faulty checkpoint checked by three verifiers that
 * sample independently, decided by a 2-of-3 quorum with fault claims (one verifier's reproduced catch is enough,
 * and slashes; matrix.ts); honest checkpoints alongside. Prints the matrix.
 *
 * Certain classes are refused by every verifier whatever it samples: integrity (hash, format, NaN, template,
 * seed, step, link to the accepted checkpoint), the hash chain (start state, stored segment-boundary states), or the
 * last step, which every verifier always replays (garbage weights, skipped steps, wrong data on every step).
 * A write from a fenced worker never reaches a verifier: the escrow rejects it (stale epoch) and keeps only the
 * current epoch's pending report (test/verifier/runner.ts shows the verifier dropping a report whose epoch moved).
 */
import { expect } from "chai";
import { createTrainer, loadTemplate, type Trainer } from "../../workloads/index.ts";
import { CERTAIN_CASES, formatRows, runMatrix, SAMPLING_CASES, type MatrixRow } from "./matrix.ts";

const INTERVAL = 20;
const SAMPLES = 3;

describe("verifier detection matrix: faults × seeds × three independently sampling verifiers", function () {
  const rows: MatrixRow[] = [];
  const trainers = new Map<string, Trainer>();
  const trainerFor = async (name: string) => {
    if (!trainers.has(name)) trainers.set(name, await createTrainer(loadTemplate(name)));
    return trainers.get(name)!;
  };
  after(async function () {
    console.log("\n" + formatRows(rows) + "\n");
    for (const t of trainers.values()) await t.close();
  });

  // MNIST states are 400 kB each (one blob per step), so its segments are shorter to keep the suite fast.
  for (const [template, seeds, honestSeeds, interval] of [
    ["blobs-tiny", 4, 8, INTERVAL],
    ["mnist-mlp", 2, 4, 10],
  ] as const) {
    it(`${template}: refuses every certain fault class by quorum in 100 % of ${seeds} seeds each`, async function () {
      const got = await runMatrix(
        { template, cases: CERTAIN_CASES, trials: seeds, interval, samples: SAMPLES, seedBase: 10_000 },
        await trainerFor(template),
      );
      rows.push(...got);
      for (const r of got) {
        expect(r.quorumRefusals, `${template} ${r.kind}`).to.equal(r.trials);
        expect(r.verifierRefusals, `${template} ${r.kind}: every single verifier refuses`).to.equal(r.checks);
        // A replayed step that does not reproduce is a provable fault: claimed, reproduced, slashed. Anything
        // else (a blob that does not hash to the report, NaN, an undecodable blob, a wrong link) never slashes.
        const provable = (r.codes["replay-mismatch"] ?? 0) === r.checks;
        expect(r.slashes, `${template} ${r.kind} slashes`).to.equal(provable ? r.trials : 0);
        expect(r.unreproducedClaims, `${template} ${r.kind}`).to.equal(0);
      }
      expect(got.find((r) => r.kind === "hash-mismatch")!.slashes, "hash-mismatch never slashes").to.equal(0);
      expect(got.find((r) => r.kind === "garbage-weights")!.slashes).to.equal(seeds);
    });

    it(`${template}: accepts every honest checkpoint of ${honestSeeds} seeds: zero false refusals by any verifier`, async function () {
      const [r] = await runMatrix(
        { template, cases: ["honest"], trials: honestSeeds, interval, samples: SAMPLES, seedBase: 20_000 },
        await trainerFor(template),
      );
      rows.push(r);
      expect(r.verifierRefusals, JSON.stringify(r.codes)).to.equal(0);
      expect(r.quorumRefusals).to.equal(0);
      expect(r.slashes).to.equal(0);
      expect(r.escalations, "honest work escalated to a full replay").to.equal(0);
    });
  }

  /*
   * Sampling-based classes: ONE bad step (perturbed weights, or one batch of wrong data) in the middle of a
   * checkpoint of n = 20 steps, every later step honest from the bad state. Only replaying that very step shows
   * it. States are stored every m = 2 steps (workloads/segments.ts), so a verifier with a budget of k = 3 steps
   * replays k/m = 1.5 whole segments on average (1 or 2, by its salt) among the 10 before the always-replayed
   * last one, and catches the bad step with p = spanDetectionProbability = 1.5/10 = 15 %: the same as sampling
   * 3 single steps with every state stored (3/20), at the same expected compute (about 3.85 + 1 replayed steps).
   * With fault claims one catch is enough: the finder claims the step, the other two reproduce it with one
   * step's replay and sign, so the quorum refuses (and slashes) with q = 1 − (1 − p)³ ≈ 38.6 %, where two
   * independent catches alone gave 3p²(1 − p) + p³ ≈ 6 %. The salts are deterministic (keys × reports), so the
   * figures are fixed; the bounds are ±4 binomial standard deviations around the expectation.
   * Sampling bounds the *expected* loss: a provider cheating on one step per interval is refused (and loses its
   * stake) in q of the intervals; raising k raises p by whole segments.
   */
  it("blobs-tiny: one bad step among 20 is refused by the quorum whenever any one verifier catches it (≈ 38.6 %)", async function () {
    const got = await runMatrix(
      {
        template: "blobs-tiny",
        cases: SAMPLING_CASES,
        trials: 40,
        interval: INTERVAL,
        samples: SAMPLES,
        seedBase: 30_000,
      },
      await trainerFor("blobs-tiny"),
    );
    rows.push(...got);
    const within = (x: number, n: number, p: number, what: string) => {
      const sd = Math.sqrt(n * p * (1 - p));
      expect(x, what).to.be.within(n * p - 4 * sd, n * p + 4 * sd);
    };
    for (const r of got) {
      within(r.verifierRefusals - r.escalatedRefusals, r.checks, r.expectedVerifierRate!, `${r.kind} verifier catches`);
      // The claim rule: every catch is reproduced by the other two, so each caught checkpoint is refused.
      expect(r.quorumRefusals, `${r.kind}: refused iff any verifier caught it`).to.equal(r.anyRefusals);
      expect(r.slashes, `${r.kind}: every claim-backed refusal slashes`).to.equal(r.quorumRefusals);
      expect(r.unreproducedClaims, r.kind).to.equal(0);
      expect(r.quorumRefusals).to.be.at.least(r.independentQuorumRefusals);
      within(r.quorumRefusals, r.trials, r.expectedAnyRate!, `${r.kind} quorum refusals (any of three)`);
    }
  });
});
