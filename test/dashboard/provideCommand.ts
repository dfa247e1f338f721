// The Provide compute page's command (dashboard/src/model/provideCommand.ts): what a person copies must join this
// network. A dashboard started without --store cannot know the network's checkpoint store: the command says so with a
// word to fill in, rather than a guessed folder whose checkpoints the verifiers never read (found by a walkthrough:
// the copied command's first checkpoint was refused, "checkpoint blobs not readable in the store yet").
import { expect } from "chai";
import {
  machineLocal,
  provideCommand,
  providerWithdrawCommand,
  STORE_UNKNOWN,
} from "../../dashboard/src/model/provideCommand.ts";
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

  it("with the server's absolute paths it works from any folder: this installation's bin, absolute key and files", function () {
    const c = {
      ...config("/srv/run/store"),
      absolute: { install: "/opt/gpu chain", deploymentFile: "/opt/gpu chain/d.json", store: "/opt/gpu chain/store" },
    } as DashboardConfig;
    const command = provideCommand(c, "dave", "0.001", "");
    expect(command).to.match(/^npx --prefix '\/opt\/gpu chain' gpuchain provide --name dave --price 0\.001 /);
    expect(command).to.include("--key '/opt/gpu chain/.gpuchain/providers/dave/key'");
    expect(command).to.include("--deployment '/opt/gpu chain/d.json'");
    expect(command).to.include("--store '/opt/gpu chain/store'");
    expect(providerWithdrawCommand(c, "dave")).to.equal(
      "npx --prefix '/opt/gpu chain' gpuchain withdraw --key '/opt/gpu chain/.gpuchain/providers/dave/key' " +
        "--rpc http://127.0.0.1:8545 --deployment '/opt/gpu chain/d.json'",
    );
    // On another machine every one of them is replaced.
    for (const word of [" --prefix '/opt/gpu chain' ", " --key /k", " --store /s", " --deployment /d"])
      expect(machineLocal(word), word).to.equal(true);
    expect(machineLocal(" gpuchain provide")).to.equal(false);
    expect(machineLocal(" --store s3://gpuchain/checkpoints")).to.equal(false);
  });
});
