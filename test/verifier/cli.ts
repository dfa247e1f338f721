import { expect } from "chai";
import { chmod, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { UsageError } from "../../sdk/run/args.ts";
import { DeploymentError } from "../../sdk/node/deployment.ts";
import { KeyFileError, writeKey } from "../../sdk/run/keys.ts";
import { main } from "../../verifier/cli.ts";
import { hardhatWallet } from "./helpers.ts";

async function failure(argv: string[]): Promise<unknown> {
  try {
    await main(argv);
  } catch (err) {
    return err;
  }
  return undefined;
}

describe("gpuchain verify: flags and key file", function () {
  let dir: string;
  let key: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "gpuchain-verifier-cli-"));
    key = join(dir, "verifier1.key");
    writeKey(key, hardhatWallet(3).privateKey);
  });
  after(() => rm(dir, { recursive: true, force: true }));

  it("prints its help and exits 0", async function () {
    const log = console.log;
    const lines: string[] = [];
    console.log = (s: string) => lines.push(s);
    try {
      expect(await main(["--help"])).to.equal(0);
    } finally {
      console.log = log;
    }
    expect(lines.join("\n")).to.include("--behaviour");
  });

  it("requires --key", async function () {
    expect(await failure([])).to.be.instanceOf(UsageError);
  });

  it("refuses an unknown behaviour, a negative sample count and unknown flags", async function () {
    expect(await failure(["--key", key, "--behaviour", "lazy"])).to.be.instanceOf(UsageError);
    expect(await failure(["--key", key, "--samples", "-1"])).to.be.instanceOf(UsageError);
    expect(await failure(["--key", key, "--sample", "3"])).to.be.instanceOf(UsageError);
  });

  it("refuses a key file readable by others", async function () {
    const loose = join(dir, "loose.key");
    writeKey(loose, hardhatWallet(4).privateKey);
    await chmod(loose, 0o644);
    expect(await failure(["--key", loose])).to.be.instanceOf(KeyFileError);
  });

  it("names the missing deployment file", async function () {
    expect(await failure(["--key", key, "--deployment", join(dir, "none.json")])).to.be.instanceOf(DeploymentError);
  });
});
