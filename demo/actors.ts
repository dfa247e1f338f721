/**
 * Who takes part: the client, three providers (mallory the faulty one, alice who is killed, bob on a capped
 * profile) and the off-chain processes — keepers, three verifiers, three provider agents — started as children.
 */
import path from "node:path";
import type { ContractTransaction, Wallet } from "ethers";
import type { Protocol } from "../sdk/node/contracts.ts";
import { loadKey, loadOrCreateKey } from "../sdk/run/keys.ts";
import { managedWallet, mined } from "../sdk/node/txManager.ts";
import { freePort } from "./chain.ts";
import type { Role } from "./network.ts";
import type { Actors, Provider, Run } from "./types.ts";
import { loadTemplate, oneAtomMemoryMiB } from "../workloads/index.ts";

/**
 * bob's memory cap: room for one atom of the template's step but not its whole batch, so he trains in
 * micro-batches (the capped profile the run shows); 2 MiB for the MNIST MLP, as before.
 */
export function cappedMemoryMiB(template: string): number {
  return Math.max(2, oneAtomMemoryMiB(loadTemplate(template)));
}

export const PRICE = { mallory: "0.0008", alice: "0.0010", bob: "0.0012" } as const; // USDC per step
export const MAX_PRICE = 1_500n; // 0.0015 USDC per step, in base units
export const DISPUTE_WINDOW = 60; // seconds: the escrow's minimum
const NAMES = ["mallory", "alice", "bob"] as const;
export const PROVIDER_NAMES: readonly string[] = NAMES;
/**
 * Faster failure detection (failover ≤ 5 s), for runs that ask for it (`ScenarioOptions.detection`, the
 * bench): agents beat every 250 ms, the coordinator calls a provider dead after 2.5 s of silence (10 beats) and the
 * keepers tick every 250 ms. Without it the defaults hold (1 s beats, 5 s timeout, 1 s ticks): on a 2-core machine
 * at load 20 a 2 s timeout already unassigned healthy providers whose beats were starved of CPU.
 */
export const FAST_DETECTION = { beatMs: 250, timeoutMs: 2_500, keeperTickMs: 250 };

export const budgetOf = (totalSteps: number) => MAX_PRICE * BigInt(totalSteps);
export const priceUnits = (name: Provider["name"]) => BigInt(Math.round(Number(PRICE[name]) * 1e6));

/**
 * Whether the client is given (and must hold) the dispute bond besides the budget: only when it will dispute — this
 * run (--dispute), or by hand on a local chain left up (--keep), whose test USDC is free. An existing deployment's
 * run without --dispute needs the budget alone.
 */
export function clientHoldsBond(o: { dispute: boolean; keep?: boolean }, local: boolean): boolean {
  return o.dispute || (o.keep === true && local);
}

/** The client (funded with the budget, and the bond when it disputes) and the providers' keys (funded for gas). */
export async function prepareActors(run: Run): Promise<Actors> {
  const { o, net, provider, protocol } = run;
  const client = managedWallet(loadKey(net.keyFiles.client), provider); // its sends: sdk/node/txManager.ts
  const bond = clientHoldsBond(o, net.local) ? await protocol.escrow.disputeBond() : 0n;
  await net.fundClient(protocol, client, budgetOf(o.totalSteps) + bond);
  const providers = NAMES.map((name) => {
    const keyFile = path.join(o.runDir, "providers", name, "key");
    // Managed: its agent (a child process) sends with the same key; the key's lock file makes them take turns.
    return { name, keyFile, wallet: managedWallet(loadOrCreateKey(keyFile, true).wallet, provider) };
  });
  for (const p of providers) await net.fundGas(provider, p.wallet.address, run.note, o.signal);
  return { client, providers, keyFiles: net.keyFiles };
}

/** Starts the keepers (all four in one process), three verifiers and three provider agents. */
export async function startOffChain(run: Run, actors: Actors): Promise<void> {
  const { o, group } = run;
  const d = o.detection;
  const ports = { coordinator: await freePort(8600), collector: await freePort(8601) };
  const cli = "cli/gpuchain.ts";
  const store = run.storage.url;
  const env = run.storage.env;
  // --network rehearsal: each part through a fault proxy of its own (its faults counted apart).
  const common = (part: string) => [
    "--rpc",
    run.net.rpcFor?.(part) ?? run.net.rpc,
    "--deployment",
    run.net.deploymentFile,
  ];
  // --hosts: every part on its own host; the keepers listen on the operator's (chain) host address.
  const hostNet = run.hostNet;
  const keeperIp = hostNet?.host("chain").ip ?? "127.0.0.1";
  const on = (host: string) => hostNet?.wrapper(host) ?? [];
  const coordinatorUrl = `http://${keeperIp}:${ports.coordinator}/heartbeat`;
  const collectorUrl = `http://${keeperIp}:${ports.collector}`;
  run.keeperUrls = { coordinator: `http://${keeperIp}:${ports.coordinator}`, collector: collectorUrl }; // dashboard
  group.start(
    "keepers",
    [
      ...[cli, "keeper", "all", ...common("keepers"), "--key", actors.keyFiles.coordinator],
      ...["--coordinator-port", String(ports.coordinator), "--collector-port", String(ports.collector)],
      ...["--state-file", path.join(o.runDir, "collector-state.json")],
      ...(d ? ["--heartbeat-timeout-ms", String(d.timeoutMs), "--interval-ms", String(d.keeperTickMs)] : []),
      ...(hostNet ? ["--host", keeperIp] : []),
    ],
    {},
    on("chain"),
  );
  for (const i of [1, 2, 3]) {
    const key = actors.keyFiles[`verifier${i}` as Role];
    const decisions = path.join(o.runDir, `verifier${i}-decisions.json`);
    group.start(
      `verifier${i}`,
      [
        ...[cli, "verify", ...common(`verifier${i}`), "--key", key, "--store", store],
        ...["--collector", collectorUrl, "--decisions", decisions],
      ],
      env,
      on(`verifier${i}`),
    );
  }
  for (const p of actors.providers) {
    const extra =
      p.name === "bob"
        ? ["--memory-cap", String(cappedMemoryMiB(o.template))]
        : p.name === "mallory" && o.fault
          ? ["--fault", o.fault]
          : [];
    group.start(
      p.name,
      [
        ...[
          cli,
          "provide",
          ...common(p.name),
          "--json",
          "--name",
          p.name,
          "--price",
          PRICE[p.name],
          "--key",
          p.keyFile,
        ],
        ...["--store", store, "--coordinator", coordinatorUrl],
        // Every trained step logged (the exact work-lost figure) only by the provider this run kills or cuts off:
        // a line per step costs the trainer and this process time (the bench's long job).
        ...(p.name === "alice" && (o.kill || o.hosts) ? ["--step-log"] : []),
        ...(d ? ["--heartbeat-ms", String(d.beatMs)] : []),
        ...extra,
      ],
      demoProviderEnv(env),
      on(p.name),
    );
  }
}

/**
 * The demo's providers train on the cpu unless GPUCHAIN_EP says otherwise: on a GPU machine the agent would choose
 * webgpu, whose profile is proven for no template yet, and the coordinator would give the run's job to no one.
 */
export function demoProviderEnv(env: Record<string, string>): Record<string, string> {
  return { ...env, GPUCHAIN_EP: process.env.GPUCHAIN_EP || "cpu" };
}

export async function providersRegistered(protocol: Protocol, providers: Provider[]): Promise<boolean> {
  const records = await Promise.all(providers.map((p) => protocol.registry.isActive(p.wallet.address)));
  return records.every(Boolean);
}

/** The client approves the budget and posts the job; returns its id and the block it was created in. */
export async function createJob(
  run: Run,
  client: Wallet,
  templateId: string,
): Promise<{ jobId: bigint; block: number }> {
  return postJob(
    run.protocol,
    client,
    templateId,
    run.o,
    run.net.rehearsal && ((tx) => run.net.rehearsal!.sendUnderSpike(client, tx, run.note)),
  );
}

/** `client` approves the budget of a job of `shape` at MAX_PRICE and posts it; its id and block, from JobCreated. */
export async function postJob(
  protocol: Protocol,
  client: Wallet,
  templateId: string,
  shape: { totalSteps: number; checkpointInterval: number },
  /** --network rehearsal: sends createJob under a gas spike and speeds it up (demo/rehearsal.ts). */
  underSpike?: (tx: ContractTransaction) => Promise<{ hash: string; blockNumber: number }>,
): Promise<{ jobId: bigint; block: number }> {
  const budget = budgetOf(shape.totalSteps);
  await mined(protocol.usdc.connect(client).approve(await protocol.escrow.getAddress(), budget));
  const request = {
    templateId,
    totalSteps: shape.totalSteps,
    checkpointInterval: shape.checkpointInterval,
    maxPricePerStep: MAX_PRICE,
    budget,
    disputeWindow: DISPUTE_WINDOW,
  };
  const escrow = protocol.escrow.connect(client);
  const receipt = underSpike
    ? await client.provider!.getTransactionReceipt(
        (await underSpike(await escrow.createJob.populateTransaction(request))).hash,
      )
    : await mined(escrow.createJob(request));
  const created = receipt!.logs.map((l) => protocol.escrow.interface.parseLog(l)).find((e) => e?.name === "JobCreated");
  return { jobId: created!.args.jobId as bigint, block: receipt!.blockNumber };
}

/** Names for the addresses the story mentions: the providers, and the verifiers (a slash names its finder). */
export function nameBook(actors: Actors): Record<string, string> {
  const verifiers = [1, 2, 3].map((i) => {
    const role = `verifier${i}` as Role;
    return [loadKey(actors.keyFiles[role]).address.toLowerCase(), role];
  });
  return Object.fromEntries([...actors.providers.map((p) => [p.wallet.address.toLowerCase(), p.name]), ...verifiers]);
}
