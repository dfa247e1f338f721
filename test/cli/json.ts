/**
 * The CLI for scripts: `--json` on every command that reports (one JSON document on standard output,
 * progress on standard error, a JSON error object and a non-zero exit on failure), a wallet looked up by name and
 * names in place of addresses, the CLI finding a network `npm start` runs (cli/liveNetwork.ts) with neither --rpc nor
 * --deployment, and every hint `npm start -- --keep` prints (demo/report.ts keptHowTo) run as printed. One real
 * network, as npm start makes it (demo/network.ts localNetwork: Hardhat's node, Ignition, fresh verifier keys), its
 * template mnist-mlp approved and its job 1 posted; the real CLI as child processes, run from a folder of its own.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { expect } from "chai";
import { getAddress, Wallet, type JsonRpcProvider } from "ethers";
import { connectProtocol, rpcProvider, type Protocol } from "../../sdk/node/contracts.ts";
import { loadDeployment } from "../../sdk/node/deployment.ts";
import { loadKey, loadOrCreateKey } from "../../sdk/run/keys.ts";
import { mined } from "../../sdk/node/txManager.ts";
import { localNetwork, type ScenarioNetwork } from "../../demo/network.ts";
import { ProcessGroup } from "../../demo/processes.ts";
import { keptHowTo } from "../../demo/report.ts";
import { budgetOf } from "../../demo/actors.ts";
import { loadTemplate } from "../../workloads/index.ts";
import { announceNetwork } from "../../cli/liveNetwork.ts";

const CLI = path.resolve("cli/gpuchain.ts");

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** `gpuchain ARGS` from `cwd`; with `until`, SIGINT once standard output matches it (a command that runs on). */
function gpuchain(args: string[], cwd: string, until?: RegExp): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { cwd, stdio: ["ignore", "pipe", "pipe"] });
    let [stdout, stderr] = ["", ""];
    let stopped = false;
    child.stdout.on("data", (d) => {
      stdout += d;
      if (!stopped && until?.test(stdout)) stopped = child.kill("SIGINT"); // once: a second would kill it outright
    });
    child.stderr.on("data", (d) => (stderr += d));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}

/** Standard output must be exactly one JSON document. */
function doc(r: Run): Record<string, unknown> & { error?: { message: string; kind: string; exitCode: number } } {
  expect(() => JSON.parse(r.stdout), `stdout: ${r.stdout}\nstderr: ${r.stderr}`).not.to.throw();
  return JSON.parse(r.stdout);
}

describe("gpuchain --json, names, and a network npm start runs", function () {
  this.timeout(300_000);
  const group = new ProcessGroup(() => {});
  const base = mkdtempSync(path.join(tmpdir(), "gpuchain-json-"));
  const runDir = path.join(base, "run");
  const deploymentId = `json-${process.pid}`;
  let net: ScenarioNetwork;
  let chain: JsonRpcProvider;
  let protocol: Protocol;
  let common: string[];
  let client: string;
  let unannounce = () => {};
  const carol = Wallet.createRandom();

  before(async function () {
    net = await localNetwork(group, { runDir, deploymentId, port: undefined }, () => {});
    const deploymentFile = path.resolve(net.deploymentFile);
    common = ["--rpc", net.rpc, "--deployment", deploymentFile];
    chain = rpcProvider(net.rpc, 50);
    protocol = connectProtocol(loadDeployment(deploymentFile), chain);
    // As npm start (demo/scenario.ts openRun, demo/actors.ts): its template approved, the client funded, job 1.
    const templateId = loadTemplate("mnist-mlp").templateId;
    await net.approveTemplate(protocol, chain, templateId);
    const wallet = loadKey(net.keyFiles.client).connect(chain);
    client = wallet.address;
    const bond = await protocol.escrow.disputeBond();
    await net.fundClient(protocol, wallet, budgetOf(600) + bond);
    const c = connectProtocol(loadDeployment(deploymentFile), wallet);
    await mined(c.usdc.approve(protocol.escrow, budgetOf(600)));
    await mined(
      c.escrow.createJob({
        templateId,
        totalSteps: 600,
        checkpointInterval: 100,
        maxPricePerStep: 1_500n,
        budget: budgetOf(600),
        disputeWindow: 60,
      }),
    );
    // A provider that registered as carol.
    await net.fundGas(chain, carol.address, () => {});
    const p = connectProtocol(loadDeployment(deploymentFile), carol.connect(chain));
    await mined(p.registry.register("carol", 1_000n, 0, "x86_64 CPU", 4096));
    // alice's key where npm start's providers keep theirs (demo/actors.ts); no agent runs here.
    loadOrCreateKey(path.join(runDir, "providers", "alice", "key"), true);
    // npm start's network file, written under the folder the CLI runs from (scripts/start.ts does it for a run).
    unannounce = announceNetwork({ rpc: net.rpc, deploymentFile, runDir }, base);
  });

  after(async function () {
    unannounce();
    chain?.destroy();
    await group.stopAll(5_000);
    rmSync(path.join("ignition", "deployments", deploymentId), { recursive: true, force: true });
    rmSync(base, { recursive: true, force: true });
  });

  it("reserves --json: one document, amounts as base units and USDC, the escrow checksummed", async function () {
    const r = await gpuchain(["reserves", "--json", ...common], base);
    expect(r.code, r.stderr).to.equal(0);
    const d = doc(r);
    expect(d.escrow).to.equal(getAddress(String(d.escrow)));
    expect(d.held).to.match(/^\d+$/);
    expect(d.heldUsdc).to.equal(`${(Number(d.held) / 1e6).toFixed(6)} USDC`);
    expect(d.owed).to.equal(budgetOf(600).toString());
    expect(d.holds).to.equal(true);
    expect(d.owedParts).to.include({ lockedBudgets: budgetOf(600).toString(), lockedBudgetsUsdc: "0.900000 USDC" });
    expect((await gpuchain(["reserves", "--json", "--watch", ...common], base)).stdout, "--watch and --json").to.match(
      /"kind": "usage"/,
    );
  });

  it("wallet --json, by address and by name: the client, a verifier, a registered provider", async function () {
    const byAddress = doc(await gpuchain(["wallet", client, "--json", ...common], base));
    expect(byAddress).to.include({ address: client, addressName: "client", agreesWithContract: true });
    const job = (byAddress.jobs as { jobId: string; client: Record<string, string> }[])[0];
    expect(job.jobId).to.equal("1");
    expect(job.client).to.include({ budget: "900000", budgetUsdc: "0.900000 USDC", refund: null });
    const byName = doc(await gpuchain(["wallet", "client", "--json", ...common], base));
    expect(byName.address).to.equal(client);
    const verifier2 = loadKey(net.keyFiles.verifier2).address;
    expect(doc(await gpuchain(["wallet", "verifier2", "--json", ...common], base))).to.include({
      address: verifier2,
      addressName: "verifier2",
    });
    expect(doc(await gpuchain(["wallet", "carol", "--json", ...common], base))).to.include({
      address: carol.address,
      addressName: "carol",
    });
    const human = await gpuchain(["wallet", "client", ...common], base);
    expect(human.stdout.split("\n")[0]).to.equal(`client (${client})`);
    const unknown = await gpuchain(["wallet", "nobody", "--json", ...common], base);
    expect(unknown.code).to.equal(1);
    expect(doc(unknown).error).to.include({ kind: "failure", exitCode: 1 });
    expect(doc(unknown).error!.message).to.match(/no wallet named "nobody" .*names known here: .*carol.*client/);
  });

  it("explain --json names the client and keeps amounts as base units beside USDC", async function () {
    const d = doc(await gpuchain(["explain", "1", "--json", ...common], base));
    expect(d).to.include({
      jobId: "1",
      status: "Open",
      client,
      clientName: "client",
      paid: "0",
      paidUsdc: "0.000000 USDC",
    });
    expect(d.budget).to.equal("900000");
  });

  it("job create, settle and withdraw --json: progress on stderr, one document on stdout, errors as JSON", async function () {
    const key = ["--key", net.keyFiles.client];
    const args = ["job", "create", "--template", "mnist-mlp", "--steps", "10", "--max-price", "0.0015"];
    const created = await gpuchain([...args, ...key, "--json", ...common], base);
    expect(created.code, created.stderr).to.equal(0);
    expect(created.stderr).to.match(/create the job: sent 0x[0-9a-f]{64}/);
    expect(doc(created)).to.include({
      action: "create",
      jobId: "2",
      client,
      budget: "15000",
      budgetUsdc: "0.015000 USDC",
    });
    const unapproved = await gpuchain(
      [...args.slice(0, 3), "blobs-tiny", ...args.slice(4), ...key, "--json", ...common],
      base,
    );
    expect(unapproved.code).to.equal(1);
    expect(doc(unapproved).error!.message).to.match(/^template blobs-tiny .* is not approved on escrow/);
    const usage = await gpuchain(["wallet", "0x1234", "--json", ...common], base);
    expect(usage.code).to.equal(2);
    expect(doc(usage).error).to.deep.include({ kind: "usage", exitCode: 2 });
    const settle = await gpuchain(["settle", "1", ...key, "--json", ...common], base);
    expect(settle.code).to.equal(1);
    expect(doc(settle).error!.message).to.match(/^job 1 cannot be settled now: it is Open/);
    const w = await gpuchain(["withdraw", ...key, "--json", ...common], base);
    expect(w.code, w.stderr).to.equal(0);
    const d = doc(w);
    expect(d).to.include({ account: client, accountName: "client", owed: "0", withdrawn: "0", tx: null });
    expect((d.pendingRefunds as { jobId: string }[]).map((p) => p.jobId)).to.deep.equal(["1", "2"]);
  });

  it("with neither --rpc nor --deployment, finds the network npm start runs from this folder", async function () {
    const r = await gpuchain(["reserves", "--json"], base);
    expect(r.code, r.stderr).to.equal(0);
    expect(r.stderr).to.contain(`using the network npm start runs (process ${process.pid}): --rpc ${net.rpc}`);
    expect(doc(r).holds).to.equal(true);
    const none = mkdtempSync(path.join(tmpdir(), "gpuchain-none-"));
    const missing = await gpuchain(["reserves"], none);
    rmSync(none, { recursive: true, force: true });
    expect(missing.stderr).to.match(/no deployment file at .*a network `npm start -- --keep` runs is found by itself/);
  });

  it("every hint npm start -- --keep prints works as printed", async function () {
    const lines = keptHowTo({
      jobId: 1n,
      rpc: net.rpc,
      deploymentFile: path.resolve(net.deploymentFile),
      clientKeyFile: net.keyFiles.client,
      arbiterKeyFile: net.arbiterKeyFile,
      template: "mnist-mlp",
    });
    const commands = lines
      .filter((l) => l.startsWith("  npx gpuchain "))
      .map((l) =>
        l
          .replace(/^ {2}npx gpuchain /, "")
          .split(/ {3}/)[0]
          .split(" "),
      );
    expect(commands.length).to.equal(6);
    for (const args of commands) {
      const watch = args.includes("--watch");
      const r = await gpuchain(args, base, watch ? /^block \d+: held/m : undefined);
      const said = `${args.join(" ")}\n${r.stdout}\n${r.stderr}`;
      if (args[0] === "dispute" || args[0] === "arbiter") {
        // For job 2 once its verdict is in (no provider runs here): the command is right, the job not there yet.
        expect(r.code, said).to.equal(1);
        expect(r.stderr, said).to.match(/job 2/);
        continue;
      }
      expect(r.code, said).to.equal(0);
      if (watch) expect(r.stdout, said).to.match(/smallest margin seen: .* HOLDS/);
    }
  });
});
