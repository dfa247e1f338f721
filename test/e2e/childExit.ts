/**
 * `npm start` when a part of the network exits on its own mid-run (here every provider, refusing a bad
 * GPUCHAIN_EP): the run stops waiting at once and fails with that part's last stderr line, instead of timing out
 * after 120 s "waiting for providers to register" with the reason never shown.
 */
import { expect } from "chai";
import { spawn } from "node:child_process";
import { existsSync, rmSync } from "node:fs";
import path from "node:path";

describe("npm start: a child that exits mid-run ends the run with its last words (real processes)", function () {
  this.timeout(300_000);
  const runDir = path.join(".gpuchain", `e2e-childexit-${process.pid}`);
  let out = { code: null as number | null, stdout: "", stderr: "", keepersAt: 0, endedAt: 0, pid: 0 };

  before(async function () {
    out = await new Promise((resolve) => {
      const child = spawn(process.execPath, ["scripts/start.ts", "--quick", "--run-dir", runDir], {
        env: { ...process.env, GPUCHAIN_EP: "bogus" },
        stdio: ["ignore", "pipe", "pipe"],
      });
      let stdout = "";
      let stderr = "";
      let keepersAt = 0;
      child.stdout.on("data", (d) => {
        stdout += d;
        if (!keepersAt && stdout.includes("started: keepers")) keepersAt = Date.now();
      });
      child.stderr.on("data", (d) => (stderr += d));
      const limit = setTimeout(() => child.kill("SIGINT"), 280_000);
      child.on("close", (code) => {
        clearTimeout(limit);
        resolve({ code, stdout, stderr, keepersAt, endedAt: Date.now(), pid: child.pid! });
      });
    });
  });

  after(() => rmSync(runDir, { recursive: true, force: true }));

  it("fails (exit 1) with one line naming the provider and its own error", function () {
    expect(out.code, out.stdout + out.stderr).to.equal(1);
    expect(out.stderr.trim()).to.match(
      /^npm start failed: (alice|bob|mallory) exited with code 2 during the run: gpuchain: GPUCHAIN_EP must be one of auto, cpu, webgpu, cuda, got "bogus"$/,
    );
  });

  it("shows the child's last stderr lines above, then stops everything it started", function () {
    const lines = out.stdout.split("\n");
    const at = lines.findIndex((l) =>
      /^\[(alice|bob|mallory)\] exited with code 2 during the run; its last lines/.test(l),
    );
    expect(at, out.stdout).to.be.greaterThan(0);
    expect(lines[at + 1]).to.match(/^\[(alice|bob|mallory)\] {3}gpuchain: GPUCHAIN_EP must be one of/);
    expect(lines.some((l) => /^stopped the \d+ processes this run started$/.test(l))).to.equal(true);
    expect(out.stdout).to.not.contain("timed out");
    expect(existsSync(path.join("ignition", "deployments", `gpuchain-start-${out.pid}`))).to.equal(false);
  });

  it("stops waiting at once, not after the 120 s registration timeout", function () {
    expect(out.keepersAt).to.be.greaterThan(0);
    expect(out.endedAt - out.keepersAt).to.be.below(60_000);
  });
});
