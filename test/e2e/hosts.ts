/**
 * `npm start -- --hosts` in the short configuration: chain + keepers, the store, each verifier and each provider
 * on a network host of its own (demo/hosts.ts). Between hosts the run survives a provider's link cut mid-job
 * (failover) and the store's host unreachable for 10 s, keeps every promise, and leaves no namespace behind.
 * Skipped, saying why, where namespaces cannot be made.
 */
import { expect } from "chai";
import { execFileSync } from "node:child_process";
import path from "node:path";
import { hostsUnavailable } from "../../demo/hosts.ts";
import { runScenario, type ScenarioResult } from "../../demo/scenario.ts";
import { expectEveryPromiseKept, removeDeploymentAfter, SHORT_RUN } from "../helpers/scenario.ts";

describe("the whole network across separate hosts (npm start -- --hosts, short configuration)", function () {
  this.timeout(600_000);
  const why = hostsUnavailable();
  const deploymentId = `e2e-hosts-${process.pid}`;
  const lines: string[] = [];
  let result: ScenarioResult;

  before(async function () {
    if (why) {
      console.log(`      skipped: ${why}`);
      this.skip();
    }
    result = await runScenario({
      ...SHORT_RUN,
      hosts: true,
      runDir: path.join(".gpuchain", `e2e-hosts-${process.pid}`),
      deploymentId,
      timeoutMs: 480_000,
      print: (l) => lines.push(l),
    });
    if (!result.ok || process.env.GPUCHAIN_E2E_PRINT) console.log(lines.join("\n"));
  });
  removeDeploymentAfter(deploymentId);

  it("keeps every promise across hosts", function () {
    expectEveryPromiseKept(result);
  });

  it("says which host each part ran on, and is badged as separate hosts on one machine", function () {
    const placed = lines.filter((l) => /host gpc-\d+-\w+ 10\.213\.\d+\.\d+:/.test(l));
    expect(placed.map((l) => l.match(/host gpc-\d+-(\w+)/)![1])).to.have.members([
      "chain",
      "store",
      "verifier1",
      "verifier2",
      "verifier3",
      "mallory",
      "alice",
      "bob",
    ]);
    const badges = lines.find((l) => l.startsWith("badges:"))!;
    expect(badges).to.contain("Separate hosts on one machine");
    expect(badges).to.not.contain("Real, separate machine");
  });

  it("survived alice's link cut (failover) and the store's host unreachable for 10 s", function () {
    expect(lines.some((l) => l.includes("cut alice's network link"))).to.equal(true);
    expect(result.failoverSeconds).to.be.a("number");
    expect(lines.some((l) => l.includes("cut the store's network link for 10 s"))).to.equal(true);
  });

  it("leaves no network namespace of the run behind", function () {
    const left = execFileSync("ip", ["netns", "list"])
      .toString()
      .split("\n")
      .filter((l) => l.startsWith(`gpc-${process.pid}-`));
    expect(left).to.deep.equal([]);
  });
});
