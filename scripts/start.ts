/**
 * `npm start`: the whole GPUChain network on one machine, with no network needed.
 *   npm start                      the real MNIST job: failover, refusal, settlement
 *   npm start -- --dispute         … and the client disputes; the arbiter stays silent 3 days; the verdict stands
 *   npm start -- --replay FILE     play a recording back
 *   npm start -- --quick           the small synthetic template (seconds instead of minutes)
 *   npm start -- --store URL       checkpoints in that store (s3://BUCKET/PREFIX + AWS variables) instead of the
 *                                  embedded S3 server
 *   npm start -- --hosts           every part on a separate network host (network namespaces; Linux, as root)
 *   npm start -- --rpc URL --deployment FILE --keys DIR   the same scenario on an existing deployment
 *                                  (e.g. Base Sepolia; DIR holds owner/coordinator/verifier1-3/client .key files)
 * Exits 0 only if every promise held. Ctrl-C stops every process it started.
 */
import path from "node:path";
import { parseArgs } from "node:util";
import { replay } from "../demo/recording.ts";
import { runScenario } from "../demo/scenario.ts";

const { values } = parseArgs({
  options: {
    dispute: { type: "boolean", default: false },
    quick: { type: "boolean", default: false },
    replay: { type: "string" },
    steps: { type: "string" },
    interval: { type: "string" },
    fault: { type: "string", default: "garbage-weights" },
    "run-dir": { type: "string" },
    timeout: { type: "string", default: "900" },
    // An existing deployment instead of the embedded chain (e.g. Base Sepolia); see README "Deploying".
    rpc: { type: "string" },
    deployment: { type: "string" },
    keys: { type: "string" },
    // A checkpoint store instead of the embedded S3 server (s3://BUCKET/PREFIX with the AWS variables, file://DIR).
    store: { type: "string" },
    // Each part on a separate network host: a namespace of its own (Linux, as root).
    hosts: { type: "boolean", default: false },
  },
  strict: true,
});

async function main(): Promise<number> {
  if (values.replay) return replay(values.replay, (l) => console.log(l));
  const controller = new AbortController();
  const stop = () => {
    console.log("\nstopping every process this run started …");
    controller.abort();
  };
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
  const external = externalTarget();
  const template = values.quick ? "blobs-tiny" : "mnist-mlp";
  const totalSteps = Number(values.steps ?? (values.quick ? 120 : 600));
  const result = await runScenario({
    template,
    totalSteps,
    checkpointInterval: Number(values.interval ?? (values.quick ? 20 : 100)),
    dispute: values.dispute,
    fault: values.fault,
    kill: true,
    // Each run gets its own folder and deployment id, so two runs on one machine never share state.
    runDir: values["run-dir"] ?? path.join(".gpuchain", "runs", new Date().toISOString().replace(/[:.]/g, "-")),
    deploymentId: `gpuchain-start-${process.pid}`,
    timeoutMs: Number(values.timeout) * 1000,
    print: (l) => console.log(l),
    signal: controller.signal,
    external,
    store: values.store,
    hosts: values.hosts,
  });
  return result.ok ? 0 : 1;
}

function externalTarget() {
  const given = [values.rpc, values.deployment, values.keys].filter(Boolean).length;
  if (given === 0) return undefined;
  if (given !== 3) throw new Error("an external run needs all of --rpc URL, --deployment FILE and --keys DIR");
  return { rpc: values.rpc!, deploymentFile: values.deployment!, keysDir: values.keys! };
}

let interrupted = false;
process.once("SIGINT", () => (interrupted = true));

main().then(
  (code) => process.exit(code),
  (err) => {
    if (interrupted) {
      console.error("stopped by Ctrl-C; every process this run started has exited");
      process.exit(130);
    }
    console.error(`npm start failed: ${(err as Error).message}`);
    process.exit(1);
  },
);
