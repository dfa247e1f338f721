import { expect } from "chai";
import {
  cpuFamily,
  deviceSlug,
  isProvenProfile,
  loadTemplate,
  localProfile,
  mismatchIsEvidence,
  replayUnprovenReason,
} from "../../workloads/index.ts";

describe("workloads: arithmetic profiles (safety net until every profile is proven)", function () {
  const t = loadTemplate("mnist-mlp");
  const proven = "onnxruntime-1.30.0/cpu/x86_64-sse4.2";
  const cuda = "onnxruntime-1.30.0/cuda/gpu";

  it("names the CPU kernel family from the flags the kernel reports", function () {
    expect(cpuFamily("flags\t\t: fpu sse4_2 avx2 fma avx512f\n", "x64")).to.equal("x86_64-avx512");
    expect(cpuFamily("flags\t\t: fpu sse4_2 avx2 fma\n", "x64")).to.equal("x86_64-avx2-fma");
    expect(cpuFamily("flags\t\t: fpu sse4_2\n", "x64")).to.equal("x86_64-sse4.2");
    expect(cpuFamily("flags\t\t: fpu sse2\n", "x64")).to.equal("x86_64-sse2");
    expect(cpuFamily("Features\t: fp asimd\n", "arm64")).to.equal("arm64-neon");
    expect(localProfile("cpu")).to.match(/^onnxruntime-\d+\.\d+\.\d+\/cpu\/\S+$/);
    expect(localProfile("cuda", "NVIDIA H200")).to.match(/^onnxruntime-\d+\.\d+\.\d+\/cuda\/nvidia-h200$/);
    expect(localProfile("webgpu", "NVIDIA GeForce RTX 4090 (rev a1)")).to.match(
      /\/webgpu\/nvidia-geforce-rtx-4090-rev-a1$/,
    );
    expect(localProfile("webgpu")).to.match(/\/webgpu\/unknown-device$/);
    expect(deviceSlug(" ".repeat(3))).to.equal("unknown-device");
    expect(deviceSlug("x ".repeat(80)))
      .to.match(/^[a-z0-9._-]{1,64}$/)
      .and.not.match(/-$/);
  });

  it("only profiles proven for the template may be assigned; an unknown or missing one may not", function () {
    expect(isProvenProfile(t, proven)).to.equal(true);
    expect(isProvenProfile(t, cuda)).to.equal(false);
    expect(isProvenProfile(t, "onnxruntime-1.31.0/cpu/x86_64-sse4.2")).to.equal(false);
    expect(isProvenProfile(t, undefined)).to.equal(false);
  });

  it("a verifier on an unproven profile is told why it must abstain; on a proven one it may judge", function () {
    expect(replayUnprovenReason(t, proven)).to.equal(undefined);
    expect(replayUnprovenReason(t, cuda)).to.equal(`arithmetic profile ${cuda} is not proven for template mnist-mlp`);
  });

  it("a mismatch counts against a provider only between proven profiles (the same unproven one is no evidence)", function () {
    expect(mismatchIsEvidence(t, proven, "onnxruntime-1.30.0/cpu/x86_64-avx512")).to.equal(true);
    expect(mismatchIsEvidence(t, proven, proven)).to.equal(true);
    expect(mismatchIsEvidence(t, cuda, cuda)).to.equal(false);
    expect(mismatchIsEvidence(t, cuda, proven)).to.equal(false);
    expect(mismatchIsEvidence(t, proven, undefined)).to.equal(false);
  });
});
