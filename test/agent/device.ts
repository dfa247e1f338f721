import { expect } from "chai";
import { existsSync } from "node:fs";
import { chmod, mkdir, mkdtemp, readFile, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path, { join } from "node:path";
import { openProviderKey, parseProvideArgs } from "../../agent/cli.ts";
import {
  detectDevice,
  gatherDeviceFacts,
  ortBinDir,
  parseNvidiaSmi,
  registryProfile,
  type DetectOptions,
} from "../../agent/device.ts";
import {
  chooseExecutionProvider,
  driverKind,
  pciVendor,
  type DeviceChoice,
  type DeviceFacts,
  type GpuSeen,
  type GpuVendor,
  type VulkanDriver,
} from "../../agent/executionProvider.ts";
import { badges, Progress, progressLine, Terminal } from "../../agent/progress.ts";
import { UsageError } from "../../sdk/run/args.ts";
import { demoProviderEnv } from "../../demo/actors.ts";
import { TrainerPool, type TrainerFactory } from "../../agent/trainers.ts";
import {
  ExecutionProviderError,
  listTemplates,
  loadTemplate,
  localProfile,
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

  const H200: GpuSeen = { name: "NVIDIA H200", vendor: "nvidia", memoryMiB: 143771, source: "nvidia-smi" };
  const nvidiaIcd: VulkanDriver = {
    file: "/usr/share/vulkan/icd.d/nvidia_icd.json",
    library: "libGLX_nvidia.so.0",
    kind: "nvidia",
  };
  const facts = (f: Partial<DeviceFacts>): DeviceFacts => ({
    gpus: [],
    vulkanLoader: false,
    drivers: [],
    cudaBinaries: false,
    ...f,
  });

  it("detects the first GPU with the webgpu provider when nvidia-smi, the loader and its driver are there", function () {
    const d = detectDevice({ facts: () => facts({ gpus: [H200, H200], vulkanLoader: true, drivers: [nvidiaIcd] }) });
    expect(d).to.deep.equal({
      kind: "GPU",
      model: "NVIDIA H200",
      memoryMiB: 143771,
      realMemoryMiB: 143771,
      capped: false,
      executionProvider: "webgpu",
      providerDevice: "NVIDIA H200",
      providerReason: `webgpu on NVIDIA H200: Vulkan loader and driver ${nvidiaIcd.file}`,
    });
    expect(registryProfile(d)).to.deep.equal({ kind: 1, deviceModel: "NVIDIA H200", memoryMiB: 143771 });
    expect(localProfile(d.executionProvider, d.providerDevice)).to.equal("onnxruntime-1.30.0/webgpu/nvidia-h200");
  });

  it("falls back to the CPU (model, total memory, cpu provider) when no GPU is seen", function () {
    const d = detectDevice({
      facts: () => facts({ vulkanLoader: true, drivers: [nvidiaIcd], cudaBinaries: true }),
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
      providerReason: "cpu: no GPU seen (no nvidia-smi answer, no GPU render node)",
    });
    expect(registryProfile(d).kind).to.equal(0);
  });

  it("forced webgpu without a GPU runs on the driver there is and says so; forced cpu on a GPU machine is the CPU", function () {
    const swiftshader: VulkanDriver = {
      file: "/usr/lib/chromium/vk_swiftshader_icd.json",
      library: "./libvk_swiftshader.so",
      kind: "software",
    };
    const d = detectDevice({
      device: "webgpu",
      askedBy: "GPUCHAIN_EP=webgpu",
      facts: () => facts({ vulkanLoader: true, drivers: [swiftshader] }),
      cpuModel: () => "Some CPU",
    });
    expect(d).to.include({ kind: "CPU", model: "Some CPU", executionProvider: "webgpu" });
    expect(d.providerDevice).to.equal("vk_swiftshader_icd");
    expect(d.providerReason).to.equal(`webgpu on driver ${swiftshader.file}: asked for (GPUCHAIN_EP=webgpu)`);
    expect(localProfile("webgpu", d.providerDevice)).to.equal("onnxruntime-1.30.0/webgpu/vk_swiftshader_icd");
    const cpu = detectDevice({
      device: "cpu",
      facts: () => facts({ gpus: [H200], vulkanLoader: true, drivers: [nvidiaIcd] }),
    });
    expect(cpu).to.include({ kind: "CPU", executionProvider: "cpu", providerReason: "cpu: asked for (--device cpu)" });
    expect(cpu.providerDevice).to.equal(undefined);
  });

  it("--memory-cap makes a capped profile with a smaller micro-batch; a cap above the device changes nothing", function () {
    const gpu = () => facts({ gpus: [H200], cudaBinaries: true });
    const capped = detectDevice({ facts: gpu, memoryCapMiB: 2 });
    expect(capped).to.include({ memoryMiB: 2, realMemoryMiB: 143771, capped: true, executionProvider: "cuda" });
    expect(detectDevice({ facts: gpu, memoryCapMiB: 500_000 })).to.include({ memoryMiB: 143771, capped: false });
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

  it("takes the same provider names as the dashboard's form (sdk/words/providerName.ts): never one that leaves its folder", function () {
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

describe("agent: execution provider fallback", function () {
  for (const ep of ["cuda", "webgpu"] as const)
    it(`falls back to the cpu with a warning naming ${ep} and why when it fails to load, and stays there`, async function () {
      const { logger, records } = captureLogger();
      const asked: string[] = [];
      const factory = (async (t: Template, o?: { executionProvider?: string }) => {
        asked.push(o?.executionProvider ?? "cpu");
        if (o?.executionProvider === ep) throw new ExecutionProviderError(ep, new Error("no adapter here"));
        return { template: t, executionProvider: "cpu", close: async () => {} } as unknown as Trainer;
      }) as TrainerFactory;
      const fellBack: string[] = [];
      const gpu = { ...CPU_DEVICE, kind: "GPU" as const, executionProvider: ep };
      const pool = new TrainerPool(gpu, logger, factory, (failed) => fellBack.push(failed));
      const tr = await pool.get(loadTemplate("blobs-tiny"));
      expect(tr.executionProvider).to.equal("cpu");
      await pool.get(loadTemplate("mnist-mlp"));
      expect(asked).to.deep.equal([ep, "cpu", "cpu"]); // the second template goes straight to the cpu
      expect(fellBack).to.deep.equal([ep]);
      expect(records.map((r) => [r.level, r.msg])).to.deep.equal([
        ["warn", `${ep} execution provider failed to load; falling back to cpu`],
        ["info", "trainer ready"],
      ]);
      expect(records[0].error).to.contain(`'${ep}'`).and.contain("no adapter here");
    });
});

describe("agent: choosing the execution provider (pure decision)", function () {
  const gpu = (vendor: GpuVendor, name = `${vendor} card`): GpuSeen => ({ name, vendor, source: "render-node" });
  const driver = (file: string, library: string): VulkanDriver => ({ file, library, kind: driverKind(file, library) });
  const lvp = driver("/usr/share/vulkan/icd.d/lvp_icd.x86_64.json", "/usr/lib/x86_64-linux-gnu/libvulkan_lvp.so");
  const swift = driver("/usr/lib/chromium/vk_swiftshader_icd.json", "./libvk_swiftshader.so");
  const llvmpipe = driver("/etc/vulkan/icd.d/llvmpipe.json", "libvulkan_llvmpipe.so");
  const radeon = driver("/usr/share/vulkan/icd.d/radeon_icd.x86_64.json", "/usr/lib/libvulkan_radeon.so");
  const intel = driver("/usr/share/vulkan/icd.d/intel_icd.x86_64.json", "/usr/lib/libvulkan_intel.so");
  const nvidia = driver("/usr/share/vulkan/icd.d/nvidia_icd.json", "libGLX_nvidia.so.0");
  const f = (x: Partial<DeviceFacts>): DeviceFacts => ({
    gpus: [],
    vulkanLoader: true,
    drivers: [],
    cudaBinaries: false,
    ...x,
  });
  const choose = (x: Partial<DeviceFacts>, c?: DeviceChoice) => chooseExecutionProvider(f(x), c);

  it("classifies drivers: lavapipe, SwiftShader and llvmpipe are software; the others by vendor", function () {
    expect([lvp, swift, llvmpipe, radeon, intel, nvidia].map((d) => d.kind)).to.deep.equal([
      "software",
      "software",
      "software",
      "amd",
      "intel",
      "nvidia",
    ]);
    expect(driverKind("/x/intel_hasvk_icd.x86_64.json", "libvulkan_intel_hasvk.so")).to.equal("intel");
    expect(driverKind("/x/virtio_icd.json", "libvulkan_virtio.so")).to.equal("other");
    expect([pciVendor("0x10de\n"), pciVendor("0x1002"), pciVendor("0x8086"), pciVendor("0x1af4")]).to.deep.equal([
      "nvidia",
      "amd",
      "intel",
      "other",
    ]);
  });

  it("no GPU: cpu, whatever drivers and binaries there are", function () {
    const d = choose({ drivers: [nvidia, radeon, swift], cudaBinaries: true });
    expect(d).to.deep.equal({ provider: "cpu", reason: "cpu: no GPU seen (no nvidia-smi answer, no GPU render node)" });
  });

  it("a GPU with the loader and a driver of its vendor: webgpu, ahead of cuda", function () {
    const d = choose({ gpus: [gpu("nvidia", "NVIDIA H200")], drivers: [swift, nvidia], cudaBinaries: true });
    expect(d).to.deep.equal({
      provider: "webgpu",
      gpu: gpu("nvidia", "NVIDIA H200"),
      driver: nvidia,
      reason: `webgpu on NVIDIA H200: Vulkan loader and driver ${nvidia.file}`,
    });
    expect(choose({ gpus: [gpu("amd")], drivers: [radeon] }).provider).to.equal("webgpu");
    // the second GPU is the one with a driver
    expect(choose({ gpus: [gpu("other"), gpu("intel")], drivers: [intel] }).gpu?.vendor).to.equal("intel");
  });

  it("software drivers never make webgpu the automatic choice", function () {
    for (const drivers of [[lvp], [swift], [llvmpipe], [lvp, swift, llvmpipe]]) {
      const d = choose({ gpus: [gpu("amd", "AMD GPU 0x744c")], drivers });
      expect(d.provider, drivers.map((x) => x.file).join()).to.equal("cpu");
      expect(d.reason).to.match(/^cpu: AMD GPU 0x744c seen, but only software Vulkan drivers \(.*\), never chosen/);
    }
  });

  it("another vendor's driver does not drive this GPU (Mesa's radeon/intel drivers on an NVIDIA machine)", function () {
    const d = choose({ gpus: [gpu("nvidia", "NVIDIA A100")], drivers: [radeon, intel, lvp] });
    expect(d.provider).to.equal("cpu");
    expect(d.reason).to.equal(
      "cpu: NVIDIA A100 seen, but no Vulkan driver for it and no CUDA provider binaries (libonnxruntime_providers_cuda.so)",
    );
  });

  it("no Vulkan loader: no webgpu; an NVIDIA GPU with the CUDA binaries gets cuda", function () {
    const h = gpu("nvidia", "NVIDIA H200");
    expect(choose({ gpus: [h], vulkanLoader: false, drivers: [nvidia], cudaBinaries: true })).to.deep.equal({
      provider: "cuda",
      gpu: h,
      reason: "cuda on NVIDIA H200: CUDA provider binaries installed",
    });
    expect(choose({ gpus: [h], vulkanLoader: false, drivers: [nvidia] }).reason).to.equal(
      "cpu: NVIDIA H200 seen, but no Vulkan loader (libvulkan.so.1) and no CUDA provider binaries (libonnxruntime_providers_cuda.so)",
    );
    // CUDA binaries do not make an AMD GPU a CUDA device
    const amd = choose({ gpus: [gpu("amd", "AMD GPU 0x744c")], vulkanLoader: false, cudaBinaries: true });
    expect(amd.provider).to.equal("cpu");
    expect(amd.reason).to.match(/no CUDA for a non-NVIDIA GPU$/);
  });

  it("the user's choice wins over every fact, and the reason says who asked", function () {
    const all = { gpus: [gpu("nvidia", "NVIDIA H200")], drivers: [nvidia], cudaBinaries: true };
    for (const c of ["cpu", "webgpu", "cuda"] as const) expect(choose(all, c).provider).to.equal(c);
    expect(choose({}, "cuda")).to.deep.equal({
      provider: "cuda",
      gpu: undefined,
      driver: undefined,
      reason: "cuda: asked for (--device cuda)",
    });
    expect(chooseExecutionProvider(f({ drivers: [swift] }), "webgpu", "GPUCHAIN_EP=webgpu").reason).to.equal(
      `webgpu on driver ${swift.file}: asked for (GPUCHAIN_EP=webgpu)`,
    );
    expect(choose({ vulkanLoader: false }, "webgpu").provider).to.equal("webgpu"); // it will fail to load, and fall back
    // forced cuda names only an NVIDIA GPU; forced webgpu the GPU that has its driver
    const amdAndNvidia = { gpus: [gpu("amd", "AMD GPU 0x744c"), gpu("nvidia", "NVIDIA A100")], drivers: [radeon] };
    expect(choose(amdAndNvidia, "cuda").gpu?.name).to.equal("NVIDIA A100");
    expect(choose({ gpus: [gpu("amd")] }, "cuda").gpu).to.equal(undefined);
    expect(choose({ ...amdAndNvidia, drivers: [nvidia] }, "webgpu").gpu?.name).to.equal("NVIDIA A100");
    // forced without a GPU: the software driver is the one that can run it, not a hardware manifest without hardware
    expect(choose({ drivers: [intel, radeon, lvp] }, "webgpu").driver).to.deep.equal(lvp);
  });
});

describe("agent: gathering the device facts", function () {
  let root: string;
  before(async () => {
    root = await mkdtemp(join(tmpdir(), "gpuchain-facts-"));
  });
  const put = async (file: string, text: string) => {
    await mkdir(join(root, file, ".."), { recursive: true });
    await writeFile(join(root, file), text);
  };

  it("reads render nodes, the loader, the drivers the loader would load and the CUDA binaries from a laid-out root", async function () {
    await put("sys/class/drm/renderD128/device/vendor", "0x1002\n");
    await put("sys/class/drm/renderD128/device/device", "0x744c\n");
    await put("sys/class/drm/renderD128/device/mem_info_vram_total", String(24 * 1024 ** 3));
    await put("sys/class/drm/renderD129/device/vendor", "0x1af4\n"); // virtio: no GPU we know
    await put("sys/class/drm/card0/device/vendor", "0x8086\n"); // not a render node
    await put("usr/lib/x86_64-linux-gnu/libvulkan.so.1", "");
    await put(
      "usr/share/vulkan/icd.d/radeon_icd.x86_64.json",
      JSON.stringify({ ICD: { library_path: "libvulkan_radeon.so" } }),
    );
    await put(
      "usr/share/vulkan/icd.d/lvp_icd.x86_64.json",
      JSON.stringify({ ICD: { library_path: "libvulkan_lvp.so" } }),
    );
    await put("usr/share/vulkan/icd.d/broken.json", "{not json");
    await put("ort/libonnxruntime_providers_cuda.so", "");
    const env = { HOME: join(root, "home") };
    const facts = gatherDeviceFacts({ nvidiaSmi: () => undefined, env, root, ortBinDir: join(root, "ort") });
    expect(facts.gpus).to.deep.equal([
      { name: "AMD GPU 0x744c", vendor: "amd", source: "render-node", memoryMiB: 24576 },
    ]);
    expect(facts.vulkanLoader).to.equal(process.arch === "x64");
    expect(facts.drivers.map((d) => [path.basename(d.file), d.kind])).to.deep.equal([
      ["lvp_icd.x86_64.json", "software"],
      ["radeon_icd.x86_64.json", "amd"],
    ]);
    expect(facts.cudaBinaries).to.equal(true);
    // VK_ICD_FILENAMES replaces the search: a name that does not exist leaves no driver
    expect(
      gatherDeviceFacts({ nvidiaSmi: () => undefined, env: { ...env, VK_ICD_FILENAMES: "/nonexistent" }, root })
        .drivers,
    ).to.deep.equal([]);
    const named = join(root, "usr/share/vulkan/icd.d/lvp_icd.x86_64.json");
    expect(
      gatherDeviceFacts({ nvidiaSmi: () => undefined, env: { ...env, VK_DRIVER_FILES: named }, root }).drivers.map(
        (d) => d.file,
      ),
    ).to.deep.equal([named]);
    // nvidia-smi names NVIDIA GPUs; their render nodes are not counted twice
    await put("sys/class/drm/renderD130/device/vendor", "0x10de\n");
    const withSmi = gatherDeviceFacts({ nvidiaSmi: () => "NVIDIA H200, 143771\n", env, root });
    expect(withSmi.gpus.map((g) => g.name)).to.deep.equal(["NVIDIA H200", "AMD GPU 0x744c"]);
  });

  it("on this machine: what it finds, and no GPU means cpu", function () {
    const facts = gatherDeviceFacts();
    console.log(`      facts here: ${JSON.stringify(facts)}`);
    const d = detectDevice();
    console.log(`      decision here: ${d.executionProvider} (${d.providerReason})`);
    if (facts.gpus.length === 0) {
      expect(d.executionProvider).to.equal("cpu");
      expect(d.providerReason).to.equal("cpu: no GPU seen (no nvidia-smi answer, no GPU render node)");
    }
    // onnxruntime-node is installed without its CUDA download here (offline); the check must see that
    expect(facts.cudaBinaries).to.equal(existsSync(join(ortBinDir(), "libonnxruntime_providers_cuda.so")));
    expect(existsSync(join(ortBinDir(), "onnxruntime_binding.node"))).to.equal(true); // the folder is the right one
  });
});

describe("agent: --device and GPUCHAIN_EP", function () {
  const asked = (argv: string[], env: NodeJS.ProcessEnv = {}) => {
    let got: DetectOptions | undefined;
    parseProvideArgs(["--name", "a", "--price", "1", ...argv], (o) => ((got = o), CPU_DEVICE), env);
    return { device: got?.device, askedBy: got?.askedBy };
  };

  it("defaults to auto; --device wins over GPUCHAIN_EP", function () {
    expect(asked([])).to.deep.equal({ device: "auto", askedBy: "" });
    expect(asked([], { GPUCHAIN_EP: "" })).to.deep.equal({ device: "auto", askedBy: "" });
    expect(asked([], { GPUCHAIN_EP: "webgpu" })).to.deep.equal({ device: "webgpu", askedBy: "GPUCHAIN_EP=webgpu" });
    expect(asked(["--device", "cpu"], { GPUCHAIN_EP: "webgpu" })).to.deep.equal({
      device: "cpu",
      askedBy: "--device cpu",
    });
    for (const c of ["auto", "cpu", "webgpu", "cuda"]) expect(asked(["--device", c]).device).to.equal(c);
  });

  it("npm start's providers run on the cpu unless GPUCHAIN_EP says otherwise (a GPU profile gets no job yet)", function () {
    const saved = process.env.GPUCHAIN_EP;
    try {
      delete process.env.GPUCHAIN_EP;
      expect(demoProviderEnv({ AWS_REGION: "x" })).to.deep.equal({ AWS_REGION: "x", GPUCHAIN_EP: "cpu" });
      process.env.GPUCHAIN_EP = "webgpu";
      expect(demoProviderEnv({}).GPUCHAIN_EP).to.equal("webgpu");
    } finally {
      if (saved === undefined) delete process.env.GPUCHAIN_EP;
      else process.env.GPUCHAIN_EP = saved;
    }
  });

  it("a bad value of either is a usage error naming the choices", function () {
    expect(() => asked(["--device", "gpu"])).to.throw(
      UsageError,
      '--device must be one of auto, cpu, webgpu, cuda, got "gpu"',
    );
    expect(() => asked(["--device", "WebGPU"])).to.throw(UsageError, /--device must be one of/);
    expect(() => asked([], { GPUCHAIN_EP: "vulkan" })).to.throw(
      UsageError,
      'GPUCHAIN_EP must be one of auto, cpu, webgpu, cuda, got "vulkan"',
    );
  });
});
