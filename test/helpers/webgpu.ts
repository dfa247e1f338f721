/**
 * A GPU's execution provider without a GPU: onnxruntime's WebGPU provider (Dawn over Vulkan) on SwiftShader, the
 * software Vulkan driver Debian's chromium package ships, through the Vulkan loader (libvulkan1). .ci/run installs
 * both. SwiftShader rounds as the CPU does (IEEE division and square root, no subnormal flushing in most ops), so
 * a pass here proves the WebGPU provider's kernels, not a real GPU (docs/WORKLOADS.md, "The GPU path on an H200").
 */
import { existsSync } from "node:fs";

export const SWIFTSHADER_ICD = "/usr/lib/chromium/vk_swiftshader_icd.json";

export function webgpuSetupMissing(): string | undefined {
  if (!existsSync(SWIFTSHADER_ICD)) return `${SWIFTSHADER_ICD} not found: install Debian's chromium`;
  if (!existsSync("/usr/lib/x86_64-linux-gnu/libvulkan.so.1"))
    return "the Vulkan loader is missing: install libvulkan1";
  return undefined;
}

/** Skips a WebGPU test where its setup is missing; in CI (which installs it) a missing setup fails instead. */
export function requireWebgpuSetup(ctx: Mocha.Context): void {
  const missing = webgpuSetupMissing();
  if (!missing) return;
  if (process.env.CI === "true") throw new Error(missing);
  console.log(`      skipped: ${missing}`);
  ctx.skip();
}
