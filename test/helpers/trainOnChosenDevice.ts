// A child process for test/agent/webgpu.ts (run only as a script: mocha loads this file too): the agent's own
// device choice (flags as `gpuchain provide` takes them, GPUCHAIN_EP and VK_ICD_FILENAMES from the environment), its
// TrainerPool with the real trainer, blobs-tiny trained 3 steps from the reference seed. Prints one JSON line: the provider the trainer opened on, the state hash, the
// device profile and the pool's log records. A child, since the Vulkan loader reads VK_ICD_FILENAMES once a process.
import { pathToFileURL } from "node:url";
import { parseProvideArgs } from "../../agent/cli.ts";
import { TrainerPool } from "../../agent/trainers.ts";
import { createLogger } from "../../sdk/run/log.ts";
import { loadTemplate, stateHash } from "../../workloads/index.ts";
import { REFERENCE_SEED } from "../../workloads/referenceHashes.ts";

async function main(args: string[]): Promise<void> {
  const records: unknown[] = [];
  const logger = createLogger({ component: "agent", write: (line) => records.push(JSON.parse(line)) });
  const { device } = parseProvideArgs(["--name", "t", "--price", "1", ...args]).config;
  let fellBack: string | undefined;
  const pool = new TrainerPool(device, logger, undefined, (failed) => (fellBack = failed));
  const t0 = Date.now();
  const tr = await pool.get(loadTemplate("blobs-tiny"));
  let s = tr.initialState(REFERENCE_SEED);
  for (let step = 1; step <= 3; step++) s = (await tr.trainStep(s, REFERENCE_SEED, step)).state;
  const out = {
    executionProvider: tr.executionProvider,
    hash: stateHash(s),
    device,
    fellBack,
    records,
    ms: Date.now() - t0,
  };
  await pool.closeAll();
  console.log(JSON.stringify(out));
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) await main(process.argv.slice(2));
