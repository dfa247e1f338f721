/**
 * Partial fabrication: a provider trains an honest prefix of the interval, commits every later boundary as a copy
 * of the prefix's last state and trains only the last step. Before, a verifier whose sample hit a copied span found
 * a state labelled with the wrong step and refused plainly (no fault, no claim), so 2 of 3 had to find it, and the
 * provider picked a short segment length so that few did: 84 % of such checkpoints were paid at interval 1,000.
 * Now every verifier reads every committed boundary state, a defective one (another label, undecodable, other
 * shapes, non-finite) is proven by replaying up to it, so ONE verifier's finding is a fault claim the others
 * reproduce with one step (slashable); and the segment length is fixed by the interval. Real trainer (onnxruntime
 * replays), real file store, real verifier checks and claim re-checks; honest controls.
 */
import { expect } from "chai";
import { mkdir, unlink } from "node:fs/promises";
import { putUpload } from "../../agent/blobs.ts";
import { honestUpload } from "../../agent/segment.ts";
import { prefixCopyUpload, type CopyVariant } from "../../bench/fabrication.ts";
import type { JobFacts, Report } from "../../verifier/checks.ts";
import { publishEvidence, recheckClaim } from "../../verifier/claims.ts";
import { randomSalt } from "../../verifier/economics.ts";
import { claimMessage, type CheckpointItem } from "../../verifier/work.ts";
import {
  decodeCheckpoint,
  FsBackend,
  defaultSegmentSteps,
  initialState,
  loadTemplate,
  localProfile,
  storedSteps,
  ZERO_HASH,
  type TrainingState,
} from "../../workloads/index.ts";
import { mulberry32 } from "../helpers/random.ts";
import { useScratch } from "../helpers/scratch.ts";
import { checkerFor, firstJob, Provider, verifierWallets } from "../verifier/helpers.ts";

const MAKER = "0x" + "5a".repeat(20);
const SAMPLES = 4; // the deployed --samples

describe("adversary: partial fabrication is a slashable fault for ONE verifier", function () {
  this.timeout(120_000);
  const template = loadTemplate("blobs-tiny");
  const scratch = useScratch("gpuchain-adversary-partial-", template);

  /** The job, report and claimable item of an upload of steps 0..n stored for a fresh job of `seed`. */
  async function reported(upload: Awaited<ReturnType<typeof prefixCopyUpload>>, seed: string) {
    await putUpload(scratch.store, upload);
    const job: JobFacts = firstJob(template, seed);
    const report: Report = { step: upload.step, hash: upload.reportedHash, provider: MAKER };
    const item: CheckpointItem = {
      kind: "checkpoint",
      key: `partial-${upload.reportedHash}`,
      jobId: 1n,
      epoch: 1n,
      step: report.step,
      hash: report.hash,
      templateId: template.templateId,
      seed,
      acceptedStep: 0,
      acceptedHash: ZERO_HASH,
      provider: MAKER,
    };
    return { job, report, item };
  }

  const check = () => checkerFor(scratch.trainer, scratch.store, SAMPLES);

  for (const [variant, n, prefix] of [
    ["prefix-copy", 100, 75],
    ["prefix-copy", 1000, 500],
    ["poisoned", 100, 50],
  ] as [CopyVariant, number, number][]) {
    it(`prefix-then-copy (${variant}) at interval ${n}, ${n - prefix} steps copied: each verifier alone finds a fault the other two reproduce`, async function () {
      const rand = mulberry32(n + prefix);
      const seed = randomSalt(rand);
      const upload = await prefixCopyUpload(scratch.trainer, seed, n, prefix, MAKER, variant);
      const { job, report, item } = await reported(upload, seed);
      const wallets = verifierWallets();
      for (const [finder, wallet] of wallets.entries()) {
        const v = await check()(job, report, randomSalt(rand));
        // Before: accepted when the sample missed the copied spans, else a plain refusal (no fault to claim).
        expect(v.accept, `verifier ${finder + 1}`).to.equal(false);
        expect(v.fault, `verifier ${finder + 1}: ${v.reasons.join("; ")}`).to.not.equal(undefined);
        expect(v.codes[0]).to.equal("replay-mismatch");
        expect(v.fault!.step).to.be.above(prefix).and.at.most(n);
        await publishEvidence(scratch.store, v.fault!);
        const claim = claimMessage(item, v.fault!, wallet.address);
        for (const other of [0, 1, 2].filter((i) => i !== finder)) {
          const r = await recheckClaim({
            template,
            trainer: scratch.trainer,
            store: scratch.store,
            item,
            claim,
            verifierProfile: localProfile(),
          });
          expect(r.reproduced, `verifier ${other + 1} re-checking ${finder + 1}'s claim: ${r.why}`).to.equal(true);
        }
      }
    });
  }

  it("relabelled copies (well formed) are found by a replay of a copied span: a fault, also reproduced", async function () {
    const rand = mulberry32(4242);
    const seed = randomSalt(rand);
    const upload = await prefixCopyUpload(scratch.trainer, seed, 100, 50, MAKER, "relabelled");
    const { job, report, item } = await reported(upload, seed);
    let faults = 0;
    for (let t = 0; t < 12; t++) {
      const v = await check()(job, report, randomSalt(rand));
      if (v.accept) continue; // its one sampled segment was in the trained half
      expect(v.fault, v.reasons.join("; ")).to.not.equal(undefined);
      await publishEvidence(scratch.store, v.fault!);
      const claim = claimMessage(item, v.fault!, verifierWallets()[0].address);
      const r = await recheckClaim({
        template,
        trainer: scratch.trainer,
        store: scratch.store,
        item,
        claim,
        verifierProfile: localProfile(),
      });
      expect(r.reproduced, r.why).to.equal(true);
      faults++;
    }
    expect(faults).to.be.above(0);
  });

  it("copied boundaries hidden behind unreadable blobs are refused by every verifier (never paid), faults where a replay reaches them", async function () {
    const rand = mulberry32(77);
    const seed = randomSalt(rand);
    const upload = await prefixCopyUpload(scratch.trainer, seed, 100, 50, MAKER, "relabelled");
    const { job, report } = await reported(upload, seed);
    const c = upload.checkpoint;
    for (const step of storedSteps(0, 100, c.segmentSteps).filter((s) => s > 50 && s < 99)) {
      const path = (scratch.store.backend as FsBackend).path(c.stepHashes[step - 1].slice(2));
      await unlink(path).catch(() => {});
      await mkdir(path, { recursive: true });
    }
    for (let t = 0; t < 6; t++) {
      const v = await check()(job, report, randomSalt(rand));
      expect(v.accept).to.equal(false);
      expect(v.codes, v.reasons.join("; ")).to.include.oneOf(["blob-unreadable", "replay-mismatch"]);
    }
  });

  it("the finding's segment length (m = 4 at interval 1,000) is refused by every verifier; the agent's own is accepted", async function () {
    const provider = new Provider(scratch.trainer, scratch.store, MAKER);
    const job = firstJob(template, randomSalt(mulberry32(5)));
    const seg = await provider.train(await provider.startOf(job), 1000);
    const rand = mulberry32(6);
    const short = await provider.put(honestUpload(seg, 4));
    const honest = await provider.put(honestUpload(seg)); // what agent/segment.ts uploads
    expect(decodeCheckpoint(await scratch.store.get(honest.hash)).segmentSteps).to.equal(defaultSegmentSteps(1000));
    for (let v = 0; v < 3; v++) {
      const salt = randomSalt(rand);
      const refused = await check()(job, short, salt);
      expect(refused.codes).to.deep.equal(["bad-segments"]);
      const accepted = await check()(job, honest, salt);
      expect(accepted.accept, accepted.reasons.join("; ")).to.equal(true);
    }
  });

  it("control: a template that honestly diverges to NaN is refused plainly (non-finite), never a fault", async function () {
    // An accepted state whose weights are so large that the next honest steps overflow (as a diverging run's
    // would); the provider trains honestly from it and commits what it computed.
    const seed = randomSalt(mulberry32(9));
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
    expect(seg.states.some((s) => s.weights.some((w) => w.data.some((v) => !Number.isFinite(v))))).to.equal(true);
    const report = await provider.put(honestUpload(seg));
    const rand = mulberry32(10);
    for (let v = 0; v < 3; v++) {
      const verdict = await check()(job, report, randomSalt(rand));
      expect(verdict.accept).to.equal(false);
      expect(verdict.fault, verdict.reasons.join("; ")).to.equal(undefined);
      expect(verdict.codes).to.deep.equal(["non-finite"]);
    }
  });
});
