/**
 * Which onnxruntime execution provider the agent trains on, decided from facts about the machine (gathered by
 * agent/device.ts `gatherDeviceFacts`) and the user's `--device` / GPUCHAIN_EP. Pure: no I/O here.
 *
 * WebGPU (Dawn over Vulkan) ships in onnxruntime-node's Linux x64 binary; CUDA's binaries must be downloaded by its
 * install script. A software Vulkan driver (lavapipe, llvmpipe, SwiftShader) runs the shaders on the CPU: slower
 * than the CPU provider and no GPU, so it is never chosen automatically (it can still be forced, for tests).
 */
import type { ExecutionProvider } from "../workloads/index.ts";

export type GpuVendor = "nvidia" | "amd" | "intel" | "other";

export interface GpuSeen {
  name: string;
  vendor: GpuVendor;
  /** Undefined when the machine does not say (an integrated GPU shares the system memory). */
  memoryMiB?: number;
  /** Where it was seen: nvidia-smi, or a /dev/dri render node (by its PCI vendor id). */
  source: "nvidia-smi" | "render-node";
}

/** A Vulkan driver manifest (ICD JSON) the Vulkan loader would load. */
export interface VulkanDriver {
  file: string;
  /** Its library_path. */
  library: string;
  /** What it drives: a GPU vendor, or "software" for a CPU rasteriser. */
  kind: GpuVendor | "software";
}

export interface DeviceFacts {
  gpus: GpuSeen[];
  /** Whether libvulkan.so.1 (the Vulkan loader) can be loaded. */
  vulkanLoader: boolean;
  drivers: VulkanDriver[];
  /** Whether onnxruntime-node's CUDA provider library is installed next to its binding. */
  cudaBinaries: boolean;
}

export const DEVICE_CHOICES = ["auto", "cpu", "webgpu", "cuda"] as const;
export type DeviceChoice = (typeof DEVICE_CHOICES)[number];

export function isDeviceChoice(s: string): s is DeviceChoice {
  return (DEVICE_CHOICES as readonly string[]).includes(s);
}

export interface ProviderDecision {
  provider: ExecutionProvider;
  /** The GPU it runs on (undefined for the CPU, or a forced GPU provider on a machine without one). */
  gpu?: GpuSeen;
  /** For webgpu: the driver it is expected to run on (the GPU's, else the first one the loader would load). */
  driver?: VulkanDriver;
  /** One human sentence: why this provider. */
  reason: string;
}

const SOFTWARE = /swiftshader|lvp|lavapipe|llvmpipe|softpipe/i;

/** What a Vulkan driver manifest drives, from its file name and library_path (pure). */
export function driverKind(file: string, library: string): VulkanDriver["kind"] {
  const text = `${file} ${library}`;
  if (SOFTWARE.test(text)) return "software";
  if (/nvidia/i.test(text)) return "nvidia";
  if (/radeon|amd|radv/i.test(text)) return "amd";
  if (/intel|anv|hasvk/i.test(text)) return "intel";
  return "other";
}

/** PCI vendor id (as in /sys/class/drm/renderD*\/device/vendor) → vendor. */
export function pciVendor(id: string): GpuVendor {
  const v = id.trim().toLowerCase();
  if (v === "0x10de") return "nvidia";
  if (v === "0x1002") return "amd";
  if (v === "0x8086") return "intel";
  return "other";
}

/** The rule: the user's choice wins; else a GPU with the loader and its vendor's driver → webgpu; else cuda; else cpu. */
export function chooseExecutionProvider(
  facts: DeviceFacts,
  choice: DeviceChoice = "auto",
  /** How the user asked, for the reason: "--device webgpu", "GPUCHAIN_EP=webgpu". */
  askedBy = `--device ${choice}`,
): ProviderDecision {
  const gpu = facts.gpus[0];
  if (choice !== "auto") {
    const usable = webgpuDriver(facts);
    // The GPU it can run on: CUDA only on NVIDIA; webgpu on the GPU with its driver, else the first one seen.
    const on =
      choice === "cuda"
        ? facts.gpus.find((g) => g.vendor === "nvidia")
        : choice === "webgpu"
          ? (usable?.gpu ?? gpu)
          : undefined;
    // Without a GPU's own driver, only a software driver can run it (Dawn skips drivers without their hardware).
    const driver =
      choice === "webgpu"
        ? (usable?.driver ?? facts.drivers.find((d) => d.kind === "software") ?? facts.drivers[0])
        : undefined;
    const where = on ? ` on ${on.name}` : driver ? ` on driver ${driver.file}` : "";
    return { provider: choice, gpu: on, driver, reason: `${choice}${where}: asked for (${askedBy})` };
  }
  if (!gpu) return { provider: "cpu", reason: "cpu: no GPU seen (no nvidia-smi answer, no GPU render node)" };
  const webgpu = webgpuDriver(facts);
  if (webgpu)
    return {
      provider: "webgpu",
      gpu: webgpu.gpu,
      driver: webgpu.driver,
      reason: `webgpu on ${webgpu.gpu.name}: Vulkan loader and driver ${webgpu.driver.file}`,
    };
  const nvidia = facts.gpus.find((g) => g.vendor === "nvidia");
  if (nvidia && facts.cudaBinaries)
    return { provider: "cuda", gpu: nvidia, reason: `cuda on ${nvidia.name}: CUDA provider binaries installed` };
  return { provider: "cpu", reason: `cpu: ${gpu.name} seen, but ${whyNoGpuProvider(facts)}` };
}

/** The first GPU with a hardware Vulkan driver of its vendor, when the loader is there. */
function webgpuDriver(facts: DeviceFacts): { gpu: GpuSeen; driver: VulkanDriver } | undefined {
  if (!facts.vulkanLoader) return undefined;
  for (const gpu of facts.gpus) {
    const driver = facts.drivers.find((d) => d.kind !== "software" && d.kind === gpu.vendor);
    if (driver) return { gpu, driver };
  }
  return undefined;
}

function whyNoGpuProvider(facts: DeviceFacts): string {
  const software = facts.drivers.filter((d) => d.kind === "software");
  const vulkan = !facts.vulkanLoader
    ? "no Vulkan loader (libvulkan.so.1)"
    : software.length === facts.drivers.length && software.length > 0
      ? `only software Vulkan drivers (${software.map((d) => d.file).join(", ")}), never chosen by themselves`
      : "no Vulkan driver for it";
  const cuda = facts.gpus.some((g) => g.vendor === "nvidia")
    ? "no CUDA provider binaries (libonnxruntime_providers_cuda.so)"
    : "no CUDA for a non-NVIDIA GPU";
  return `${vulkan} and ${cuda}`;
}
