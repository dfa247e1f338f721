/**
 * Detection matrix: each fault class × several job seeds, each faulty checkpoint checked by three verifiers that
 * sample independently, decided by a 2-of-3 quorum; honest checkpoints alongside. Prints the matrix.
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
      }
    });

    it(`${template}: accepts every honest checkpoint of ${honestSeeds} seeds: zero false refusals by any verifier`, async function () {
      const [r] = await runMatrix(
        { template, cases: ["honest"], trials: honestSeeds, interval, samples: SAMPLES, seedBase: 20_000 },
        await trainerFor(template),
      );
      rows.push(r);
      expect(r.verifierRefusals, JSON.stringify(r.codes)).to.equal(0);
      expect(r.quorumRefusals).to.equal(0);
    });
  }

  /*
   * Sampling-based classes: ONE bad step (perturbed weights, or one batch of wrong data) in the middle of a
   * checkpoint of n = 20 steps, every later step honest from the bad state. Only replaying that very step shows
   * it. States are stored every m = 2 steps (workloads/segments.ts), so a verifier with a budget of k = 3 steps
   * replays k/m = 1.5 whole segments on average (1 or 2, by its salt) among the 10 before the always-replayed
   * last step, and catches the bad step with p = spanDetectionProbability = 1.5/10 = 15 %: the same as sampling
   * 3 single steps with every state stored (3/20), at the same expected compute (about 3.85 + 1 replayed steps).
   * A 2-of-3 quorum refuses it only if two independent verifiers catch it: q = 3p²(1 − p) + p³ ≈ 6 %. (The
   * evaluation rule escalates to a full replay when accuracy drops beyond the template's tolerance, which can only
   * add detections; counted apart as "escalated".) The salts are deterministic (keys × reports), so the figures
   * are fixed; the bounds are ±4 binomial standard deviations around the expectation.
   * Sampling bounds the *expected* loss: a provider cheating on one step per interval is refused in q of the
   * intervals; raising k raises p by whole segments.
   */
  it("blobs-tiny: one bad step among 20 is refused at the rate spanDetectionProbability predicts", async function () {
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
    for (const r of got) {
      const p = r.expectedVerifierRate!;
      const bySampling = r.verifierRefusals - r.escalatedRefusals;
      const sd = Math.sqrt(r.checks * p * (1 - p));
      expect(bySampling, `${r.kind} verifier catches`).to.be.within(r.checks * p - 4 * sd, r.checks * p + 4 * sd);
      const q = r.expectedQuorumRate!;
      const qsd = Math.sqrt(r.trials * q * (1 - q));
      expect(r.quorumRefusals, `${r.kind} quorum refusals`).to.be.within(
        0,
        r.trials * q + 4 * qsd + r.escalatedRefusals,
      );
    }
  });
});
