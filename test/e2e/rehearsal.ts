/**
 * `npm start -- --network rehearsal`, in the short configuration: the whole scenario (a faulty provider
 * refused, alice SIGKILLed, failover, verdict, settlement) on anvil with 2-s blocks, every part behind its own fault
 * proxy, three reorganisations at chosen moments (after a report, an acceptance, the verdict; depths 1–3, each
 * removing its event's block) and the client's createJob stuck below a base-fee spike. Every promise of `npm start`
 * must hold, checked against the chain (demo/settlement.ts, demo/rehearsal.ts's audit straight from the node).
 */
import { expect } from "chai";
import path from "node:path";
import { runScenario, type ScenarioResult } from "../../demo/scenario.ts";
import { REORG_MOMENTS, reorgDepth } from "../../demo/rehearsal.ts";
import { expectEveryPromiseKept, removeDeploymentAfter, SHORT_RUN } from "../helpers/scenario.ts";

describe("npm start --network rehearsal: the whole network on a chain that misbehaves (short configuration)", function () {
  this.timeout(900_000);
  const deploymentId = `e2e-rehearsal-${process.pid}`;
  const lines: string[] = [];
  let result: ScenarioResult;

  before(async function () {
    result = await runScenario({
      ...SHORT_RUN,
      runDir: path.join(".gpuchain", `e2e-rehearsal-${process.pid}`),
      deploymentId,
      rehearsal: true,
      timeoutMs: 720_000,
      print: (l) => lines.push(l),
    });
    if (!result.ok) console.log(lines.join("\n"));
  });

  removeDeploymentAfter(deploymentId);

  it("keeps every promise of npm start and the rehearsal's own", function () {
    expectEveryPromiseKept(result);
  });

  it("injected RPC faults of every kind (429, dropped, truncated), through every part's proxy", function () {
    const r = result.rehearsal!;
    expect(r.injected.http429).to.be.greaterThan(0);
    expect(r.injected.drop + r.injected.truncate).to.be.greaterThan(0);
    for (const part of ["keepers", "verifier1", "alice", "bob", "mallory", "start"])
      expect(r.requestsPerPart[part], part).to.be.greaterThan(0);
  });

  it("reorganised the chain at each chosen moment, removing the event's block, and said so", function () {
    expect(result.rehearsal!.reorgs).to.equal(REORG_MOMENTS.length);
    for (const m of REORG_MOMENTS)
      expect(lines.some((l) => l.startsWith(">>> injected: reorganisation") && l.includes(`just after ${m.after}`))).to
        .be.true;
    expect(lines.filter((l) => /^>>> chain reorganisation: blocks from \d+ replaced/.test(l)).length).to.be.at.least(
      REORG_MOMENTS.length,
    );
  });

  it("moved no money by a transaction that reverted or was lost", function () {
    expect(result.rehearsal!.moneyFalseActions).to.equal(0);
  });

  it("prints what was injected and what each part did, after the table", function () {
    const at = lines.indexOf("rehearsal: what was injected");
    expect(at).to.be.greaterThan(0);
    const did = lines.indexOf("rehearsal: what each part did");
    expect(did).to.be.greaterThan(at);
    expect(lines.some((l) => /^ {2}gas spike: base fee .* gwei with the client's createJob/.test(l))).to.be.true;
    expect(lines.some((l) => /^ {2}keepers: \d+ requests; injected \d+ rate limits \(HTTP 429\)/.test(l))).to.be.true;
    expect(lines.some((l) => /^ {2}client: sped up its stuck createJob [1-9]\d* time\(s\)/.test(l))).to.be.true;
  });

  it("pure: the depth that removes the event's block, at most 3", function () {
    expect(reorgDepth(1, 100, 100)).to.equal(1);
    expect(reorgDepth(1, 101, 100)).to.equal(2);
    expect(reorgDepth(2, 110, 100)).to.equal(3);
  });
});
