/**
 * `gpuchain keeper …` as a real process against the simulated chain (served over HTTP by a small JSON-RPC bridge):
 * --once runs, --dry-run sends nothing, `all` starts the four keepers and stops cleanly on SIGTERM, usage errors.
 */
import { expect } from "chai";
import { spawn } from "node:child_process";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { writeKey } from "../../sdk/run/keys.ts";
import { UsageError } from "../../sdk/run/args.ts";
import { main } from "../../keepers/cli.ts";
import { beat, connection, createJob, ethers, load, wallet, type Protocol } from "./fixture.ts";
import { rpcBridge } from "../helpers/rpcBridge.ts";

const NODE = path.resolve("node_modules/.bin/node");
const CLI = path.resolve("cli/gpuchain.ts");

/** Ignition's deployed_addresses.json for the fixture's deployment. */
function deploymentFile(dir: string, p: Protocol): string {
  const d = p.deployment;
  const s = d.safe;
  const file = path.join(dir, "deployed_addresses.json");
  writeFileSync(
    file,
    JSON.stringify({
      "TestUSDC#TestUSDC": d.usdc,
      "ProviderRegistry#ProviderRegistry": d.registry,
      "SafeSingletons#SafeL2": s.safeSingletonAddress,
      "SafeSingletons#SafeProxyFactory": s.safeProxyFactoryAddress,
      "SafeSingletons#CompatibilityFallbackHandler": s.fallbackHandlerAddress,
      "SafeSingletons#MultiSend": s.multiSendAddress,
      "SafeSingletons#MultiSendCallOnly": s.multiSendCallOnlyAddress,
      "SafeSingletons#SignMessageLib": s.signMessageLibAddress,
      "SafeSingletons#CreateCall": s.createCallAddress,
      "SafeSingletons#SimulateTxAccessor": s.simulateTxAccessorAddress,
      "VerifierSafe#VerifierSafeProxy": d.verifierSafe,
      "GPUChainLocal#JobEscrow": d.escrow,
    }),
  );
  return file;
}

interface Run {
  code: Promise<number>;
  lines: () => Record<string, unknown>[];
  stderr: () => string;
  kill: (signal: NodeJS.Signals) => void;
  waitFor: (pred: (l: Record<string, unknown>) => boolean, ms?: number) => Promise<void>;
}

function keeper(args: string[]): Run {
  const child = spawn(NODE, [CLI, "keeper", ...args], { stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  let err = "";
  child.stdout.on("data", (c) => (out += c));
  child.stderr.on("data", (c) => (err += c));
  const lines = () =>
    out
      .split("\n")
      .filter((l) => l.startsWith("{"))
      .map((l) => JSON.parse(l));
  const code = new Promise<number>((r) => child.on("close", (c, s) => r(c ?? (s ? 128 : 1))));
  return {
    code,
    lines,
    stderr: () => err,
    kill: (s) => child.kill(s),
    async waitFor(pred, ms = 20_000) {
      const until = Date.now() + ms;
      while (!lines().some(pred)) {
        if (Date.now() > until) throw new Error(`timed out; stdout:\n${out}\nstderr:\n${err}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    },
  };
}

describe("keepers: gpuchain keeper CLI (child processes)", function () {
  let bridge: Awaited<ReturnType<typeof rpcBridge>>;
  let p: Protocol;
  let dir: string;
  let common: string[];
  before(async function () {
    p = await load();
    await createJob(p);
    bridge = await rpcBridge(connection.provider);
    dir = mkdtempSync(path.join(tmpdir(), "gpuchain-keeper-cli-"));
    writeKey(path.join(dir, "coordinator.key"), wallet(1).privateKey);
    writeKey(path.join(dir, "stranger.key"), wallet(11).privateKey);
    common = ["--rpc", bridge.url, "--deployment", deploymentFile(dir, p)];
  });
  after(async function () {
    await bridge?.close();
  });
  /** `keeper all` signing with `keyFile` (in the suite's folder), the collector on `collectorPort`. */
  const allKeepers = (keyFile: string, collectorPort: string, stateFile: string) => [
    "all",
    ...common,
    "--key",
    path.join(dir, keyFile),
    "--coordinator-port",
    "0",
    "--collector-port",
    collectorPort,
    "--state-file",
    path.join(dir, stateFile),
  ];

  it("reserves --once checks the latest block and exits 0", async function () {
    const run = keeper(["reserves", "--once", ...common]);
    expect(await run.code, run.stderr()).to.equal(0);
    const total = String(100_000n + (await p.registry.totalStaked())); // budgets and the providers' stakes
    expect(run.lines().find((l) => l.msg === "reserves")).to.include({ held: total, owed: total });
  });

  it("coordinator --once --dry-run decides, logs the decision and sends nothing", async function () {
    const before = await ethers.provider.getBlockNumber();
    const run = keeper(["coordinator", "--once", "--dry-run", "--port", "0", ...common]);
    expect(await run.code, run.stderr()).to.equal(0);
    expect(run.lines().find((l) => l.msg === "decision")).to.include({ job: "1", action: "wait" });
    expect(await ethers.provider.getBlockNumber()).to.equal(before);
  });

  it("all: runs the four keepers in one process, assigns over HTTP heartbeats, and stops cleanly on SIGTERM", async function () {
    const run = keeper([
      ...allKeepers("coordinator.key", "0", "collector.json"),
      "--interval-ms",
      "200",
      "--cron",
      "*/1 * * * * *",
    ]);
    await run.waitFor((l) => l.msg === "listening" && l.component === "coordinator");
    await run.waitFor((l) => l.msg === "started" && l.keeper === "finalizer");
    const url = run.lines().find((l) => l.msg === "listening" && l.component === "coordinator")!.url as string;
    const res = await fetch(`${url}/heartbeat`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(await beat(wallet(9), p, Date.now())),
    });
    expect(res.status).to.equal(200);
    await run.waitFor((l) => l.msg === "sent" && l.action === "assign");
    expect((await p.escrow.jobOf(1n)).provider).to.equal(wallet(9).address);
    run.kill("SIGTERM");
    expect(await run.code, run.stderr()).to.equal(0);
    const stopped = run
      .lines()
      .filter((l) => l.msg === "stopped")
      .map((l) => l.keeper);
    expect(stopped).to.have.members(["coordinator", "collector", "finalizer", "reserves"]);
  });

  it("all: a keeper that cannot start (port taken) stops the others; exit code 1", async function () {
    const taken = createServer();
    await new Promise<void>((r) => taken.listen(0, "127.0.0.1", () => r()));
    try {
      const port = String((taken.address() as AddressInfo).port);
      const run = keeper(allKeepers("stranger.key", port, "collector2.json"));
      expect(await run.code, run.stderr()).to.equal(1);
      expect(run.lines().find((l) => l.msg === "keeper failed; stopping the others")).to.include({
        keeper: "collector",
      });
    } finally {
      taken.close();
    }
  });

  it("usage errors exit 2 with a message (no key, unknown keeper, bad flag, bad cron, missing deployment)", async function () {
    const run = keeper(["coordinator", ...common]);
    expect(await run.code).to.equal(2);
    expect(run.stderr()).to.match(/^gpuchain: --key FILE is required/);
    for (const args of [
      ["janitor"],
      ["coordinator", "--bogus"],
      ["finalizer", "--cron", "often", ...common],
      ["collector", "--via-safe-tx", "--key", "k", ...common],
      ["reserves", "--once", "--rpc", bridge.url, "--deployment", path.join(dir, "missing.json")],
    ]) {
      const err = await main(args).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err, args.join(" ")).to.be.instanceOf(UsageError);
    }
  });
});
