// The Provide compute page's command (dashboard/src/model/provideCommand.ts): what a person copies must join this
// network. A dashboard started without --store cannot know the network's checkpoint store: the command says so with a
// word to fill in, rather than a guessed folder whose checkpoints the verifiers never read (found by a walkthrough:
// the copied command's first checkpoint was refused, "checkpoint blobs not readable in the store yet").
import { expect } from "chai";
import { machineLocal, provideCommand, STORE_UNKNOWN } from "../../dashboard/src/model/provideCommand.ts";
import type { DashboardConfig } from "../../dashboard/src/sources/config.ts";

const config = (store: string | null, storeEnv: Record<string, string> = {}): DashboardConfig =>
  ({
    chainId: "31337",
    rpc: "http://127.0.0.1:8545",
    deploymentFile: "ignition/deployments/chain-31337/deployed_addresses.json",
    coordinator: "http://127.0.0.1:8600",
    store,
    storeEnv,
  }) as unknown as DashboardConfig;

describe("dashboard: the Provide compute command", function () {
  it("names the store the dashboard was given, with its environment in front", function () {
    const c = provideCommand(
      config("s3://gpuchain/checkpoints", { AWS_ENDPOINT_URL: "http://127.0.0.1:9000" }),
      "dave",
      "0.001",
      "",
    );
    expect(c).to.match(/^AWS_ENDPOINT_URL=http:\/\/127\.0\.0\.1:9000 npx gpuchain provide --name dave --price 0\.001 /);
    expect(c).to.include("--store s3://gpuchain/checkpoints");
    expect(c).to.include("--faucet");
  });

  it("without --store it asks for the store (STORE_URL, marked to replace) instead of guessing a folder", function () {
    const c = provideCommand(config(null), "dave", "0.001", "");
    expect(c).to.include(`--store ${STORE_UNKNOWN}`);
    expect(c).to.not.include(".gpuchain/store");
    expect(machineLocal(` --store ${STORE_UNKNOWN}`)).to.equal(true);
    expect(machineLocal(" --name dave")).to.equal(false);
  });
});
