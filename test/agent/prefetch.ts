// Failover ≤ 5 s: an idle agent reads ahead the accepted checkpoint of a job someone else holds, so a
// takeover starts from memory. Against a real filesystem store: what was read ahead is the blob asked for, a
// read that failed is not kept, a moved-on or forgotten job's read is not served.
import { expect } from "chai";
import { CheckpointPrefetch } from "../../agent/prefetch.ts";
import { encodeCheckpoint, initialState, stateHash, ZERO_HASH } from "../../workloads/index.ts";
import { BLOBS, tmpStore } from "./helpers.ts";
import { TEST_MAKER, TEST_PROFILE } from "../verifier/helpers.ts";

const SEED = "0x" + "11".repeat(32);

async function storedCheckpoint(store: Awaited<ReturnType<typeof tmpStore>>, step: number) {
  const state = { ...initialState(BLOBS, SEED), step }; // a checkpoint of no steps past `step`: structure is all

  const blob = encodeCheckpoint({
    templateId: BLOBS.templateId,
    seed: SEED,
    step,
    prevCheckpointHash: ZERO_HASH,
    maker: TEST_MAKER,
    profile: TEST_PROFILE,
    startStep: step,
    startStateHash: stateHash(state),
    segmentSteps: 1,
    stepHashes: [],
    state,
  });
  return store.put(blob);
}

describe("agent: accepted checkpoints read ahead while idle", function () {
  it("serves the read-ahead checkpoint once, for its job and hash only", async function () {
    const store = await tmpStore();
    const hash = await storedCheckpoint(store, 10);
    const prefetch = new CheckpointPrefetch(store);
    prefetch.ahead(7n, hash);
    expect(await prefetch.take(8n, hash), "another job").to.equal(undefined);
    expect(await prefetch.take(7n, ZERO_HASH), "another hash").to.equal(undefined);
    const got = await prefetch.take(7n, hash.toUpperCase().replace("0X", "0x"));
    expect(got?.ok && got.checkpoint.step).to.equal(10);
    expect(await prefetch.take(7n, hash), "taken once").to.equal(undefined);
  });

  it("replaces a job's read when its accepted checkpoint moves on, and forgets jobs not retained", async function () {
    const store = await tmpStore();
    const [first, second] = [await storedCheckpoint(store, 10), await storedCheckpoint(store, 20)];
    const prefetch = new CheckpointPrefetch(store);
    prefetch.ahead(1n, first);
    prefetch.ahead(1n, second);
    expect(await prefetch.take(1n, first)).to.equal(undefined);
    const got = await prefetch.take(1n, second);
    expect(got?.ok && got.checkpoint.step).to.equal(20);
    prefetch.ahead(2n, first);
    prefetch.retain(new Set(["3"]));
    expect(await prefetch.take(2n, first), "forgotten").to.equal(undefined);
  });

  it("does not keep a read that failed: the takeover reads again", async function () {
    const store = await tmpStore();
    const prefetch = new CheckpointPrefetch(store);
    const missing = "0x" + "ab".repeat(32);
    prefetch.ahead(1n, missing);
    expect(await prefetch.take(1n, missing)).to.equal(undefined);
  });
});
