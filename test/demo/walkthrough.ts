/**
 * What a new user's walkthrough of `npm start` found, each case as that user meets it:
 *   1. a bad --store is a usage error before anything is deployed; a child that exits mid-run is named with its
 *      last stderr lines (ProcessGroup keeps them and knows which exits it asked for; childExit.ts decides);
 *   2. the client is funded with (and, on an existing deployment, checked for) the budget alone unless it disputes;
 *   3. a kept run writes the arbiter's key file too, and its hints name it;
 *   4. the settlement table shows a slashed provider's deposit, slash and what is left, and the client's
 *      compensation, from a real slash's events;
 *   5. a replay shows no dashboard URL nothing serves, and names the recording it plays.
 */
import { expect } from "chai";
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { JsonRpcProvider } from "ethers";
import * as fx from "../helpers/fixture.ts";
import { budgetOf, clientHoldsBond, prepareActors } from "../../demo/actors.ts";
import { TEST_KEYS } from "../../demo/chain.ts";
import { exitEndsRun, exitReport } from "../../demo/childExit.ts";
import { ROLES, writeRunKeys, type ScenarioNetwork } from "../../demo/network.ts";
import { ProcessGroup, type ExitInfo } from "../../demo/processes.ts";
import { playedLine, replay } from "../../demo/recording.ts";
import { checkStoreOption } from "../../demo/s3.ts";
import { clientLine, formatTable, keptHowTo } from "../../demo/report.ts";
import type { Run } from "../../demo/types.ts";
import { escrowLedger } from "../../sdk/node/events.ts";
import { formatUsdc } from "../../sdk/words/format.ts";
import { loadKey, writeKey } from "../../sdk/run/keys.ts";
import { clientCompensation, stakeBookOf } from "../../sdk/rules/ledger.ts";
import { providerSummaries } from "../../sdk/words/narrative.ts";

const START = path.resolve("scripts/start.ts");

function runStart(args: string[], limitMs: number): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [START, ...args], { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    const timer = setTimeout(() => child.kill("SIGINT"), limitMs);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

describe("npm start walkthrough 1: a bad --store, and a child that exits mid-run", function () {
  this.timeout(60_000);
  const dir = mkdtempSync(path.join(tmpdir(), "gpuchain-walk-"));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("--store bogus://x: exit 2 with the store parser's one line, before any chain, run folder or deployment", async function () {
    const runDir = path.join(dir, "run");
    const started = Date.now();
    const r = await runStart(["--quick", "--store", "bogus://x", "--run-dir", runDir], 45_000);
    expect(r.stderr).to.equal(
      "npm start: --store: unsupported store URL bogus://x (expected file://DIR or s3://BUCKET/PREFIX)\n",
    );
    expect(r.code).to.equal(2);
    expect(r.stdout).to.equal(""); // no "starting the local chain", no "deploying"
    expect(existsSync(runDir)).to.equal(false);
    expect(Date.now() - started).to.be.below(30_000);
  });

  it("a good --store (a plain folder, file://) passes the same check", function () {
    expect(() => checkStoreOption(undefined)).to.not.throw();
    expect(() => checkStoreOption(path.join(dir, "store"))).to.not.throw();
    expect(() => checkStoreOption(`file://${dir}/store`)).to.not.throw();
    expect(() => checkStoreOption("s3://")).to.throw(/^--store: store URL s3:\/\/ names no bucket/);
  });

  it("ProcessGroup: an exit it did not ask for comes with the child's last stderr lines; one it asked for says so", async function () {
    const exits: [string, number | null, ExitInfo][] = [];
    const group = new ProcessGroup(() => {});
    group.onExit = (name, code, _signal, how) => void exits.push([name, code, how]);
    const script = "for (let i = 0; i < 12; i++) console.error('line ' + i); console.log('out'); process.exit(3)";
    const dies = group.start("verifier1", ["-e", script]);
    await new Promise((r) => dies.once("close", r));
    group.start("alice", ["-e", "setInterval(() => {}, 1000)"]);
    await group.kill("alice", "SIGKILL");
    expect(exits.map(([n, c, h]) => [n, c, h.requested])).to.deep.equal([
      ["verifier1", 3, false],
      ["alice", null, true],
    ]);
    // the last 8 of its 12 stderr lines, its stdout not among them
    expect(exits[0][2].stderr).to.deep.equal([4, 5, 6, 7, 8, 9, 10, 11].map((i) => `line ${i}`));
  });

  it("childExit: what ends the run (not alice's kill, not mallory's own die-at), and the one line it fails with", function () {
    const e = { name: "bob", code: 2, signal: null, requested: false, stderr: ["(node) warning", "gpuchain: boom"] };
    expect(exitEndsRun(e, "garbage-weights")).to.equal(true);
    expect(exitEndsRun({ ...e, name: "alice", requested: true }, "garbage-weights")).to.equal(false);
    expect(exitEndsRun({ ...e, name: "mallory", code: 137 }, "die-at:7")).to.equal(false);
    expect(exitEndsRun({ ...e, name: "verifier1" }, "die-at:7")).to.equal(true);
    expect(exitReport(e)).to.deep.equal({
      lines: [
        "[bob] exited with code 2 during the run; its last lines on stderr:",
        "[bob]   (node) warning",
        "[bob]   gpuchain: boom",
      ],
      message: "bob exited with code 2 during the run: gpuchain: boom",
    });
    expect(exitReport({ ...e, code: null, signal: "SIGSEGV", stderr: [] }).message).to.equal(
      "bob was killed by SIGSEGV during the run (nothing on stderr; its output is above)",
    );
  });
});

describe("npm start walkthrough 2: the client's dispute bond only when it disputes", function () {
  const dir = mkdtempSync(path.join(tmpdir(), "gpuchain-walk-"));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const BOND = 50_000_000n;

  /** prepareActors against a network that records what it was asked to fund (no chain needed). */
  async function fundedFor(o: { dispute: boolean; keep?: boolean }, local: boolean): Promise<bigint[]> {
    const asked: bigint[] = [];
    const keyFiles = Object.fromEntries(
      ROLES.map((r) => [r, path.join(dir, `${r}.key`)]),
    ) as ScenarioNetwork["keyFiles"];
    for (const role of ROLES) writeKey(keyFiles[role], TEST_KEYS[role]);
    const net = {
      local,
      keyFiles,
      fundClient: async (_p: unknown, _c: unknown, amount: bigint) => void asked.push(amount),
      fundGas: async () => {},
    } as unknown as ScenarioNetwork;
    const protocol = { escrow: { disputeBond: async () => BOND } };
    const provider = new JsonRpcProvider("http://127.0.0.1:9", undefined, { staticNetwork: true });
    const runDir = mkdtempSync(path.join(dir, "run-"));
    const run = { o: { ...o, totalSteps: 600, runDir }, net, provider, protocol, note: () => {} } as unknown as Run;
    await prepareActors(run);
    provider.destroy();
    return asked;
  }

  it("an existing deployment's run without --dispute is funded for (and checked against) the budget alone", async function () {
    expect(await fundedFor({ dispute: false }, false)).to.deep.equal([budgetOf(600)]);
    expect(await fundedFor({ dispute: false, keep: true }, false)).to.deep.equal([budgetOf(600)]);
  });

  it("a run that disputes, or a local one left up to dispute by hand, gets the bond too", async function () {
    expect(await fundedFor({ dispute: true }, true)).to.deep.equal([budgetOf(600) + BOND]);
    expect(await fundedFor({ dispute: false, keep: true }, true)).to.deep.equal([budgetOf(600) + BOND]);
    expect(await fundedFor({ dispute: false }, true)).to.deep.equal([budgetOf(600)]);
    expect(clientHoldsBond({ dispute: false }, true)).to.equal(false);
  });
});

describe("npm start walkthrough 3: a kept run's arbiter key", function () {
  const dir = mkdtempSync(path.join(tmpdir(), "gpuchain-walk-"));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("writes arbiter.key beside the others (0600), holding the deployment's arbiter (Hardhat's #2)", async function () {
    const { keyFiles, arbiterKeyFile } = writeRunKeys(dir);
    expect(arbiterKeyFile).to.equal(path.join(dir, "keys", "arbiter.key"));
    expect(path.dirname(keyFiles.client)).to.equal(path.dirname(arbiterKeyFile));
    expect(statSync(arbiterKeyFile).mode & 0o777).to.equal(0o600);
    expect(readFileSync(arbiterKeyFile, "utf8").trim()).to.equal(TEST_KEYS.arbiter);
    // The arbiter the same Ignition module deploys with (account 2), read from the escrow.
    const p = await fx.networkHelpers.loadFixture(fx.deployProtocol);
    expect(loadKey(arbiterKeyFile).address).to.equal(await p.escrow.arbiter());
  });

  it("the --keep hints name it in a ready command, and leave it out where the run has no arbiter key", function () {
    const k = {
      jobId: 1n,
      rpc: "http://127.0.0.1:8545",
      deploymentFile: "dep.json",
      clientKeyFile: "r/keys/client.key",
      template: "mnist-mlp",
    };
    const lines = keptHowTo({ ...k, arbiterKeyFile: "r/keys/arbiter.key" });
    expect(lines).to.include(
      "  npx gpuchain arbiter resolve 2 --reject --key r/keys/arbiter.key --rpc http://127.0.0.1:8545 " +
        "--deployment dep.json   (once job 2 is disputed; or --uphold)",
    );
    expect(lines).to.include("  keys of this run: r/keys (the arbiter's too: arbiter.key)");
    expect(keptHowTo(k).some((l) => l.includes("arbiter"))).to.equal(false);
  });
});

describe("npm start walkthrough 4: the settlement table after a real slash", function () {
  /** provider1 ("mallory") earns one checkpoint, then reports a fabricated one that is slashed (fault at 17). */
  async function slashed() {
    const p = await fx.networkHelpers.loadFixture(fx.deployProtocol);
    const jobId = await fx.startJob(p);
    await fx.reportAndAccept(p, jobId, p.provider1, 10);
    const hash = fx.ckpt(jobId, 20, "fabricated");
    await p.escrow.connect(p.provider1).reportCheckpoint(jobId, 1n, 20, hash);
    const fault = fx.faultAt(p, 17, p.verifier3.address);
    const sigs = await fx.signFault(p, jobId, 1n, 20, hash, fault);
    const receipt = await (await p.escrow.connect(p.stranger).refuseWithFault(jobId, 1n, 20, hash, fault, sigs)).wait();
    const event = receipt!.logs.map((l) => p.escrow.interface.parseLog(l)).find((e) => e?.name === "ProviderSlashed")!;
    const ledger = await escrowLedger(p.escrow, 0, { registry: p.registry });
    return { p, jobId, ledger, event };
  }

  it("mallory: paid in 10, slashed 1, 9 held now (not 'deposited 9'); the figures add up", async function () {
    const { p, jobId, ledger } = await slashed();
    const [s] = providerSummaries(ledger.jobs.get(jobId)!);
    const row = (name: string, address: string) => ({
      name,
      stepsAccepted: 0,
      checkpointsRefused: 0,
      earned: 0n,
      withdrawn: 0n,
      stake: stakeBookOf(ledger, address),
      why: name === "mallory" ? s.why : "never assigned",
    });
    const rows = [row("mallory", p.provider1.address), row("bob", p.provider2.address)];
    const table = formatTable(rows);
    expect(table[0]).to.match(/withdrawn USDC {2}stake USDC paid in\/slashed\/held now {2}why$/);
    expect(table[2]).to.match(/^mallory .* 10\.000000 \/ 1\.000000 \/ 9\.000000 +slashed: fault at step 17/);
    expect(table[3]).to.match(/^bob .* 10\.000000 \/ 0\.000000 \/ 10\.000000 +never assigned$/);
    for (const r of rows) expect(r.stake.paidIn).to.equal(r.stake.deposited + r.stake.slashed); // none withdrawn
    const onChain = await p.registry.stakeOf(p.provider1.address);
    expect(onChain.deposited).to.equal(rows[0].stake.deposited); // "held now" is the registry's own figure
  });

  it("the client's compensation is its share of the slash (ProviderSlashed's toClient), shown beside its refund", async function () {
    const { jobId, ledger, event } = await slashed();
    const compensation = clientCompensation(ledger.jobs.get(jobId)!);
    expect(compensation).to.equal(event.args.toClient).and.to.be.greaterThan(0n);
    const split = event.args.toClient + event.args.toFinder + event.args.toFeeRecipient;
    expect(split).to.equal(event.args.slashed); // the slash is accounted for to the unit
    expect(clientLine({ refund: 40_000n, compensation, dispute: false, bondBack: 0n })).to.equal(
      `client refund: 0.040000 USDC; compensation (slashed and forfeited stake): ${formatUsdc(compensation)}`,
    );
    expect(clientLine({ refund: 40_000n, compensation: 0n, dispute: true, bondBack: 50_000_000n })).to.equal(
      "client refund: 0.040000 USDC; dispute bond returned: 50.000000 USDC",
    );
  });
});

describe("npm start walkthrough 5: a replay shows nothing that is not there", function () {
  const dir = mkdtempSync(path.join(tmpdir(), "gpuchain-walk-"));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("leaves the recorded dashboard URL out and names the recording being played", async function () {
    const file = path.join(dir, "played.jsonl");
    const entries = [
      { ms: 0, kind: "note", source: "start", data: "started: keepers" },
      { ms: 1, kind: "note", source: "start", data: "dashboard: http://127.0.0.1:8700/" },
      {
        ms: 2,
        kind: "summary",
        source: "start",
        data: ["every promise held", "recording: /tmp/rec-x/recording.jsonl"],
      },
    ];
    writeFileSync(file, entries.map((e) => JSON.stringify(e)).join("\n") + "\n");
    const printed: string[] = [];
    expect(await replay(file, (l) => printed.push(l), 1_000)).to.equal(0);
    expect(printed).to.deep.equal([
      `[Recorded] playing back ${file} (1000× speed)`,
      "[Recorded] started: keepers",
      "[Recorded] every promise held",
      `[Recorded] recording: ${file}`,
    ]);
    expect(playedLine("dashboard: https://x.example/", file)).to.equal(undefined);
    expect(playedLine("[chain] job 1 posted", file)).to.equal("[chain] job 1 posted");
  });

  it("the shipped sample plays back without its machine's dashboard URL or run path", async function () {
    const printed: string[] = [];
    expect(await replay("recordings/sample.jsonl", (l) => printed.push(l), 1e9)).to.equal(0);
    expect(printed.filter((l) => /dashboard: http|\/tmp\/rec-/.test(l))).to.deep.equal([]);
    expect(printed).to.include("[Recorded] recording: recordings/sample.jsonl");
  });
});
