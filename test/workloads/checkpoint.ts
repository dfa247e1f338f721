import { expect } from "chai";
import { mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  blobHash,
  CheckpointFormatError,
  checkNumbers,
  decodeCheckpoint,
  decodeState,
  encodeCheckpoint,
  encodeState,
  FsCheckpointStore,
  getState,
  HashMismatchError,
  initialState,
  loadTemplate,
  NonFiniteError,
  NotFoundError,
  putState,
  stateHash,
  ZERO_HASH,
  type Checkpoint,
} from "../../workloads/index.ts";
import { SEED_A } from "./helpers.ts";
import { TEST_MAKER, TEST_PROFILE } from "../verifier/helpers.ts";

const tiny = loadTemplate("blobs-tiny");

function sampleCheckpoint(): Checkpoint {
  const s0 = initialState(tiny, SEED_A);
  const s2 = { ...s0, step: 2 };
  const h1 = "0x" + "11".repeat(32);
  return {
    templateId: tiny.templateId,
    seed: SEED_A,
    step: 2,
    prevCheckpointHash: ZERO_HASH,
    maker: TEST_MAKER,
    profile: TEST_PROFILE,
    startStep: 0,
    startStateHash: stateHash(s0),
    segmentSteps: 1,
    stepHashes: [h1, stateHash(s2)],
    state: s2,
  };
}

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (e) {
    if (e instanceof CheckpointFormatError || e instanceof NonFiniteError) return e.code;
    throw e;
  }
  return undefined;
}

describe("workloads: checkpoint blobs", function () {
  it("encodes and decodes a checkpoint to an equal value with a stable blob hash", function () {
    const c = sampleCheckpoint();
    const bytes = encodeCheckpoint(c);
    const back = decodeCheckpoint(bytes);
    expect(back).to.deep.equal(c);
    expect(blobHash(encodeCheckpoint(back)))
      .to.equal(blobHash(bytes))
      .and.match(/^0x[0-9a-f]{64}$/);
  });

  it("rejects a blob with a wrong magic header as BAD_MAGIC", function () {
    const bytes = encodeCheckpoint(sampleCheckpoint());
    bytes[0] ^= 0xff;
    expect(codeOf(() => decodeCheckpoint(bytes))).to.equal("BAD_MAGIC");
  });

  it("rejects an unknown format version as BAD_VERSION", function () {
    const bytes = encodeCheckpoint(sampleCheckpoint());
    bytes[8] = 99;
    expect(codeOf(() => decodeCheckpoint(bytes))).to.equal("BAD_VERSION");
  });

  it("rejects every truncation of a blob as TRUNCATED", function () {
    const bytes = encodeCheckpoint(sampleCheckpoint());
    for (let len = 0; len < bytes.length; len++) {
      expect(
        codeOf(() => decodeCheckpoint(bytes.subarray(0, len))),
        `length ${len}`,
      ).to.equal("TRUNCATED");
    }
  });

  it("rejects trailing bytes after the state as TRAILING_BYTES", function () {
    const bytes = encodeCheckpoint(sampleCheckpoint());
    const longer = new Uint8Array(bytes.length + 3);
    longer.set(bytes);
    expect(codeOf(() => decodeCheckpoint(longer))).to.equal("TRAILING_BYTES");
  });

  it("rejects flipped weight bytes as INCONSISTENT (state no longer matches its committed hash)", function () {
    const bytes = encodeCheckpoint(sampleCheckpoint());
    bytes[bytes.length - 500] ^= 0x01;
    expect(codeOf(() => decodeCheckpoint(bytes))).to.equal("INCONSISTENT");
  });

  it("rejects NaN and Infinity weights as NON_FINITE, in checkNumbers, state blobs and checkpoints", function () {
    for (const bad of [NaN, Infinity, -Infinity]) {
      const c = sampleCheckpoint();
      c.state.weights[0].data[3] = bad;
      c.stepHashes[1] = stateHash(c.state); // a consistent but poisoned checkpoint
      expect(codeOf(() => checkNumbers(c.state))).to.equal("NON_FINITE");
      expect(codeOf(() => decodeState(encodeState(c.state)))).to.equal("NON_FINITE");
      expect(codeOf(() => decodeCheckpoint(encodeCheckpoint(c)))).to.equal("NON_FINITE");
    }
  });

  it("refuses to encode a checkpoint whose hash list does not cover its steps", function () {
    const c = sampleCheckpoint();
    c.stepHashes.pop();
    expect(codeOf(() => encodeCheckpoint(c))).to.equal("INCONSISTENT");
  });
});

describe("workloads: FsCheckpointStore", function () {
  let dir: string;
  beforeEach(async () => (dir = await mkdtemp(join(tmpdir(), "gpuchain-store-"))));
  afterEach(async () => rm(dir, { recursive: true, force: true }));

  it("stores bytes under their sha256, returns them, and leaves no temp files", async function () {
    const store = new FsCheckpointStore(dir);
    const bytes = encodeCheckpoint(sampleCheckpoint());
    const hash = await store.put(bytes);
    expect(hash).to.equal(blobHash(bytes));
    expect(await store.put(bytes)).to.equal(hash); // idempotent
    expect(await store.has(hash)).to.equal(true);
    expect(Buffer.from(await store.get(hash)).equals(Buffer.from(bytes))).to.equal(true);
    expect(await readdir(dir)).to.deep.equal([`${hash.slice(2)}.blob`]);
  });

  it("state blobs are addressed by their state hash", async function () {
    const store = new FsCheckpointStore(dir);
    const s = initialState(tiny, SEED_A);
    expect(await putState(store, s)).to.equal(stateHash(s));
    expect(stateHash(await getState(store, stateHash(s)))).to.equal(stateHash(s));
  });

  it("get throws HashMismatchError when the stored content does not match its hash", async function () {
    const store = new FsCheckpointStore(dir);
    const hash = await store.put(new Uint8Array([1, 2, 3]));
    await writeFile(join(dir, `${hash.slice(2)}.blob`), new Uint8Array([1, 2, 4]));
    let err: unknown;
    await store.get(hash).catch((e) => (err = e));
    expect(err).to.be.instanceOf(HashMismatchError);
  });

  it("get throws NotFoundError for a missing hash and has() is false", async function () {
    const store = new FsCheckpointStore(dir);
    const missing = "0x" + "ee".repeat(32);
    expect(await store.has(missing)).to.equal(false);
    let err: unknown;
    await store.get(missing).catch((e) => (err = e));
    expect(err).to.be.instanceOf(NotFoundError);
  });
});
