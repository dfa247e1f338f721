/**
 * README's local deployment, the chain restarted, and the command the CLI's "is stale" message advises, all for
 * real: a Hardhat node on loopback, Ignition run as README says (no folder removed first, as a person would), the
 * node stopped and a fresh one started on the same port, `gpuchain reserves` refusing the stale deployment file,
 * then the advised command run word for word and `gpuchain reserves` answering from the new deployment.
 *
 * Before the fix Ignition refused any deployment into an existing folder with HHE10002 ("needs to migrate this
 * deployments artifacts"), `--reset` included: the Safe artifacts from npm were Hardhat 2's format.
 */
import { expect } from "chai";
import { readdirSync, readFileSync, rmSync } from "node:fs";
import path from "node:path";
import { freePort, HARDHAT_CLI, startChain } from "../../demo/chain.ts";
import { ProcessGroup, runToEnd } from "../../demo/processes.ts";
import { runGpuchain } from "../helpers/cli.ts";

const README_DEPLOY = [
  HARDHAT_CLI,
  "ignition",
  "deploy",
  "ignition/modules/GPUChainLocal.ts",
  "--network",
  "localhost",
  "--parameters",
  "ignition/parameters/local.json",
];

/** `VAR=value … npx hardhat ARGS` (the advised command) as this Node's hardhat CLI and its environment. */
function asHardhatRun(command: string): { args: string[]; env: Record<string, string> } {
  const words = command.split(" ");
  const env: Record<string, string> = {};
  while (/^[A-Z_]+=/.test(words[0])) {
    const [name, ...value] = words.shift()!.split("=");
    env[name] = value.join("=");
  }
  expect(words.slice(0, 2), command).to.deep.equal(["npx", "hardhat"]);
  return { args: [HARDHAT_CLI, ...words.slice(2)], env };
}

describe("deploy, restart the chain, deploy again as the stale-deployment message says", function () {
  this.timeout(300_000);
  const group = new ProcessGroup(() => {});
  const deploymentId = `e2e-redeploy-${process.pid}`;
  const folder = path.join("ignition", "deployments", deploymentId);
  const file = path.join(folder, "deployed_addresses.json");

  after(async function () {
    await group.stopAll(3_000);
    rmSync(folder, { recursive: true, force: true });
  });

  it("refuses the stale file with a command that deploys again over it, and that command works", async function () {
    const port = await freePort(0);
    const url = await startChain(group, port);
    const first = await runToEnd([...README_DEPLOY, "--deployment-id", deploymentId], { GPUCHAIN_RPC_URL: url });
    expect(first.code, first.output).to.equal(0);
    // Every artifact Ignition kept is Hardhat 3's format (a Hardhat 2 one makes the next deploy fail, HHE10002).
    for (const name of readdirSync(path.join(folder, "artifacts")).filter((n) => !n.endsWith(".dbg.json"))) {
      const artifact = JSON.parse(readFileSync(path.join(folder, "artifacts", name), "utf8"));
      expect(artifact._format, name).to.equal("hh3-artifact-1");
    }
    const escrowBefore = JSON.parse(readFileSync(file, "utf8"))["GPUChainLocal#JobEscrow"];

    // The chain restarted: same port, same chain id, nothing deployed.
    await group.kill("chain", "SIGTERM");
    expect(await startChain(group, port)).to.equal(url);
    const stale = await runGpuchain(["reserves", "--rpc", url, "--deployment", file]);
    expect(stale.code, stale.stderr).to.equal(1);
    const line = stale.stderr.trim();
    expect(line.split("\n"), line).to.have.length(1);
    const advised = /is stale \(was the chain restarted\?\); deploy again with `([^`]+)`$/.exec(line);
    expect(advised, line).to.not.equal(null);
    expect(advised![1]).to.equal(
      `GPUCHAIN_RPC_URL=${url} npx hardhat ignition deploy ignition/modules/GPUChainLocal.ts --network localhost ` +
        `--parameters ignition/parameters/local.json --deployment-id ${deploymentId} --reset`,
    );

    const { args, env } = asHardhatRun(advised![1]);
    const again = await runToEnd(args, env);
    expect(again.code, again.output).to.equal(0);
    expect(again.output).to.not.match(/HHE\d+/);
    // The same file, now naming contracts on the new chain (same deployer, same nonces: the same addresses).
    expect(JSON.parse(readFileSync(file, "utf8"))["GPUChainLocal#JobEscrow"]).to.equal(escrowBefore);
    const fresh = await runGpuchain(["reserves", "--rpc", url, "--deployment", file]);
    expect(fresh.code, fresh.stderr).to.equal(0);
    expect(fresh.stderr).to.not.match(/is stale/);
  });
});
