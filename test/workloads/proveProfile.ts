/**
 * `npm run prove-profile` (scripts/proveProfile.ts), run for real: the reference hashes on this machine's CPU
 * against docs/WORKLOADS.md, a doctored table that must be refused, usage errors, onnxruntime's placement log, and
 * the op-rounding probe on the WebGPU provider over SwiftShader (its subnormal flushing is what it shows).
 */
import { expect } from "chai";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { compareBits } from "../../scripts/opRounding.ts";
import { parsePlacements, verdict, type TemplateProof } from "../../scripts/proveProfile.ts";
import { parseReferenceTable } from "../../workloads/referenceHashes.ts";
import { requireWebgpuSetup, SWIFTSHADER_ICD } from "../helpers/webgpu.ts";

const NODE = "node_modules/node/bin/node";

function proveProfile(args: string[], env: NodeJS.ProcessEnv = {}) {
  const r = spawnSync(NODE, ["scripts/proveProfile.ts", ...args], {
    encoding: "utf8",
    env: { ...process.env, ...env },
    timeout: 180_000,
  });
  return { status: r.status, out: r.stdout, err: r.stderr };
}

describe("prove-profile: does this machine compute the reference bits", function () {
  this.timeout(200_000);
  let dir: string;
  before(() => (dir = mkdtempSync(join(tmpdir(), "gpuchain-prove-"))));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("on the CPU: blobs-tiny's four committed hashes equal, every node on the CPU provider, exit 0", function () {
    const r = proveProfile(["--device", "cpu", "--templates", "blobs-tiny", "--json", join(dir, "cpu.json")]);
    expect(r.status, r.err).to.equal(0);
    expect(r.out).to.match(/^profile: onnxruntime-1\.30\.0\/cpu\//m);
    expect(r.out.match(/^blobs-tiny: step (5|10|15|20)\/20 0x[0-9a-f]{8}… equal$/gm)).to.have.length(4);
    expect(r.out).to.match(/^blobs-tiny: gradient graph's (\d+) nodes on CPUExecutionProvider \1$/m);
    expect(r.out).to.match(/^reference_bits_blobs-tiny: yes$/m);
    expect(r.out).to.match(/^step_ms_blobs-tiny: \d+\.\d$/m);
    expect(r.out).to.match(/is already in PROVEN_PROFILES for blobs-tiny$/m); // this CPU family is proven
    const report = JSON.parse(readFileSync(join(dir, "cpu.json"), "utf8"));
    expect(report.provider).to.equal("cpu");
    expect(report.proofs[0]).to.include({ template: "blobs-tiny", compared: 4 });
  });

  it("a table whose step-10 hash is not what the CPU computes: DIFFERS at step 10, not proven, exit 1", function () {
    const doc = readFileSync("docs/WORKLOADS.md", "utf8");
    const want = parseReferenceTable(doc)["blobs-tiny"].find((r) => r.step === 10)!.hash;
    const flipped = want.slice(0, -1) + (want.endsWith("0") ? "1" : "0");
    const table = join(dir, "doctored.md");
    writeFileSync(table, doc.replace(want, flipped));
    const r = proveProfile(["--device", "cpu", "--templates", "blobs-tiny", "--table", table]);
    expect(r.status, r.err).to.equal(1);
    expect(r.out).to.match(/^blobs-tiny: step 5\/20 .* equal$/m);
    expect(r.out).to.include(`blobs-tiny: step 10/20 ${want.slice(0, 10)}… DIFFERS (want ${flipped})`);
    expect(r.out).to.not.match(/step 15\/20/); // a state that differed once is not compared again
    expect(r.out).to.match(/^reference_bits_blobs-tiny: no$/m);
    // a listed profile that no longer gives the bits is an alarm, not a "keep it out"
    expect(r.out).to.match(/blobs-tiny: .* is in PROVEN_PROFILES but did not give the reference bits here/);
  });

  it("bad input: a usage line and exit 2, nothing trained", function () {
    const cases: [string[], RegExp][] = [
      [["--device", "gpu"], /--device must be auto, cpu, webgpu or cuda, got "gpu"/],
      [["--templates", "gpt-5"], /--templates: gpt-5 is not an approved template/],
      [["--table", join(dir, "missing.md")], /--table .*missing\.md: no such file/],
      [["--steps", "3"], /Unknown option '--steps'/],
    ];
    for (const [args, message] of cases) {
      const r = proveProfile(args);
      expect(r.status, args.join(" ")).to.equal(2);
      expect(r.err).to.match(message);
      expect(r.out).to.equal("");
    }
    const empty = join(dir, "empty.md");
    writeFileSync(empty, "# no table\n");
    const r = proveProfile(["--table", empty, "--templates", "blobs-tiny"]);
    expect(r.status).to.equal(2);
    expect(r.err).to.match(/has no reference hashes for blobs-tiny/);
  });

  it("parsePlacements reads onnxruntime's verbose placement lines, all-on-one and split alike", function () {
    const log = [
      "2026-12-04 16:27:42.1 [V:onnxruntime:, session_state.cc:1377 VerifyEachNodeIsAssignedToAnEp] Node placements",
      "2026-12-04 16:27:42.1 [V:onnxruntime:, session_state.cc:1380 VerifyEachNodeIsAssignedToAnEp]  Node(s) placed on [WebGpuExecutionProvider]. Number of nodes: 383",
      "2026-12-04 16:27:42.1 [V:onnxruntime:, session_state.cc:1383 VerifyEachNodeIsAssignedToAnEp]   MatMulInteger (t12)",
      "2026-12-04 16:27:42.1 [V:onnxruntime:, session_state.cc:1380 VerifyEachNodeIsAssignedToAnEp]  Node(s) placed on [CPUExecutionProvider]. Number of nodes: 28",
    ].join("\n");
    expect(parsePlacements(log)).to.deep.equal({ WebGpuExecutionProvider: 383, CPUExecutionProvider: 28 });
    expect(parsePlacements("[V] All nodes placed on [CPUExecutionProvider]. Number of nodes: 181")).to.deep.equal({
      CPUExecutionProvider: 181,
    });
    expect(parsePlacements("no verbose log")).to.deep.equal({});
  });

  it("verdict: a new profile may join, a listed one is already there, a failing unlisted one stays out", function () {
    const ok = (template: string): TemplateProof => ({ template, compared: 4, stepMs: 1, placements: {} });
    const bad: TemplateProof = { ...ok("mnist-mlp"), firstMismatch: { step: 5, got: "0x1", want: "0x2" } };
    const gpu = "onnxruntime-1.30.0/webgpu/nvidia-h200";
    expect(verdict(gpu, [ok("blobs-tiny")])).to.equal(
      `every template gives the reference bits: ${gpu} may join PROVEN_PROFILES (workloads/profile.ts) for blobs-tiny`,
    );
    expect(verdict(gpu, [ok("blobs-tiny"), ok("mnist-mlp")], ["blobs-tiny"])).to.match(/may join .* for mnist-mlp$/);
    expect(verdict(gpu, [ok("blobs-tiny"), bad])).to.match(/^mnist-mlp: not the reference bits on .*keep it out/);
    expect(verdict(gpu, [bad], ["mnist-mlp"])).to.match(/^mnist-mlp: .* is in PROVEN_PROFILES but did not give/);
  });

  it("compareBits counts bits, not values: −0 against +0 differs, the same NaN does not", function () {
    const inputs = [new Float32Array([1, 2, 3])];
    const same = compareBits(new Float32Array([0, NaN, 1]), new Float32Array([0, NaN, 1]), inputs);
    expect(same).to.deep.equal({ differ: 0, example: undefined });
    const signed = compareBits(new Float32Array([0, NaN, 1]), new Float32Array([-0, NaN, 1.0000001]), inputs);
    expect(signed.differ).to.equal(2);
    expect(signed.example).to.equal("1 → cpu 0, other 0");
  });

  it("--ops on the WebGPU provider over SwiftShader: + − × ÷ √ exact on normal numbers, subnormals flushed", function () {
    requireWebgpuSetup(this);
    const env = { VK_ICD_FILENAMES: SWIFTSHADER_ICD, XDG_RUNTIME_DIR: dir };
    const r = proveProfile(["--device", "webgpu", "--ops"], env);
    expect(r.status, r.err).to.equal(0);
    expect(r.out).to.match(/^profile: onnxruntime-1\.30\.0\/webgpu\/vk_swiftshader_icd$/m);
    const differ = (name: string) => Number(new RegExp(`^op_differs_${name}: (\\d+) of`, "m").exec(r.out)?.[1]);
    for (const op of ["Add", "Sub", "Mul", "Div", "Sqrt", "Div\\(1,x\\)"]) expect(differ(`${op}_unit`), op).to.equal(0);
    expect(differ("Add_subnormal"), "a subnormal sum flushed to zero").to.be.greaterThan(0);
  });
});
