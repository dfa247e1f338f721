/**
 * Break attempts on "every provable defect is a claimable fault" (verifier/checks.ts, claims.ts,
 * workloads/segments.ts), judged together with the probation rule now on chain.
 *
 * FIXED: failed on the code as first reviewed (asserts the safe behaviour), passes now. HELD: the attack was
 * stopped already. OPEN (skipped): a known limit, written up in docs/THREATS.md, kept as its reproduction.
 */
import { expect } from "chai";
import { putUpload } from "../../agent/blobs.ts";
import { honestUpload } from "../../agent/segment.ts";
import { segmentTarget } from "../../agent/decide.ts";
import type { JobFacts } from "../../verifier/checks.ts";
import { randomSalt } from "../../verifier/economics.ts";
import {
  decodeCheckpoint,
  defaultSegmentSteps,
  initialState,
  loadTemplate,
  localProfile,
  ZERO_HASH,
  type TrainingState,
} from "../../workloads/index.ts";
import * as fx from "../helpers/fixture.ts";
import { mulberry32 } from "../helpers/random.ts";
import { useScratch } from "../helpers/scratch.ts";
import { checkerFor, firstJob, Provider } from "../verifier/helpers.ts";

const MAKER = "0x" + "5b".repeat(20);

describe("breakDefects: honest work the verifiers must refuse plainly now costs a newcomer its lock", function () {
  this.timeout(180_000);
  const template = loadTemplate("blobs-tiny");
  const scratch = useScratch("gpuchain-break-defects-", template);
  const check = () => checkerFor(scratch.trainer, scratch.store, 4);

  // OPEN (docs/THREATS.md): a plain refusal cannot tell the escrow why it refused, so an honest divergence to NaN
  // (reproduced by every replay, refused non-finite without a fault) costs a newcomer on probation its lock.
  it.skip("OPEN: an honest newcomer whose template diverges to NaN is refused plainly by every real verifier (non-finite, no fault) and the escrow then forfeits its lock to the client", async function () {
    // The verifier side (real code): honest training from a state the template diverges from.
    const seed = randomSalt(mulberry32(19));
    const init = initialState(template, seed);
    const huge: TrainingState = {
      ...init,
      step: 1,
      weights: init.weights.map((w) => ({ ...w, data: w.data.map((v) => v * 1e36 + 1e36) })),
    };
    const first = honestUpload({
      templateId: template.templateId,
      seed,
      prevCheckpointHash: ZERO_HASH,
      start: init,
      maker: MAKER,
      profile: localProfile(),
      states: [huge],
      trainedSteps: 1,
      loss: 0,
    });
    await putUpload(scratch.store, first);
    const job: JobFacts = { seed, templateId: template.templateId, acceptedStep: 1, acceptedHash: first.reportedHash };
    const provider = new Provider(scratch.trainer, scratch.store, MAKER);
    const seg = await provider.train(await provider.startOf(job), 41);
    const report = await provider.put(honestUpload(seg));
    const rand = mulberry32(20);
    for (let v = 0; v < 3; v++) {
      const verdict = await check()(job, report, randomSalt(rand));
      expect(verdict.accept).to.equal(false);
      expect(verdict.fault).to.equal(undefined); // honest: never a fault
      expect(verdict.codes).to.deep.equal(["non-finite"]);
    }
    // The chain side (real escrow): the 2-of-3 plain refusal of that honest newcomer's checkpoint.
    const p = await fx.networkHelpers.loadFixture(fx.deployProtocol);
    const jobId = await fx.startJob(p);
    const hash = fx.ckpt(jobId, 10);
    await p.escrow.connect(p.provider1).reportCheckpoint(jobId, 1n, 10, hash);
    await p.escrow.refuseCheckpoint(jobId, 1n, 10, hash, await fx.signDecision(p, jobId, 1n, 10, hash, false));
    // SAFE (P4: honest work is never refused, fenced or slashed; at least never paid for with stake).
    expect((await p.registry.stakeOf(p.provider1.address)).deposited, "honest newcomer forfeited its lock").to.equal(
      fx.STAKE,
    );
  });

  it("HELD: a taken-over job's first segment (a tenth of the interval, agent/decide.ts segmentTarget) uploaded the agent's way is accepted, not bad-segments; the interval's m for it is refused", async function () {
    const provider = new Provider(scratch.trainer, scratch.store, MAKER);
    const job = firstJob(template, randomSalt(mulberry32(21)));
    const interval = 400;
    const end = segmentTarget(0, interval, 10_000, true);
    expect(end).to.equal(40);
    const seg = await provider.train(await provider.startOf(job), end);
    const agentWay = await provider.put(honestUpload(seg));
    expect(decodeCheckpoint(await scratch.store.get(agentWay.hash)).segmentSteps).to.equal(defaultSegmentSteps(40));
    const byInterval = await provider.put(honestUpload(seg, defaultSegmentSteps(interval)));
    const rand = mulberry32(22);
    for (let v = 0; v < 3; v++) {
      const salt = randomSalt(rand);
      const ok = await check()(job, agentWay, salt);
      expect(ok.accept, ok.reasons.join("; ")).to.equal(true);
      if (defaultSegmentSteps(interval) !== defaultSegmentSteps(40)) {
        const bad = await check()(job, byInterval, salt);
        expect(bad.codes).to.deep.equal(["bad-segments"]);
      }
    }
  });
});
