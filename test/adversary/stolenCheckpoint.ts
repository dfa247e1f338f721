/**
 * Stolen trained-ahead checkpoints (THREATS.md, "A provider"): the agent puts a checkpoint in the shared store before
 * reporting it; after the holder is unassigned, the next assignee finds the blob whose previous link is the
 * accepted hash and reports it as its own. Before checkpoint v3 the honest verifiers accepted it (the blob named
 * no maker). Now it commits its maker, and every state it does not publish is committed bound to that maker.
 */
import { expect } from "chai";
import { decodeCheckpoint, encodeCheckpoint, blobHash, loadTemplate } from "../../workloads/index.ts";
import type { Report } from "../../verifier/checks.ts";
import { randomSalt } from "../../verifier/economics.ts";
import { mulberry32 } from "../helpers/random.ts";
import { useScratch } from "../helpers/scratch.ts";
import { checkerFor, firstJob, Provider, seedOf } from "../verifier/helpers.ts";

const ALICE = "0x" + "a1".repeat(20); // trained it
const MALLORY = "0x" + "3e".repeat(20); // took the job over and found it in the store

describe("adversary: a checkpoint trained ahead by another provider pays nobody else", function () {
  const template = loadTemplate("blobs-tiny");
  const scratch = useScratch("gpuchain-adversary-stolen-", template);
  const job = firstJob(template, seedOf(1919));
  let alices: Report;

  before(async function () {
    const alice = new Provider(scratch.trainer, scratch.store, ALICE);
    ({ report: alices } = await alice.produce(job, 100, "honest"));
  });

  const verify = (report: Report, salt: string) => checkerFor(scratch.trainer, scratch.store)(job, report, salt);

  it("control: alice's own report is accepted", async function () {
    const v = await verify(alices, seedOf(1));
    expect(v.accept, v.reasons.join("; ")).to.equal(true);
  });

  it("reported as is by mallory: refused as wrong-maker by every verifier", async function () {
    const rand = mulberry32(3);
    for (let i = 0; i < 6; i++) {
      const v = await verify({ ...alices, provider: MALLORY }, randomSalt(rand));
      expect(v.codes).to.deep.equal(["wrong-maker"]);
    }
  });

  it("re-signed with mallory as maker: its hidden steps no longer match, refused as replay-mismatch (a fault)", async function () {
    const c = decodeCheckpoint(await scratch.store.get(alices.hash));
    const bytes = encodeCheckpoint({ ...c, maker: MALLORY });
    const stolen: Report = { step: 100, hash: await scratch.store.put(bytes), provider: MALLORY };
    expect(stolen.hash).to.equal(blobHash(bytes));
    const rand = mulberry32(4);
    for (let i = 0; i < 12; i++) {
      const v = await verify(stolen, randomSalt(rand));
      expect(v.codes).to.deep.equal(["replay-mismatch"]);
      expect(v.fault, "a replay mismatch is a provable fault: the claim slashes the thief").to.not.equal(undefined);
    }
  });
});
