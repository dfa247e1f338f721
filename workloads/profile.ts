// Arithmetic profiles: what a provider's steps are computed with, and which profiles are proven to give a
// template's reference bits (test/workloads/portable.ts). A replay mismatch is evidence against a provider only
// between profiles known to agree; until a profile is proven, a mismatch from it may be the hardware's, not fraud.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import type { ExecutionProvider } from "./runtime.ts";
import type { Template } from "./types.ts";

/**
 * `onnxruntime-<version>/<execution provider>/<cpu family | device>`, e.g. `onnxruntime-1.30.0/cpu/x86_64-avx512`,
 * `onnxruntime-1.30.0/webgpu/nvidia-geforce-rtx-4090`. No spaces: a heartbeat signs its problem as "problem: TEXT".
 */
export type ArithmeticProfile = string;

const ORT_VERSION: string = createRequire(import.meta.url)("onnxruntime-node/package.json").version;

/** The CPU kernel family onnxruntime picks from, by the flags the kernel reports (pure: pass the text). */
export function cpuFamily(cpuinfo: string, arch: string = process.arch): string {
  const flags = new Set((/^(?:flags|Features)\s*:(.*)$/m.exec(cpuinfo)?.[1] ?? "").trim().split(/\s+/));
  if (arch === "x64") {
    if (flags.has("avx512f")) return "x86_64-avx512";
    if (flags.has("avx2") && flags.has("fma")) return "x86_64-avx2-fma";
    if (flags.has("sse4_2")) return "x86_64-sse4.2";
    return "x86_64-sse2";
  }
  if (arch === "arm64") return flags.has("sve") ? "arm64-sve" : "arm64-neon";
  return arch;
}

function readCpuinfo(): string {
  try {
    return readFileSync("/proc/cpuinfo", "utf8");
  } catch {
    return ""; // not Linux: the family falls back to the architecture
  }
}

/** A device name as a profile part: lower case, runs of anything but [a-z0-9._] as one "-", at most 64 long. */
export function deviceSlug(name: string): string {
  const slug = name
    .toLowerCase()
    .replace(/[^a-z0-9._]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, 64)
    .replace(/-+$/, "");
  return slug || "unknown-device";
}

/**
 * This machine's profile for an execution provider (under qemu-user /proc/cpuinfo is the host's). A GPU provider
 * names the device it computes on (agent/device.ts `providerDevice`): two GPU models need not round alike.
 */
export function localProfile(ep: ExecutionProvider = "cpu", device?: string): ArithmeticProfile {
  const part = ep === "cpu" ? cpuFamily(readCpuinfo()) : deviceSlug(device ?? "unknown-device");
  return `onnxruntime-${ORT_VERSION}/${ep}/${part}`;
}

/** Profiles whose 20-step reference hashes equal docs/WORKLOADS.md (native, qemu-x86_64, qemu-aarch64). */
const PROVEN_PORTABLE: readonly ArithmeticProfile[] = [
  "x86_64-avx512",
  "x86_64-avx2-fma",
  "x86_64-sse4.2",
  "arm64-neon",
].map((f) => `onnxruntime-1.30.0/cpu/${f}`);

/**
 * Proven profiles per template name (`npm run prove-profile` on the machine, then its profile here). No cuda or
 * webgpu profile: on an NVIDIA H200 (webgpu over its Vulkan driver, 2026-12-04) every template's hashes differ at
 * step 5 (its Div and Sqrt are not correctly rounded); SwiftShader's matching hashes prove a CPU rasteriser.
 */
export const PROVEN_PROFILES: Readonly<Record<string, readonly ArithmeticProfile[]>> = {
  "mnist-mlp": PROVEN_PORTABLE,
  "blobs-tiny": PROVEN_PORTABLE,
  "mnist-cnn": PROVEN_PORTABLE,
  "char-transformer": PROVEN_PORTABLE,
};

/** Whether the verifiers can replay a provider of this profile exactly (so it may be assigned the template). */
export function isProvenProfile(t: Template, profile: ArithmeticProfile | undefined): boolean {
  return profile !== undefined && (PROVEN_PROFILES[t.descriptor.name] ?? []).includes(profile);
}

/**
 * Why a verifier of this profile must not judge the template (undefined when it may): its replay mismatches
 * would not be evidence against the provider.
 */
export function replayUnprovenReason(t: Template, profile: ArithmeticProfile): string | undefined {
  if (isProvenProfile(t, profile)) return undefined;
  return `arithmetic profile ${profile} is not proven for template ${t.descriptor.name}`;
}

/**
 * Whether a replay mismatch between a provider's and a verifier's profile counts against the provider: only when
 * both are proven for the template. The same unproven profile on both sides is no evidence: a profile names a
 * kernel family, not a proof that its kernels are deterministic (a GPU kernel that reduces with atomics differs
 * from run to run on one machine).
 */
export function mismatchIsEvidence(
  t: Template,
  provider: ArithmeticProfile | undefined,
  verifier: ArithmeticProfile | undefined,
): boolean {
  if (provider === undefined || verifier === undefined) return false;
  return isProvenProfile(t, provider) && isProvenProfile(t, verifier);
}
