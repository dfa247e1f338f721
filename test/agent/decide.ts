import { expect } from "chai";
import {
  aheadKept,
  baseLive,
  chainTip,
  reportedOutcome,
  assignedJobs,
  decideRegistration,
  fenceReason,
  leaseHeartbeatMs,
  planJob,
  reportDecision,
  segmentTarget,
  type Offer,
  type ProviderRecord,
} from "../../agent/decide.ts";
import type { JobView } from "../../sdk/rules/job.ts";
import { jobView, rawJob } from "../helpers/jobs.ts";
import { FaultSpecError, parseFault } from "../../agent/faults.ts";
import { ZERO_HASH } from "../../workloads/index.ts";

const ME = "0x00000000000000000000000000000000000000a1";
const OTHER = "0x00000000000000000000000000000000000000b2";
const H = (n: number) => "0x" + n.toString(16).padStart(64, "0");

const offer: Offer = { name: "alice", pricePerStep: 900n, kind: 1, deviceModel: "NVIDIA H200", memoryMiB: 143771 };
const record = (over: Partial<ProviderRecord> = {}): ProviderRecord => ({
  name: "alice",
  deviceModel: "NVIDIA H200",
  pricePerStep: 900n,
  memoryMiB: 143771,
  kind: 1,
  active: true,
  registeredAt: 1_700_000_000n,
  ...over,
});

function job(over: Partial<JobView> = {}): JobView {
  const raw = rawJob({
    epoch: 3n,
    provider: ME,
    templateId: H(0x7),
    seed: H(5),
    totalSteps: 12,
    checkpointInterval: 4,
    acceptedStep: 4,
    acceptedHash: H(44),
    pendingStep: 0,
    pendingHash: ZERO_HASH,
    leaseExpiresAt: 0n,
  });
  return { ...jobView(1n, "Running", raw), ...over };
}

describe("agent: registration decision", function () {
  it("registers when the registry does not know the address", function () {
    expect(decideRegistration(record({ registeredAt: 0n }), offer).calls).to.deep.equal([
      { fn: "register", args: ["alice", 900n, 1, "NVIDIA H200", 143771] },
    ]);
  });

  it("sends nothing when registered, active and with the same offer", function () {
    expect(decideRegistration(record(), offer)).to.deep.equal({ calls: [], notes: [] });
  });

  it("updates when the price, device or memory differ", function () {
    for (const over of [{ pricePerStep: 1000n }, { deviceModel: "NVIDIA A100" }, { memoryMiB: 2048 }, { kind: 0 }]) {
      expect(decideRegistration(record(over), offer).calls).to.deep.equal([
        { fn: "update", args: [900n, 1, "NVIDIA H200", 143771] },
      ]);
    }
  });

  it("reactivates an inactive provider (after updating a changed offer)", function () {
    expect(decideRegistration(record({ active: false }), offer).calls).to.deep.equal([{ fn: "reactivate", args: [] }]);
    expect(decideRegistration(record({ active: false, memoryMiB: 1 }), offer).calls.map((c) => c.fn)).to.deep.equal([
      "update",
      "reactivate",
    ]);
  });

  it("notes (without sending anything) that a registered name cannot change", function () {
    const plan = decideRegistration(record({ name: "old" }), offer);
    expect(plan.calls).to.deep.equal([]);
    expect(plan.notes).to.have.length(1);
  });
});

describe("agent: work-loop decisions", function () {
  it("picks Running jobs assigned to this address, lowest id first", function () {
    const jobs = [
      job({ jobId: 3n }),
      job({ jobId: 2n, provider: OTHER }),
      job({ jobId: 1n, status: "Open" }),
      job({ jobId: 5n }),
      job({ jobId: 4n }),
    ];
    expect(assignedJobs(jobs, ME.toUpperCase().replace("0X", "0x")).map((j) => j.jobId)).to.deep.equal([3n, 4n, 5n]);
  });

  it("is fenced when the epoch moved on, the job stopped running or another provider holds it", function () {
    expect(fenceReason(job(), 3n, ME)).to.equal(undefined);
    expect(fenceReason(job({ epoch: 4n }), 3n, ME)).to.be.a("string");
    expect(fenceReason(job({ status: "Open" }), 3n, ME)).to.be.a("string");
    expect(fenceReason(job({ provider: OTHER }), 3n, ME)).to.be.a("string");
  });

  it("plans training until the final checkpoint is pending, and is done once every step is accepted", function () {
    expect(planJob(job()).kind).to.equal("train");
    expect(planJob(job({ pendingStep: 8 })).kind).to.equal("train");
    expect(planJob(job({ acceptedStep: 8, pendingStep: 12 })).kind).to.equal("wait-final");
    expect(planJob(job({ acceptedStep: 12 })).kind).to.equal("done");
  });

  it("ends a segment one interval past its start, or at the last step", function () {
    expect(segmentTarget(0, 4, 12)).to.equal(4);
    expect(segmentTarget(8, 4, 10)).to.equal(10);
    expect(segmentTarget(9, 50, 10)).to.equal(10);
    // Resuming a job with progress on it: a tenth of the interval first, where that is ≥ 2 steps.
    expect(segmentTarget(300, 100, 600, true)).to.equal(310);
    expect(segmentTarget(300, 25, 600, true)).to.equal(303);
    expect(segmentTarget(595, 100, 600, true)).to.equal(600);
    expect(segmentTarget(8, 19, 100, true)).to.equal(27);
    expect(segmentTarget(8, 4, 100, true)).to.equal(12);
  });

  it("reports a segment only once its base is the accepted checkpoint and nothing is pending", function () {
    const ctx = { epoch: 3n, me: ME, startStep: 4, prevHash: H(44), step: 8 };
    expect(reportDecision(job(), ctx).kind).to.equal("report");
    expect(reportDecision(job({ pendingStep: 4 }), ctx).kind).to.equal("wait");
    expect(reportDecision(job({ acceptedStep: 0, acceptedHash: ZERO_HASH }), ctx).kind).to.equal("discard");
    expect(reportDecision(job({ acceptedHash: H(45) }), ctx).kind).to.equal("discard");
    expect(reportDecision(job({ epoch: 4n }), ctx).kind).to.equal("fenced");
    expect(
      reportDecision(job({ acceptedStep: 0, acceptedHash: H(9) }), {
        ...ctx,
        startStep: 0,
        prevHash: ZERO_HASH,
        step: 4,
      }).kind,
    ).to.equal("report"); // before any acceptance the chain's acceptedHash is zero; the base is the seed's state
    expect(reportDecision(job(), { ...ctx, step: 9 }).kind).to.equal("discard"); // past one interval
  });

  it("extends the lease every third of its duration", function () {
    expect(leaseHeartbeatMs(120n)).to.equal(40_000);
    expect(leaseHeartbeatMs(1n)).to.equal(1_000);
  });
});

describe("agent: fault flag", function () {
  it("parses every kind, die-at with its step", function () {
    expect(parseFault(undefined)).to.equal(undefined);
    expect(parseFault("nan")).to.deep.equal({ kind: "nan" });
    expect(parseFault("die-at:7")).to.deep.equal({ kind: "die-at", atStep: 7 });
  });

  it("rejects unknown kinds, die-at without a step and arguments where none belong", function () {
    for (const bad of ["boom", "die-at", "die-at:0", "die-at:x", "nan:3", "die-at:3:4"]) {
      expect(() => parseFault(bad), bad).to.throw(FaultSpecError);
    }
  });
});

describe("agent: training-ahead decisions", function () {
  const link = (step: number, hash: string, prev: [number, string]) => ({
    step,
    hash,
    prev: { step: prev[0], hash: prev[1] },
  });

  it("the tip is the pending checkpoint while there is one, else the accepted one (zero hash before any)", function () {
    expect(chainTip(job({ pendingStep: 8, pendingHash: H(88) }))).to.deep.equal({ step: 8, hash: H(88) });
    expect(chainTip(job())).to.deep.equal({ step: 4, hash: H(44) });
    expect(chainTip(job({ acceptedStep: 0 }))).to.deep.equal({ step: 0, hash: ZERO_HASH });
  });

  it("keeps queued segments only while each builds on the one before, starting at the tip", function () {
    const q = [link(8, H(88), [4, H(44)]), link(12, H(12), [8, H(88)])];
    expect(aheadKept({ step: 4, hash: H(44) }, q)).to.equal(2);
    expect(aheadKept({ step: 8, hash: H(88) }, q.slice(1))).to.equal(1);
    // The checkpoint under them was refused: the tip went back to the accepted one.
    expect(aheadKept({ step: 0, hash: ZERO_HASH }, q)).to.equal(0);
    // Same step, another hash (someone else's checkpoint): nothing built on ours counts.
    expect(aheadKept({ step: 4, hash: H(45) }, q)).to.equal(0);
    expect(aheadKept({ step: 4, hash: H(44) }, [q[0], link(12, H(12), [8, H(89)])])).to.equal(1);
    expect(aheadKept({ step: 4, hash: H(44) }, [])).to.equal(0);
  });

  it("a base is live when it is the tip or a kept queued segment", function () {
    const tip = { step: 4, hash: H(44) };
    expect(baseLive({ step: 4, hash: H(44) }, tip, [])).to.equal(true);
    expect(baseLive({ step: 8, hash: H(88) }, tip, [{ step: 8, hash: H(88) }])).to.equal(true);
    expect(baseLive({ step: 8, hash: H(88) }, tip, [])).to.equal(false);
    expect(baseLive({ step: 4, hash: H(45) }, tip, [])).to.equal(false);
  });

  it("a reported checkpoint is undecided while pending, accepted once the accepted step reaches it, else dropped", function () {
    const r = { step: 8, hash: H(88) };
    expect(reportedOutcome(job({ pendingStep: 8, pendingHash: H(88) }), r)).to.equal(undefined);
    expect(reportedOutcome(job({ acceptedStep: 8, acceptedHash: H(88) }), r)).to.equal("accepted");
    expect(reportedOutcome(job({ acceptedStep: 12 }), r)).to.equal("accepted");
    expect(reportedOutcome(job(), r)).to.equal("dropped");
    expect(reportedOutcome(job({ pendingStep: 8, pendingHash: H(89) }), r)).to.equal("dropped");
  });
});
