import { expect } from "chai";
import { chmod, mkdtemp, readFile, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openProviderKey, parseProvideArgs } from "../../agent/cli.ts";
import { detectDevice, parseNvidiaSmi, registryProfile } from "../../agent/device.ts";
import { badges, Progress, progressLine, Terminal } from "../../agent/progress.ts";
import { UsageError } from "../../sdk/args.ts";
import { TrainerPool, type TrainerFactory } from "../../agent/trainers.ts";
import {
  ExecutionProviderError,
  listTemplates,
  loadTemplate,
  microBatchForMemory,
  type Template,
  type Trainer,
} from "../../workloads/index.ts";
import { captureLogger, CPU_DEVICE } from "./helpers.ts";

describe("agent: device detection", function () {
  it("parses one GPU from nvidia-smi's csv output", function () {
    expect(parseNvidiaSmi("NVIDIA H200, 143771\n")).to.deep.equal([{ name: "NVIDIA H200", memoryMiB: 143771 }]);
  });

  it("parses several GPUs, names with spaces and commas, and CRLF line ends", function () {
    const out = "NVIDIA GeForce RTX 4090, 24564\r\nNVIDIA A100-SXM4-80GB, 81920\r\nTesla T4, Rev 2, 15360\r\n\r\n";
    expect(parseNvidiaSmi(out)).to.deep.equal([
      { name: "NVIDIA GeForce RTX 4090", memoryMiB: 24564 },
      { name: "NVIDIA A100-SXM4-80GB", memoryMiB: 81920 },
      { name: "Tesla T4, Rev 2", memoryMiB: 15360 },
    ]);
  });

  it("ignores error text and [N/A] memory", function () {
    expect(
      parseNvidiaSmi("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n"),
    ).to.deep.equal([]);
    expect(parseNvidiaSmi("NVIDIA H200, [N/A]\n")).to.deep.equal([]);
  });

  it("detects the first GPU with the cuda execution provider when nvidia-smi answers", function () {
    const d = detectDevice({ nvidiaSmi: () => "NVIDIA H200, 143771\nNVIDIA H200, 143771\n" });
    expect(d).to.deep.equal({
      kind: "GPU",
      model: "NVIDIA H200",
      memoryMiB: 143771,
      realMemoryMiB: 143771,
      capped: false,
      executionProvider: "cuda",
    });
    expect(registryProfile(d)).to.deep.equal({ kind: 1, deviceModel: "NVIDIA H200", memoryMiB: 143771 });
  });

  it("falls back to the CPU (model, total memory, cpu provider) when nvidia-smi is absent", function () {
    const d = detectDevice({
      nvidiaSmi: () => undefined,
      cpuModel: () => " AMD EPYC 9654 ",
      totalMemBytes: () => 64 * 1024 ** 3,
    });
    expect(d).to.deep.equal({
      kind: "CPU",
      model: "AMD EPYC 9654",
      memoryMiB: 65536,
      realMemoryMiB: 65536,
      capped: false,
      executionProvider: "cpu",
    });
    expect(registryProfile(d).kind).to.equal(0);
    expect(detectDevice({ nvidiaSmi: () => undefined }).kind).to.equal("CPU"); // the real machine, whatever it has
  });

  it("--memory-cap makes a capped profile with a smaller micro-batch; a cap above the device changes nothing", function () {
    const gpu = () => "NVIDIA H200, 143771\n";
    const capped = detectDevice({ nvidiaSmi: gpu, memoryCapMiB: 2 });
    expect(capped).to.include({ memoryMiB: 2, realMemoryMiB: 143771, capped: true });
    expect(detectDevice({ nvidiaSmi: gpu, memoryCapMiB: 500_000 })).to.include({ memoryMiB: 143771, capped: false });
    const mnist = loadTemplate("mnist-mlp");
    expect(microBatchForMemory(mnist, capped.memoryMiB)).to.be.lessThan(mnist.atomsPerStep);
    for (const t of listTemplates()) expect(microBatchForMemory(t, 143771)).to.equal(t.atomsPerStep);
  });
});

describe("agent: key file and flags", function () {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "gpuchain-agent-key-"));
  });

  it("creates the key with 0600 on first start and reuses it on the next", async function () {
    const file = join(dir, "p1", "key");
    const { logger, records } = captureLogger();
    const a = openProviderKey(file, logger)!;
    expect((await stat(file)).mode & 0o777).to.equal(0o600);
    const b = openProviderKey(file, logger)!;
    expect(b.address).to.equal(a.address);
    expect(records.map((r) => r.msg)).to.deep.equal(["created provider key", "using provider key"]);
    expect(records[0].address).to.equal(a.address);
  });

  it("refuses a key file readable by others, with a clear error and without reading it", async function () {
    const file = join(dir, "open-key");
    await writeFile(file, "0x" + "11".repeat(32) + "\n");
    await chmod(file, 0o644);
    const { logger, records } = captureLogger();
    expect(openProviderKey(file, logger)).to.equal(undefined);
    expect(records[0].level).to.equal("error");
    expect(records[0].keyFile).to.equal(file);
    expect(await readFile(file, "utf8")).to.contain("11"); // untouched
  });

  it("defaults the key to .gpuchain/providers/<name>/key and parses price, cap and fault", function () {
    const a = parseProvideArgs(
      ["--name", "alice", "--price", "0.0009", "--memory-cap", "2048", "--fault", "die-at:7", "--once"],
      () => CPU_DEVICE,
    );
    expect(a.keyFile).to.equal(join(".gpuchain", "providers", "alice", "key"));
    expect(a.config.pricePerStep).to.equal(900n);
    expect(a.config.fault).to.deep.equal({ kind: "die-at", atStep: 7 });
    expect(a.config.once).to.equal(true);
    expect(a.coordinator).to.equal("http://127.0.0.1:8600/heartbeat");
  });

  it("rejects missing or bad flags as usage errors", function () {
    const parse = (argv: string[]) => () => parseProvideArgs(argv, () => CPU_DEVICE);
    expect(parse(["--price", "1"])).to.throw(UsageError, /--name/);
    expect(parse(["--name", "a"])).to.throw(UsageError, /--price/);
    expect(parse(["--name", "a", "--price", "0"])).to.throw(UsageError);
    expect(parse(["--name", "a", "--price", "1", "--fault", "explode"])).to.throw(UsageError, /unknown fault/);
    expect(parse(["--name", "a", "--price", "1", "--memory-cap", "-3"])).to.throw(UsageError);
    expect(parse(["--name", "a", "--price", "1", "--bogus"])).to.throw(UsageError);
  });

  it("takes the same provider names as the dashboard's form (sdk/providerName.ts): never one that leaves its folder", function () {
    const parse = (name: string) => () => parseProvideArgs(["--name", name, "--price", "1"], () => CPU_DEVICE);
    for (const ok of ["a", "my-gpu_2.0", "x".repeat(64), "...", ".a"]) expect(parse(ok), ok).not.to.throw();
    // Before: any name up to 64 bytes, so two ".." steps and a folder put the key outside .gpuchain/providers.
    const climb = ["..", "..", "elsewhere"].join("/");
    for (const bad of ["", ".", "..", climb, "a/b", "a b", "x".repeat(65), "gpü"])
      expect(parse(bad), JSON.stringify(bad)).to.throw(
        UsageError,
        bad === "" ? /--name/ : /--name must be 1–64 letters/,
      );
  });
});

describe("agent: output", function () {
  it("badges say what kind of run this is", function () {
    const gpu = { ...CPU_DEVICE, kind: "GPU" as const, executionProvider: "cuda" as const };
    expect(badges(CPU_DEVICE, undefined, true)).to.deep.equal(["Synthetic", "Local chain"]);
    expect(badges({ ...gpu, capped: true }, "nan", false)).to.deep.equal([
      "Real GPU",
      "Capped profile",
      "Injected fault",
    ]);
  });

  it("a TTY gets a live progress line that log lines clear and redraw; a pipe gets throttled progress logs", function () {
    const chunks: string[] = [];
    const tty = new Terminal({ isTTY: true, write: (c: string) => chunks.push(c) } as unknown as NodeJS.WriteStream);
    const { logger, records } = captureLogger();
    let now = 0;
    const progress = new Progress({ tags: ["Synthetic"], logger, terminal: tty, now: () => now });
    const p = { jobId: 1n, epoch: 2n, step: 3, totalSteps: 12, loss: 1.23456, stepsPerSecond: 40 };
    progress.update(p);
    expect(chunks.join("")).to.contain("step 3/12").and.contain("[Synthetic]");
    tty.log("a log line");
    expect(chunks.slice(-3)).to.deep.equal(["\r\x1b[2K", "a log line\n", chunks[0].slice("\r\x1b[2K".length)]);
    expect(records).to.deep.equal([]);

    const pipe = new Progress({ tags: ["Synthetic"], logger, now: () => now, everyMs: 1000 });
    pipe.update(p);
    pipe.update({ ...p, step: 4 });
    now = 1500;
    pipe.update({ ...p, step: 5 });
    expect(records.map((r) => r.step)).to.deep.equal([3, 5]);
    expect(progressLine({ ...p, loss: NaN }, [], "nan"))
      .to.contain("loss NaN")
      .and.contain("fault=nan");
  });
});

describe("agent: execution provider", function () {
  it("falls back to the cpu with a warning when cuda fails to load", async function () {
    const { logger, records } = captureLogger();
    const asked: string[] = [];
    const factory = (async (t: Template, o?: { executionProvider?: string }) => {
      asked.push(o?.executionProvider ?? "cpu");
      if (o?.executionProvider === "cuda")
        throw new ExecutionProviderError("cuda", new Error("libcudart.so.12: not found"));
      return { template: t, executionProvider: "cpu", close: async () => {} } as unknown as Trainer;
    }) as TrainerFactory;
    const gpu = { ...CPU_DEVICE, kind: "GPU" as const, executionProvider: "cuda" as const };
    const tr = await new TrainerPool(gpu, logger, factory).get(loadTemplate("blobs-tiny"));
    expect(tr.executionProvider).to.equal("cpu");
    expect(asked).to.deep.equal(["cuda", "cpu"]);
    expect(records.map((r) => r.level)).to.deep.equal(["warn"]);
  });
});
