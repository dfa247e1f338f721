/**
 * The evaluation rule (verifier/checks.ts regressionTolerance): a drop of held-out accuracy escalates to a full
 * replay only beyond the template's maxRegression plus the chance error of n held-out examples at a false-alarm
 * rate of 10⁻⁴. Honest MNIST training (real onnxruntime) never breaks it at intervals 5, 10 and 20; a real
 * regression that sampling misses still escalates and is refused by the full replay.
 */
import type { AccuracyRules } from "../../workloads/types.ts";
import { expect } from "chai";
import { honestUpload } from "../../agent/segment.ts";
import {
  createTrainer,
  FsCheckpointStore,
  initialState,
  loadTemplate,
  type EvalResult,
  type Trainer,
  type TrainingState,
  workSeed,
} from "../../workloads/index.ts";
import {
  EVAL_FALSE_ALARM_RATE,
  evaluationProblem,
  heldoutCount,
  newVerifyCache,
  regressionTolerance,
  stepsToReplay,
  verifyCheckpoint,
} from "../../verifier/checks.ts";
import { ruleEvaluator } from "../../verifier/ruleEval.ts";
import { Provider, seedOf } from "./helpers.ts";
import { useScratch } from "../helpers/scratch.ts";

const mnist = loadTemplate("mnist-mlp");
const blobs = loadTemplate("blobs-tiny");
const ev = (accuracy: number, loss = 1): EvalResult => ({ accuracy, loss });

describe("verifier evaluation rule: a false-alarm rate from the held-out sample size", function () {
  describe("the rule (pure)", function () {
    it("states its α and reads n from the template's held-out split", function () {
      expect(EVAL_FALSE_ALARM_RATE).to.equal(1e-4);
      expect(heldoutCount(mnist)).to.equal(1000);
      expect(heldoutCount(blobs)).to.equal(128);
    });

    it("passes a drop of tolerance − 0.001 and exactly the tolerance, escalates tolerance + 0.001", function () {
      for (const t of [mnist, blobs]) {
        for (const base of [0.5, 0.9, 0.97]) {
          const tol = (now: number) => regressionTolerance(t, base, now);
          // The tolerance depends on the new accuracy too: solve base − x = tol(x) by fixed-point iteration.
          let at = base - tol(base);
          for (let i = 0; i < 50; i++) at = base - tol(at);
          expect(evaluationProblem(t, ev(base), ev(at + 0.001)), `${t.descriptor.name} ${base} t−1`).to.equal(
            undefined,
          );
          expect(evaluationProblem(t, ev(base), ev(at)), `${t.descriptor.name} ${base} t`).to.equal(undefined);
          expect(evaluationProblem(t, ev(base), ev(at - 0.001)), `${t.descriptor.name} ${base} t+1`).to.match(
            /below .*maxRegression/,
          );
        }
      }
    });

    it("allows more chance error for fewer held-out examples, and never less than maxRegression", function () {
      expect(regressionTolerance(blobs, 0.9, 0.9) - 0.05).to.be.above(regressionTolerance(mnist, 0.9, 0.9) - 0.02);
      // 0.02 + 3.719 · √(2 · 0.9 · 0.1 / 1000) ≈ 0.0699
      expect(Math.abs(regressionTolerance(mnist, 0.9, 0.9) - 0.0699)).to.be.below(1e-4);
      expect(regressionTolerance(mnist, 1, 1)).to.equal(0.02);
    });

    it("escalates a non-finite loss or accuracy whatever the accuracy", function () {
      expect(evaluationProblem(mnist, ev(0.9), ev(0.95, NaN))).to.match(/loss NaN/);
      expect(evaluationProblem(mnist, ev(0.9), ev(NaN))).to.match(/accuracy NaN/);
      expect(evaluationProblem(mnist, ev(0.9), ev(0.9, Infinity))).to.match(/loss Infinity/);
    });
  });

  /*
   * ≥ 100 honest checkpoints at each interval from one real MNIST trajectory of 600 steps (where accuracy moves
   * most: it rises from 0.1 to 0.93), evaluated every 5 steps: a checkpoint of interval I is any window s − I → s
   * on that grid, i.e. a job whose accepted state is at step s − I (as after a failover, or another interval
   * schedule). 600 training steps and 121 evaluations (with the rule's own evaluator, verifier/ruleEval.ts, checked
   * against the template's evaluation graph every 100 steps). A fixed tolerance of maxRegression (0.02, the rule before)
   * escalated honest work on this trajectory (printed).
   */
  describe("honest MNIST training (real onnxruntime)", function () {
    let trainer: Trainer;
    before(async () => (trainer = await createTrainer(mnist)));
    after(() => trainer.close());

    it("never escalates: zero rule breaks over ≥ 100 honest checkpoints at each of the intervals 5, 10, 20", async function () {
      const seed = seedOf(13_006);
      const [grid, last] = [5, 600];
      const evaluate = await ruleEvaluator(mnist); // what verifyCheckpoint's rule evaluates with
      const evals = new Map<number, EvalResult>();
      let state: TrainingState = initialState(mnist, seed);
      evals.set(0, await evaluate(state));
      let worstGap = 0;
      for (let step = 1; step <= last; step++) {
        state = (await trainer.trainStep(state, seed, step)).state;
        if (step % grid === 0) evals.set(step, await evaluate(state));
        if (step % 100 === 0) {
          // The fast evaluator scores like the template's own (portable) evaluation graph.
          const portable = await trainer.evaluate(state);
          worstGap = Math.max(worstGap, Math.abs(portable.accuracy - evals.get(step)!.accuracy));
        }
      }
      expect(worstGap, "rule evaluator vs template evaluation, accuracy").to.be.at.most(1 / heldoutCount(mnist));
      const plan = [5, 10, 20].map((interval) => ({ interval, until: last }));
      const lines: string[] = [];
      for (const p of plan) {
        let checkpoints = 0;
        let oldRuleBreaks = 0;
        let worst = { drop: -1, step: 0, tolerance: 0 };
        const breaks: string[] = [];
        for (let s = p.interval; s <= p.until; s += grid) {
          const [base, now] = [evals.get(s - p.interval)!, evals.get(s)!];
          checkpoints++;
          const problem = evaluationProblem(mnist, base, now);
          if (problem) breaks.push(`step ${s}: ${problem}`);
          const drop = base.accuracy - now.accuracy;
          if (drop > (mnist.descriptor.evalRules as AccuracyRules).maxRegression) oldRuleBreaks++;
          if (drop > worst.drop)
            worst = { drop, step: s, tolerance: regressionTolerance(mnist, base.accuracy, now.accuracy) };
        }
        lines.push(
          `interval ${p.interval}: ${checkpoints} checkpoints, 0 escalations expected, ${breaks.length} found; ` +
            `worst drop ${worst.drop.toFixed(3)} at step ${worst.step} (tolerance ${worst.tolerance.toFixed(3)}); ` +
            `a fixed 0.02 would have escalated ${oldRuleBreaks}`,
        );
        expect(checkpoints).to.be.at.least(100);
        expect(breaks, `interval ${p.interval}`).to.deep.equal([]);
      }
      console.log("      " + lines.join("\n      "));
    });
  });

  describe("a real regression that sampling misses", function () {
    const scratch = useScratch("gpuchain-verifier-evaluation-", blobs);

    /*
     * Step 19 of 10 → 20 replaced by a fresh random initialisation (the work of 19 steps thrown away), step 20
     * trained honestly from it. With a budget of 0 one pool segment (steps 13–14 for this salt) and the last (step 20, from
     * the stored state 19) are replayed, and both reproduce; the held-out accuracy falls far beyond the tolerance, so the rule escalates
     * and the full replay finds step 19.
     */
    it("escalates garbage weights behind an honest last step and refuses them through the full replay", async function () {
      const store = new FsCheckpointStore(scratch.dir);
      const provider = new Provider(scratch.trainer, store);
      const job = await provider.acceptedJob(seedOf(13_100), 10);
      const start = await provider.startOf(job);
      const states: TrainingState[] = [];
      let s = start.start;
      for (let step = 11; step <= 20; step++) {
        if (step === 19) s = { ...initialState(blobs, seedOf(13_101)), step: 18 };
        s = (await scratch.trainer.trainStep(s, workSeed(job.seed, start.maker), step)).state;
        states.push(s);
      }
      const report = await provider.put(honestUpload({ ...start, states, trainedSteps: states.length, loss: 0 }));
      // The floor of one pool segment replays steps 13–14 for this salt, not the fabricated 19.
      expect(stepsToReplay(seedOf(2), 10, 20, 0)).to.deep.equal([13, 14, 20]);
      const v = await verifyCheckpoint({
        template: blobs,
        trainer: scratch.trainer,
        store,
        job,
        report,
        sampleSalt: seedOf(2),
        samples: 0,
        cache: newVerifyCache(),
      });
      expect(v.accept).to.equal(false);
      expect(v.codes).to.deep.equal(["replay-mismatch", "regression"]);
      expect(v.metrics.fullReplay).to.equal(true);
      expect(v.metrics.baselineAccuracy! - v.metrics.accuracy!).to.be.above(
        regressionTolerance(blobs, v.metrics.baselineAccuracy!, v.metrics.accuracy!),
      );
      expect(v.fault?.step).to.equal(19);
    });
  });
});
