/**
 * What a verifier keeps between checkpoints of a job (issue 39 item 1) never stands in for what the chain says:
 * a cached accepted state is used only when it is the state of the very checkpoint the chain accepted, of this job
 * (template, seed, step); anything else is read again from the store. And the cheap boundary checks (raw bytes, one
 * hash) find exactly what decoding found.
 */
import { expect } from "chai";
import {
  blobHash,
  checkNumbers,
  decodeState,
  encodeState,
  FsCheckpointStore,
  HashMismatchError,
  initialState,
  loadTemplate,
  NonFiniteError,
  stateHash,
  type CheckpointStore,
  type TrainingState,
} from "../../workloads/index.ts";
import { checkStateShape, stateBlobBytes } from "../../workloads/state.ts";
import { CheckpointFormatError } from "../../workloads/errors.ts";
import {
  boundaryDefect,
  cachedStateFits,
  newVerifyCache,
  readChecked,
  verifyCheckpoint,
  type CachedState,
  type JobFacts,
  type Report,
  type VerifyCache,
} from "../../verifier/checks.ts";
import { afterAccept, firstJob, Provider, seedOf } from "./helpers.ts";
import { useScratch } from "../helpers/scratch.ts";

describe("verifier cache: never another job's state, never a stale or wrong hash", function () {
  const template = loadTemplate("blobs-tiny");
  const scratch = useScratch("gpuchain-verifier-cache-", template);
  let store: FsCheckpointStore;
  let provider: Provider;

  const verify = (job: JobFacts, report: Report, cache: VerifyCache) =>
    verifyCheckpoint({
      template,
      trainer: scratch.trainer,
      store,
      job,
      report,
      sampleSalt: seedOf(3),
      samples: 3,
      cache,
    });

  /** A finite state of the template that is no job's accepted state. */
  const alien = (step: number): TrainingState => ({ ...initialState(template, seedOf(4242)), step });
  const entryOf = (state: TrainingState, fields: Omit<CachedState, "state" | "hash">): CachedState => ({
    state,
    hash: stateHash(state),
    ...fields,
  });

  before(async function () {
    store = new FsCheckpointStore(scratch.dir);
    provider = new Provider(scratch.trainer, store);
  });

  it("a job's next checkpoint is checked from the cached accepted state (control: the cache is used)", async function () {
    const cache = newVerifyCache();
    const first = firstJob(template, seedOf(11));
    const { report: r1 } = await provider.produce(first, 10, "honest");
    expect((await verify(first, r1, cache)).accept).to.equal(true);
    const job = afterAccept(first, r1);
    const { report: r2 } = await provider.produce(job, 20, "honest");
    // A wrong state under the right key with every field the chain's: it IS used (so the checks below mean
    // something), and the checkpoint does not start from it.
    const key = r1.hash.toLowerCase();
    const good = cache.states.get(key)!;
    expect(cachedStateFits(good, template.templateId, job)).to.equal(true);
    const { templateId, seed, step, checkpointHash } = good;
    cache.states.set(key, entryOf(alien(10), { templateId, seed, step, checkpointHash }));
    expect((await verify(job, r2, cache)).codes).to.deep.equal(["chain-start"]);
  });

  it("a cached state whose checkpoint hash is not the chain's accepted hash is not used", async function () {
    const cache = newVerifyCache();
    const first = firstJob(template, seedOf(12));
    const { report: r1 } = await provider.produce(first, 10, "honest");
    const job = afterAccept(first, r1);
    const { report: r2 } = await provider.produce(job, 20, "honest");
    // Remembered under the accepted key, but decoded from another blob (e.g. a checkpoint the chain did not accept).
    const stale = entryOf(alien(10), {
      templateId: template.templateId,
      seed: job.seed,
      step: 10,
      checkpointHash: blobHash(new TextEncoder().encode("another checkpoint")),
    });
    cache.states.set(r1.hash.toLowerCase(), stale);
    expect(cachedStateFits(stale, template.templateId, job)).to.equal(false);
    const v = await verify(job, r2, cache);
    expect(v.reasons).to.deep.equal([]);
    expect(v.accept).to.equal(true);
    // The entry read from the store replaced the stale one.
    expect(cache.states.get(r1.hash.toLowerCase())!.checkpointHash).to.equal(r1.hash);
  });

  it("another job's state (other seed, template or step) is never served, also for initial states", async function () {
    const cache = newVerifyCache();
    const a = firstJob(template, seedOf(13));
    const b = firstJob(template, seedOf(14));
    const { report: rb } = await provider.produce(b, 10, "honest");
    // Job a's initial state planted under job b's initial key: another seed, so not used.
    const aInitial = initialState(template, a.seed);
    const fields = { templateId: template.templateId, seed: a.seed, step: 0, checkpointHash: b.acceptedHash };
    cache.states.set(`initial:${template.templateId.toLowerCase()}:${b.seed.toLowerCase()}`, entryOf(aInitial, fields));
    expect((await verify(b, rb, cache)).accept).to.equal(true);

    // After b's first acceptance: an entry for b's accepted hash that names another seed, template or step.
    const job = afterAccept(b, rb);
    const { report: rb2 } = await provider.produce(job, 20, "honest");
    const base = { templateId: template.templateId, seed: job.seed, step: 10, checkpointHash: rb.hash };
    const other = loadTemplate("mnist-mlp").templateId;
    for (const wrong of [{ seed: a.seed }, { templateId: other }, { step: 9 }]) {
      const e = entryOf(alien(wrong.step ?? 10), { ...base, ...wrong });
      expect(cachedStateFits(e, template.templateId, job), JSON.stringify(wrong)).to.equal(false);
      const c = newVerifyCache();
      c.states.set(rb.hash.toLowerCase(), e);
      expect((await verify(job, rb2, c)).accept, JSON.stringify(wrong)).to.equal(true);
    }
  });

  it("a store that does not verify its reads is hash-checked by the verifier (one hash a blob either way)", async function () {
    const honest = encodeState(initialState(template, seedOf(15)));
    const hash = blobHash(honest);
    const liar: CheckpointStore = {
      get: async () => encodeState(alien(0)),
      has: async () => true,
      put: async () => hash,
    } as unknown as CheckpointStore;
    const err = await readChecked(liar, hash).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).to.be.instanceOf(HashMismatchError);
    await store.put(honest);
    expect(Buffer.from(await readChecked(store, hash)).equals(Buffer.from(honest))).to.equal(true);
  });

  it("the finiteness check finds each NaN and ±Infinity at every position, and no finite value", function () {
    const finite = [0, -0, 1e-45, -1e-45, 3.4028234663852886e38, -3.4028234663852886e38, 1, -2.5];
    for (let n = 1; n <= 37; n++) {
      const data = Float32Array.from({ length: n }, (_, i) => finite[i % finite.length]);
      const state = (d: Float32Array): TrainingState => ({
        step: 0,
        weights: [{ name: "w", dims: [d.length], data: d }],
        momentum: [],
      });
      expect(() => checkNumbers(state(data)), `finite, n = ${n}`).to.not.throw();
      for (let i = 0; i < n; i++) {
        for (const bad of [NaN, Infinity, -Infinity]) {
          const d = data.slice();
          d[i] = bad;
          const err = (() => {
            try {
              checkNumbers(state(d));
            } catch (e) {
              return e;
            }
          })();
          expect(err, `n = ${n}, at ${i}`).to.be.instanceOf(NonFiniteError);
          expect((err as NonFiniteError).index, `n = ${n}, at ${i}`).to.equal(i);
          // The same on a blob whose data starts off a multiple of 4 (the raw-bytes check).
          const blob = encodeState({ ...state(d), weights: [{ name: "w_", dims: [n], data: d }] });
          expect(decodeState.bind(null, blob), `blob n = ${n}, at ${i}`).to.throw(NonFiniteError);
        }
      }
    }
  });

  it("boundary states checked on their raw bytes find what decoding finds, in the same order", function () {
    expect(stateBlobBytes(template)).to.equal(encodeState(initialState(template, seedOf(16))).byteLength);
    const s = { ...initialState(template, seedOf(16)), step: 5 };
    const decodeCode = (b: Uint8Array, step: number): string => {
      try {
        const st = decodeState(b);
        checkStateShape(template, st);
        return st.step === step ? "ok" : "replay-mismatch";
      } catch (e) {
        if (e instanceof NonFiniteError) return "non-finite";
        if (e instanceof CheckpointFormatError) return e.code === "INCONSISTENT" ? "inconsistent" : "undecodable";
        throw e;
      }
    };
    const rawCode = (b: Uint8Array, step: number): string => {
      const r = boundaryDefect(template, b, step);
      return "layout" in r ? "ok" : r.code;
    };
    const good = encodeState(s);
    const withNaN = (group: "weights" | "momentum", t: number, i: number, v = NaN) => {
      const x = structuredClone(s);
      x[group][t].data[i] = v;
      return encodeState(x);
    };
    const renamed = structuredClone(s);
    renamed.weights[0].name = renamed.weights[0].name + "x"; // shifts every later tensor off a multiple of 4
    const renamedNaN = structuredClone(renamed);
    renamedNaN.momentum[1].data[0] = -Infinity;
    const reshaped = structuredClone(s);
    reshaped.weights[0].dims = [reshaped.weights[0].data.length];
    const cases: [string, Uint8Array, number][] = [
      ["honest", good, 5],
      ["mislabelled", good, 6],
      ["NaN in weights", withNaN("weights", 0, 3), 5],
      ["Infinity in momentum, last value", withNaN("momentum", s.momentum.length - 1, 0, Infinity), 5],
      ["misnamed (unaligned data)", encodeState(renamed), 5],
      ["misnamed and non-finite (unaligned data)", encodeState(renamedNaN), 5],
      ["reshaped", encodeState(reshaped), 5],
      ["truncated", good.subarray(0, good.length - 3), 5],
      ["trailing bytes", Buffer.concat([good, Buffer.from([0])]), 5],
      ["bad magic", Buffer.concat([Buffer.from("X"), good.subarray(1)]), 5],
      ["empty", new Uint8Array(0), 5],
    ];
    for (const [name, bytes, step] of cases) {
      expect(rawCode(bytes, step), name).to.equal(decodeCode(bytes, step));
    }
    expect(cases.map(([, b, st]) => rawCode(b, st))).to.deep.equal([
      "ok",
      "replay-mismatch",
      "non-finite",
      "non-finite",
      "inconsistent",
      "non-finite",
      "inconsistent",
      "undecodable",
      "undecodable",
      "undecodable",
      "undecodable",
    ]);
  });
});
