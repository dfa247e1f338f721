/**
 * The job model (sdk/rules/job.ts) against the compiled contract: the status enum mirrors IJobEscrow.JobStatus name by
 * name and value by value (read from the build's AST, which the ABI alone does not name), and `readJob` returns
 * what `jobOf` and `statusOf` say on a real chain.
 */
import { expect } from "chai";
import { readFileSync } from "node:fs";
import {
  isFinished,
  isOpen,
  isRunning,
  isSettleable,
  isTraining,
  isTrainingOver,
  JOB_STATUS,
  JobStatus,
  statusName,
} from "../../sdk/rules/job.ts";
import { readJob } from "../../sdk/node/jobReads.ts";
import { createJob, deployProtocol, networkHelpers, startJob } from "../helpers/fixture.ts";

const ARTIFACT = "artifacts/contracts/interfaces/IJobEscrow.sol/IJobEscrow.json";

interface AstNode {
  nodeType?: string;
  name?: string;
  members?: { name: string }[];
  nodes?: AstNode[];
}

/** The member names of `enumName` in the compiled IJobEscrow, in declaration (= value) order. */
function compiledEnum(enumName: string): string[] {
  const artifact = JSON.parse(readFileSync(ARTIFACT, "utf8"));
  const output = JSON.parse(readFileSync(`artifacts/build-info/${artifact.buildInfoId}.output.json`, "utf8"));
  const ast: AstNode = output.output.sources[artifact.inputSourceName].ast;
  const contract = ast.nodes!.find((n) => n.nodeType === "ContractDefinition" && n.name === "IJobEscrow")!;
  const e = contract.nodes!.find((n) => n.nodeType === "EnumDefinition" && n.name === enumName);
  if (!e) throw new Error(`no enum ${enumName} in the compiled IJobEscrow`);
  return e.members!.map((m) => m.name);
}

describe("sdk: the job model", function () {
  it("mirrors IJobEscrow.JobStatus exactly (names and values, from the compiled contract)", function () {
    const compiled = compiledEnum("JobStatus");
    expect(JOB_STATUS).to.deep.equal(compiled);
    compiled.forEach((name, value) => expect(JobStatus[name as keyof typeof JobStatus]).to.equal(value));
    // statusOf returns that enum in the ABI too.
    const abi = JSON.parse(readFileSync(ARTIFACT, "utf8")).abi as {
      name?: string;
      outputs?: { internalType: string }[];
    }[];
    expect(abi.find((f) => f.name === "statusOf")!.outputs![0].internalType).to.equal("enum IJobEscrow.JobStatus");
  });

  it("names a status value, and refuses one the enum does not have (a newer contract)", function () {
    expect(statusName(2n)).to.equal("Running");
    expect(statusName(8)).to.equal("Cancelled");
    expect(() => statusName(9)).to.throw(RangeError, /unknown JobStatus 9/);
  });

  it("predicates: each status in exactly the groups it belongs to", function () {
    const groups = (s: (typeof JOB_STATUS)[number]) =>
      [isOpen, isRunning, isTraining, isTrainingOver, isSettleable, isFinished].map((f) => (f(s) ? 1 : 0)).join("");
    expect(JOB_STATUS.map(groups)).to.deep.equal([
      "000000", // None
      "101000", // Open
      "011000", // Running
      "000100", // DisputeWindow
      "000110", // Settleable
      "000100", // Disputed
      "000110", // ArbiterTimedOut
      "000101", // Settled
      "000101", // Cancelled
    ]);
  });

  it("readJob returns jobOf's fields and statusOf's status, at a given block too", async function () {
    const p = await networkHelpers.loadFixture(deployProtocol);
    const open = await createJob(p);
    const atCreation = await p.escrow.runner!.provider!.getBlockNumber();
    const running = await startJob(p);
    const raw = await p.escrow.jobOf(running);
    const view = await readJob(p.escrow, running);
    expect(view).to.include({
      jobId: running,
      status: "Running",
      client: raw.client,
      provider: raw.provider,
      epoch: raw.epoch,
      totalSteps: Number(raw.totalSteps),
      checkpointInterval: Number(raw.checkpointInterval),
      budget: raw.budget,
      templateId: raw.templateId.toLowerCase(),
      leaseExpiresAt: raw.leaseExpiresAt,
      pricePerStep: raw.pricePerStep,
    });
    expect((await readJob(p.escrow, open)).status).to.equal("Open");
    // Before job 2 existed, it reads as None: both views come from the same block.
    expect((await readJob(p.escrow, running, atCreation)).status).to.equal("None");
  });
});
