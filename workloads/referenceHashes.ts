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

export const REFERENCE_SEED = "0x" + "11".repeat(32);

/** Trains every template `steps` steps from REFERENCE_SEED; hashes after every `every` steps. */
export async function referenceHashes(
  steps = 20,
  every = 5,
  opts: TrainerOptions = {},
  only?: readonly string[],
): Promise<Record<string, string[]>> {
  const out: Record<string, string[]> = {};
  for (const t of listTemplates().filter((x) => !only || only.includes(x.descriptor.name))) {
    const tr = await createTrainer(t, opts);
    try {
      let s = tr.initialState(REFERENCE_SEED);
      out[t.descriptor.name] = [];
      for (let step = 1; step <= steps; step++) {
        s = (await tr.trainStep(s, REFERENCE_SEED, step)).state;
        if (step % every === 0) out[t.descriptor.name].push(stateHash(s));
      }
    } finally {
      await tr.close();
    }
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
