/**
 * The agent's execution provider choice, for real: the agent's own flag parsing, device decision and TrainerPool in
 * a child process (test/helpers/trainOnChosenDevice.ts) training blobs-tiny 3 steps. Forced webgpu on SwiftShader (a
 * software Vulkan driver: no GPU here) opens on the WebGPU provider and gives the cpu's state hash; forced webgpu
 * with no driver falls back to the cpu, the warning naming webgpu; auto never picks the software driver.
 */
import { expect } from "chai";
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import type { DeviceProfile } from "../../agent/device.ts";
import type { TrainerFactory } from "../../agent/trainers.ts";
import { createTrainer, decodeCheckpoint, ExecutionProviderError, localProfile } from "../../workloads/index.ts";
import { requireWebgpuSetup, SWIFTSHADER_ICD } from "../helpers/webgpu.ts";
import { assignedAgent, CPU_DEVICE, localProtocol, startAgent, until } from "./helpers.ts";

interface ChildRun {
  executionProvider: string;
  hash: string;
  device: { executionProvider: string; providerReason: string; providerDevice?: string };
  fellBack?: string;
  records: { level: string; msg: string; executionProvider?: string; error?: string }[];
  ms: number;
}

describe("agent: the execution provider it chooses, trained on for real (blobs-tiny, 3 steps)", function () {
  this.timeout(60_000);
  let runtimeDir: string;
  before(() => {
    runtimeDir = mkdtempSync(join(tmpdir(), "gpuchain-webgpu-agent-"));
  });
  after(() => rmSync(runtimeDir, { recursive: true, force: true }));

  async function train(args: string[], env: Record<string, string>): Promise<ChildRun> {
    const { GPUCHAIN_EP: _ep, VK_ICD_FILENAMES: _icd, VK_DRIVER_FILES: _drv, ...base } = process.env;
    const { stdout } = await promisify(execFile)(process.execPath, ["test/helpers/trainOnChosenDevice.ts", ...args], {
      env: { ...base, XDG_RUNTIME_DIR: runtimeDir, ...env },
      timeout: 50_000,
    });
    return JSON.parse(stdout.trim().split("\n").at(-1)!) as ChildRun;
  }

  let cpuHash: string;
  before(async () => {
    const cpu = await train(["--device", "cpu"], {});
    expect(cpu.executionProvider).to.equal("cpu");
    cpuHash = cpu.hash;
  });

  it("--device webgpu on SwiftShader opens on the WebGPU provider and gives the cpu's state hash", async function () {
    requireWebgpuSetup(this);
    const r = await train(["--device", "webgpu"], { VK_ICD_FILENAMES: SWIFTSHADER_ICD });
    console.log(`      webgpu on SwiftShader: 3 steps in ${r.ms} ms (session included), hash ${r.hash}`);
    expect(r.executionProvider).to.equal("webgpu");
    expect(r.fellBack).to.equal(undefined);
    expect(r.device.providerDevice).to.equal("vk_swiftshader_icd");
    expect(r.device.providerReason).to.equal(`webgpu on driver ${SWIFTSHADER_ICD}: asked for (--device webgpu)`);
    expect(r.records.map((x) => [x.level, x.msg, x.executionProvider])).to.deep.equal([
      ["info", "trainer ready", "webgpu"],
    ]);
    expect(r.hash).to.equal(cpuHash);
  });

  it("GPUCHAIN_EP=webgpu with no Vulkan driver falls back to the cpu, the warning naming webgpu", async function () {
    const r = await train([], { GPUCHAIN_EP: "webgpu", VK_ICD_FILENAMES: "/nonexistent" });
    expect(r.device.executionProvider).to.equal("webgpu");
    expect(r.device.providerReason).to.equal("webgpu: asked for (GPUCHAIN_EP=webgpu)");
    expect(r.executionProvider).to.equal("cpu");
    expect(r.fellBack).to.equal("webgpu");
    expect(r.records.map((x) => [x.level, x.msg])).to.deep.equal([
      ["warn", "webgpu execution provider failed to load; falling back to cpu"],
    ]);
    expect(r.records[0].error).to.contain("execution provider 'webgpu' is not available");
    expect(r.hash).to.equal(cpuHash);
  });

  it("auto never chooses a software driver: SwiftShader named and no GPU → cpu", async function () {
    const r = await train([], { VK_ICD_FILENAMES: SWIFTSHADER_ICD });
    expect(r.device.executionProvider).to.equal("cpu");
    expect(r.executionProvider).to.equal("cpu");
    // no GPU here; where one is seen, the reason names the software driver instead (the pure table covers it)
    expect(r.device.providerReason).to.match(/^cpu: /);
  });
});

describe("agent: a GPU provider in the running agent (simulated chain, real cpu trainer)", function () {
  this.timeout(60_000);
  const reason = "webgpu on NVIDIA H200: Vulkan loader and driver /usr/share/vulkan/icd.d/nvidia_icd.json";
  const gpuProfile = "onnxruntime-1.30.0/webgpu/nvidia-h200";
  const device: DeviceProfile = {
    ...CPU_DEVICE,
    kind: "GPU",
    model: "NVIDIA H200",
    executionProvider: "webgpu",
    providerDevice: "NVIDIA H200",
    providerReason: reason,
  };
  let p: Awaited<ReturnType<typeof localProtocol>>;
  before(async () => {
    p = await localProtocol();
  });

  it("one that fails to load is tried at start: it falls back before the first beat, and beats and checkpoints carry the cpu profile", async function () {
    // webgpu fails as it does on a machine whose driver Dawn refuses.
    const trainerFactory: TrainerFactory = async (t, o) => {
      if (o?.executionProvider === "webgpu")
        throw new ExecutionProviderError("webgpu", new Error("Failed to get a WebGPU adapter: No supported adapters"));
      return createTrainer(t, o);
    };
    const jobId = await p.createJob(8, 4);
    const { agent } = await assignedAgent(p, jobId, { config: { device }, deps: { trainerFactory } });
    try {
      await until("first report", async () => (await p.escrow.jobOf(jobId)).pendingStep === 4n);
      const msgs = agent.records.map((r) => r.msg);
      const start = agent.records.find((r) => r.msg.startsWith("execution provider"));
      expect(start).to.include({ level: "info", msg: `execution provider ${reason}`, profile: gpuProfile });
      const fallback = agent.records.find((r) => r.msg.includes("failed to load"));
      expect(fallback).to.include({
        level: "warn",
        msg: "webgpu execution provider failed to load; falling back to cpu",
      });
      expect(String(fallback!.error)).to.contain("No supported adapters");
      expect(msgs.indexOf(fallback!.msg)).to.be.lessThan(msgs.indexOf("gas balance"));
      expect(msgs.some((m) => m.includes("proven for no template"))).to.equal(false);
      const c = decodeCheckpoint(await agent.store.get((await p.escrow.jobOf(jobId)).pendingHash));
      expect(c.profile).to.equal(localProfile("cpu"));
      expect(agent.beats.length).to.be.greaterThan(0);
      expect(agent.beats.every((b) => b.profile === localProfile("cpu"))).to.equal(true);
    } finally {
      await agent.stop();
    }
  });

  it("one that loads beats its own, unproven profile and warns that the coordinator assigns it no job", async function () {
    // Stands in for a GPU whose provider loads: the trainer opens (on the cpu, the only one here).
    const trainerFactory: TrainerFactory = async (t, o) => createTrainer(t, { ...o, executionProvider: "cpu" });
    const wallet = await p.fundedWallet();
    const agent = await startAgent(wallet, p.deployment, { config: { device }, deps: { trainerFactory } });
    try {
      await until("a beat", () => agent.beats.length > 0);
      expect(
        agent.records.find((r) => r.msg.startsWith("this arithmetic profile is proven for no template")),
      ).to.include({ level: "warn", profile: gpuProfile });
      expect(agent.records.some((r) => r.msg.includes("failed to load"))).to.equal(false);
      expect(agent.beats[0].profile).to.equal(gpuProfile);
    } finally {
      await agent.stop();
    }
  });
});
