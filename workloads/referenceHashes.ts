// Reference state hashes of every template: the proof that a CPU family (or device) computes the
// same bits. `node workloads/referenceHashes.ts [steps] [every]` prints one JSON object
// { template: [hash after `every` steps, after 2·every, …] }; the cross-family test runs it
// natively and under CPU emulation and compares with the hashes committed in docs/WORKLOADS.md.
// GPUCHAIN_EP=cuda runs the same on the CUDA provider (needs onnxruntime-node's CUDA binaries installed);
// GPUCHAIN_TEMPLATES=name,… limits the run to those templates.
import { pathToFileURL } from "node:url";
import { listTemplates } from "./templates.ts";
import { createTrainer, type TrainerOptions } from "./trainer.ts";
import { stateHash } from "./state.ts";
import type { Template } from "./types.ts";

export const REFERENCE_SEED = "0x" + "11".repeat(32);

/** The reference hashes a document commits (docs/WORKLOADS.md): rows `| \`template\` | step | \`0x…\` |`, in order. */
export function parseReferenceTable(doc: string): Record<string, { step: number; hash: string }[]> {
  const out: Record<string, { step: number; hash: string }[]> = {};
  for (const m of doc.matchAll(/^\| `([\w-]+)` \| (\d+) \| `(0x[0-9a-f]{64})` \|/gm))
    (out[m[1]] ??= []).push({ step: Number(m[2]), hash: m[3] });
  return out;
}

/** One hash of a reference run: after `step` steps, and the mean time of the steps since the last hash (ms). */
export type ReferencePoint = { step: number; hash: string; stepMs: number };

/** Trains one template `steps` steps from REFERENCE_SEED, yielding the state hash after every `every` steps. */
export async function* referenceRun(
  t: Template,
  steps = 20,
  every = 5,
  opts: TrainerOptions = {},
): AsyncGenerator<ReferencePoint> {
  const tr = await createTrainer(t, opts);
  try {
    let s = tr.initialState(REFERENCE_SEED);
    let since = performance.now(); // session creation excluded
    for (let step = 1; step <= steps; step++) {
      s = (await tr.trainStep(s, REFERENCE_SEED, step)).state;
      if (step % every !== 0) continue;
      const stepMs = (performance.now() - since) / every;
      yield { step, hash: stateHash(s), stepMs };
      since = performance.now(); // hashing and the caller's work excluded
    }
  } finally {
    await tr.close();
  }
}

/** Trains every template `steps` steps from REFERENCE_SEED; hashes after every `every` steps. */
export async function referenceHashes(
  steps = 20,
  every = 5,
  opts: TrainerOptions = {},
  only?: readonly string[],
): Promise<Record<string, string[]>> {
  const out: Record<string, string[]> = {};
  for (const t of listTemplates().filter((x) => !only || only.includes(x.descriptor.name))) {
    out[t.descriptor.name] = [];
    for await (const p of referenceRun(t, steps, every, opts)) out[t.descriptor.name].push(p.hash);
  }
  return out;
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  const [steps, every] = [Number(process.argv[2] ?? 20), Number(process.argv[3] ?? 5)];
  const ep = process.env.GPUCHAIN_EP ?? "cpu";
  if (ep !== "cpu" && ep !== "cuda" && ep !== "webgpu") {
    // A typo must not prove the CPU's hashes under a GPU's name.
    console.error(`GPUCHAIN_EP must be cpu, cuda or webgpu, got "${ep}"`);
    process.exit(2);
  }
  const provider = ep;
  // GPUCHAIN_TEMPLATES=a,b: only those templates (a slow device proves the others first)
  const only = process.env.GPUCHAIN_TEMPLATES?.split(",").filter(Boolean);
  console.log(JSON.stringify(await referenceHashes(steps, every, { executionProvider: provider }, only)));
}
