import { expect } from "chai";
import { mkdtemp, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DecisionsFileError, DecisionStore, EquivocationError } from "../../verifier/decisions.ts";
import { isTrainingOver, JOB_STATUS, type RawJob } from "../../sdk/rules/job.ts";
import {
  checkpointKey,
  planWork,
  sampleSalt,
  verdictKey,
  type CheckpointItem,
  type SignedDecision,
} from "../../verifier/work.ts";
import { jobView, rawJob } from "../helpers/jobs.ts";
import { hardhatWallet, seedOf } from "./helpers.ts";

const H = (i: number) => seedOf(1000 + i);

function job(over: Partial<RawJob> = {}): RawJob {
  return rawJob({ templateId: H(0), seed: H(1), ...over });
}
const view = jobView;
const STATUS = { Open: "Open", Running: "Running" } as const;

describe("verifier planning: what the chain waits for", function () {
  it("plans the pending checkpoint of a Running job, keyed by job, epoch, step and hash", function () {
    const items = planWork([view(1n, STATUS.Running, job({ epoch: 3n, pendingStep: 10n, pendingHash: H(2) }))]);
    expect(items).to.have.length(1);
    const item = items[0] as CheckpointItem;
    expect(item.kind).to.equal("checkpoint");
    expect(item.key).to.equal(checkpointKey(1n, 3n, 10, H(2)));
    expect([item.step, item.acceptedStep, item.hash]).to.deep.equal([10, 0, H(2)]);
  });

  it("plans a checkpoint whose reporter was unassigned on the epoch it was reported at (Open or reassigned)", function () {
    const orphan = job({ epoch: 4n, pendingEpoch: 3n, pendingStep: 10n, pendingHash: H(2) });
    const items = planWork([view(1n, STATUS.Open, orphan), view(2n, STATUS.Running, orphan)]);
    expect(items.map((i) => i.key)).to.deep.equal([checkpointKey(1n, 3n, 10, H(2)), checkpointKey(2n, 3n, 10, H(2))]);
    expect((items[0] as CheckpointItem).epoch).to.equal(3n);
  });

  it("plans nothing for a Running job without a pending checkpoint, or an Open job mid-training", function () {
    expect(
      planWork([
        view(1n, STATUS.Running, job({ acceptedStep: 10n })),
        view(2n, STATUS.Open, job({ acceptedStep: 10n })),
      ]),
    ).to.deep.equal([]);
  });

  it("plans a verdict for an Open or Running job whose every step is accepted", function () {
    const done = job({ acceptedStep: 30n, acceptedHash: H(3) });
    const items = planWork([view(1n, STATUS.Open, done), view(2n, STATUS.Running, done)]);
    expect(items.map((i) => i.key)).to.deep.equal([verdictKey(1n, H(3)), verdictKey(2n, H(3))]);
  });

  it("a new epoch is a new report: the old key is no longer planned", function () {
    const before = planWork([view(1n, STATUS.Running, job({ epoch: 1n, pendingStep: 10n, pendingHash: H(2) }))]);
    const after = planWork([view(1n, STATUS.Running, job({ epoch: 2n, pendingStep: 10n, pendingHash: H(2) }))]);
    expect(after[0].key).to.not.equal(before[0].key);
  });

  it("treats DisputeWindow and every later status as finished, Open and Running as live", function () {
    expect([1, 2].map((s) => isTrainingOver(JOB_STATUS[s]))).to.deep.equal([false, false]);
    expect([3, 4, 5, 6, 7, 8].every((s) => isTrainingOver(JOB_STATUS[s]))).to.equal(true);
  });

  it("derives a sampling salt that differs per verifier key and per report, and is stable across restarts", function () {
    const [a, b] = [hardhatWallet(3), hardhatWallet(4)];
    const item = planWork([
      view(1n, STATUS.Running, job({ pendingStep: 10n, pendingHash: H(2) })),
    ])[0] as CheckpointItem;
    const other = { ...item, epoch: 2n };
    const escrow = hardhatWallet(0).address;
    const salt = sampleSalt(a.privateKey, 31337n, escrow, item);
    expect(salt).to.match(/^0x[0-9a-f]{64}$/);
    expect(sampleSalt(a.privateKey, 31337n, escrow, item)).to.equal(salt);
    expect(sampleSalt(b.privateKey, 31337n, escrow, item)).to.not.equal(salt);
    expect(sampleSalt(a.privateKey, 31337n, escrow, other)).to.not.equal(salt);
  });
});

describe("verifier decisions: never two different signatures for one report", function () {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "gpuchain-verifier-decisions-"));
  });
  after(() => rm(dir, { recursive: true, force: true }));

  const owner = hardhatWallet(3).address;
  const decision = (key: string, digest: string): SignedDecision => ({
    key,
    decidedAt: 1,
    body: {
      kind: "checkpoint",
      digest,
      signer: owner,
      signature: "0x",
      message: { jobId: "1", epoch: "1", step: 10, checkpointHash: H(2), accept: true },
    },
  });

  it("refuses to record a different decision for a key it already decided", function () {
    const store = new DecisionStore(owner);
    store.put(decision("k", H(10)));
    store.put(decision("k", H(10))); // the same one again is fine
    expect(() => store.put(decision("k", H(11)))).to.throw(EquivocationError);
  });

  it("keeps decisions in a 0600 file that a restarted verifier reads back", async function () {
    const file = join(dir, "v.json");
    const first = new DecisionStore(owner, file);
    first.put(decision("k", H(10)));
    expect((await stat(file)).mode & 0o777).to.equal(0o600);
    const restarted = new DecisionStore(owner, file);
    expect(restarted.get("k")?.body.digest).to.equal(H(10));
    expect(() => restarted.put(decision("k", H(11)))).to.throw(EquivocationError);
  });

  it("refuses a decisions file written for another key", function () {
    const file = join(dir, "other.json");
    new DecisionStore(owner, file).put(decision("k", H(10)));
    expect(() => new DecisionStore(hardhatWallet(4).address, file)).to.throw(DecisionsFileError);
  });

  it("does not reuse a file's decisions made for another chain, escrow or behaviour", function () {
    const file = join(dir, "context.json");
    const ctx = { chainId: "31337", escrow: hardhatWallet(20).address, behaviour: "honest" };
    new DecisionStore(owner, file, ctx).put(decision("k", H(10)));
    expect(new DecisionStore(owner, file, ctx).get("k")?.body.digest).to.equal(H(10));
    const malicious = new DecisionStore(owner, file, { ...ctx, behaviour: "always-accept" });
    expect([malicious.get("k"), malicious.discardedOtherContext]).to.deep.equal([undefined, true]);
    expect(new DecisionStore(owner, file, { ...ctx, chainId: "84532" }).get("k")).to.equal(undefined);
  });

  it("forgets decisions the chain no longer waits for", function () {
    const store = new DecisionStore(owner);
    store.put(decision("a", H(10)));
    store.put(decision("b", H(11)));
    expect(store.retain(new Set(["b"]))).to.equal(1);
    expect([store.get("a"), store.get("b")?.key]).to.deep.equal([undefined, "b"]);
  });
});
