/**
 * `gpuchain verify --key FILE [--rpc URL] [--deployment FILE] [--store URL] [--collector URL] [--coordinator URL]
 *  [--samples K] [--behaviour honest|always-accept|always-refuse|false-claim] [--decisions FILE] [--poll-ms MS]
 *  [--once] [--dry-run] [--pretty]`
 *
 * One independent Quality Guard verifier. Its key must be one of the verifier Safe's owners.
 */
import path from "node:path";
import { Contract } from "ethers";
import { expectPositionals, parseCommand, parsePositiveInt, requireString, UsageError } from "../sdk/run/args.ts";
import { connectChecked, connectProtocol, DEFAULT_RPC_TIMEOUT_MS, type rpcProvider } from "../sdk/node/contracts.ts";
import { ChainWake, eventTopics } from "../sdk/node/chainWake.ts";
import { loadDeployment } from "../sdk/node/deployment.ts";
import { loadKey } from "../sdk/run/keys.ts";
import { LogCursor } from "../sdk/node/logRange.ts";
import { createLogger } from "../sdk/run/log.ts";
import { shutdownSignal } from "../sdk/run/runner.ts";
import { escrowDomain, checkpointDecisionDigest } from "../sdk/rules/verifierSignatures.ts";
import { openStore } from "../workloads/index.ts";
import { storeUrlArg } from "../sdk/run/storeArg.ts";
import { DEFAULT_COLLECTOR_URL, httpCollector } from "./collector.ts";
import { DecisionStore } from "./decisions.ts";
import {
  BEHAVIOURS,
  DEFAULT_CONFIG,
  runVerifier,
  TRAINING_ENDS,
  Verifier,
  type BehaviourName,
  type EscrowReader,
} from "./verifier.ts";

const OPTIONS = {
  collector: { type: "string", default: DEFAULT_COLLECTOR_URL },
  samples: { type: "string" },
  behaviour: { type: "string", default: "honest" },
  decisions: { type: "string" },
  "poll-ms": { type: "string" },
  once: { type: "boolean", default: false },
} as const;

export const HELP = `usage: gpuchain verify --key FILE [options]

  --key FILE          verifier private key (0600), one of the verifier Safe's owners
  --rpc URL           chain RPC (default http://127.0.0.1:8545)
  --deployment FILE   Ignition deployed_addresses.json
  --store URL         checkpoint store shared with providers: s3://BUCKET/PREFIX, file://DIR or a folder
                      (default .gpuchain/store; S3 settings from AWS_ENDPOINT_URL, AWS_REGION, AWS_ACCESS_KEY_ID, ...)
  --collector URL     verdict collector (default ${DEFAULT_COLLECTOR_URL})
  --samples K         sampled steps replayed per checkpoint, besides the last (default ${DEFAULT_CONFIG.samples})
  --behaviour MODE    honest | always-accept | always-refuse | false-claim (malicious modes: tests and demos only)
  --decisions FILE    where signed decisions are remembered (default .gpuchain/verifier/<address>.json)
  --poll-ms MS        time between ticks (default ${DEFAULT_CONFIG.pollMs})
  --once              run one tick and exit
  --dry-run           decide and log, post nothing
  --pretty            human-readable log lines instead of JSON`;

export async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseCommand(argv, OPTIONS);
  if (values.help) {
    console.log(HELP);
    return 0;
  }
  expectPositionals(positionals, []);
  const behaviour = values.behaviour as BehaviourName;
  if (!BEHAVIOURS.includes(behaviour))
    throw new UsageError(`--behaviour must be one of ${BEHAVIOURS.join(", ")}, got "${values.behaviour}"`);
  const samples = values.samples === undefined ? DEFAULT_CONFIG.samples : Number(values.samples);
  if (!Number.isSafeInteger(samples) || samples < 0)
    throw new UsageError(`--samples must be a non-negative integer, got "${values.samples}"`);
  const pollMs = parsePositiveInt(values["poll-ms"], "poll-ms", DEFAULT_CONFIG.pollMs);

  const storeUrl = storeUrlArg(values.store);
  const wallet = loadKey(requireString(values.key, "key"));
  const deployment = loadDeployment(values.deployment);
  const { provider, chainId } = await connectChecked(values.rpc, deployment, DEFAULT_RPC_TIMEOUT_MS);
  const log = createLogger({ component: "verifier", pretty: values.pretty }, { verifier: wallet.address });
  const store = openStore(storeUrl, { onEvent: (e) => log.warn(`store ${e.kind}`, { ...e, store: storeUrl }) });
  const { escrow } = connectProtocol(deployment, provider);

  await checkSetup(escrow as unknown as Contract, deployment.verifierSafe, chainId, wallet.address, provider);

  const decisionsFile = values.decisions ?? path.join(".gpuchain", "verifier", `${wallet.address.toLowerCase()}.json`);
  const decisions = new DecisionStore(wallet.address, decisionsFile, {
    chainId: chainId.toString(),
    escrow: deployment.escrow,
    behaviour,
  });
  if (decisions.discardedOtherContext)
    log.warn("decisions file was made for another chain, escrow or behaviour; starting afresh", {
      file: decisionsFile,
    });
  const verifier = new Verifier(
    {
      chainId,
      escrow: deployment.escrow,
      safe: deployment.verifierSafe,
      samples,
      behaviour,
      dryRun: values["dry-run"],
      pollMs,
      missingBlobGraceMs: DEFAULT_CONFIG.missingBlobGraceMs,
    },
    {
      chain: escrow as unknown as EscrowReader,
      signer: wallet, // signs offline: the Safe message needs no provider
      store,
      collector: httpCollector(values.collector),
      decisions,
      log,
      // Blocks from now on, for reorganisations only: the events that end training (the jobs it then skips).
      reorgs: new LogCursor(
        provider,
        { address: deployment.escrow, topics: eventTopics(escrow.interface, TRAINING_ENDS) },
        await provider.getBlockNumber(),
      ),
    },
  );
  const { signal, dispose } = shutdownSignal(log);
  try {
    // Woken by the events that make work (a report, an acceptance before the verdict), pollMs at most.
    const events = eventTopics(escrow.interface, ["CheckpointReported", "CheckpointAccepted"]);
    const wake = new ChainWake({ provider, filter: { address: deployment.escrow, topics: events } });
    await runVerifier(verifier, log, { signal, once: values.once, wait: (ms, s) => wake.sleep(ms, s) });
  } finally {
    dispose();
    await verifier.close();
    provider.destroy();
  }
  return 0;
}

/** Fails early on a key that is not a Safe owner, or on a digest twin that disagrees with the deployed escrow. */
async function checkSetup(
  escrow: Contract,
  safe: string,
  chainId: bigint,
  address: string,
  provider: ReturnType<typeof rpcProvider>,
) {
  const safeContract = new Contract(safe, ["function isOwner(address) view returns (bool)"], provider);
  if (!(await safeContract.isOwner(address))) {
    throw new UsageError(`${address} is not an owner of the verifier Safe ${safe}; its signatures would not count`);
  }
  const probe = { jobId: 1n, epoch: 1n, step: 1, checkpointHash: "0x" + "11".repeat(32), accept: true };
  const local = checkpointDecisionDigest(escrowDomain(chainId, await escrow.getAddress()), probe);
  const onChain = await escrow.checkpointDecisionDigest(
    probe.jobId,
    probe.epoch,
    probe.step,
    probe.checkpointHash,
    probe.accept,
  );
  if (local !== onChain)
    throw new Error(`digest twin disagrees with the escrow (${local} vs ${onChain}): wrong deployment or ABI`);
}
