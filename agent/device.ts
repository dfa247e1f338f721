/**
 * What this provider trains on: the execution provider agent/executionProvider.ts chooses from the facts gathered
 * here (GPUs seen by nvidia-smi or as /dev/dri render nodes, the Vulkan loader and drivers, onnxruntime-node's CUDA
 * binaries) and the user's `--device`. `--memory-cap` emulates a smaller card (the "capped profile"); the trainer's
 * micro-batch follows the offered memory.
 */
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import type { ExecutionProvider } from "../workloads/index.ts";
import {
  chooseExecutionProvider,
  driverKind,
  pciVendor,
  type DeviceChoice,
  type DeviceFacts,
  type GpuSeen,
  type ProviderDecision,
  type VulkanDriver,
} from "./executionProvider.ts";

export interface DeviceProfile {
  kind: "GPU" | "CPU";
  model: string;
  /** Memory offered (the cap when capped). */
  memoryMiB: number;
  /** Memory the device really has. */
  realMemoryMiB: number;
  capped: boolean;
  executionProvider: ExecutionProvider;
  /** What the provider computes on when it is not the CPU (the GPU's name, or a forced software driver's file). */
  providerDevice?: string;
  /** Why this provider (agent/executionProvider.ts), logged at start. */
  providerReason?: string;
}

export interface GpuInfo {
  name: string;
  memoryMiB: number;
}

/** Parses `nvidia-smi --query-gpu=name,memory.total --format=csv,noheader,nounits` (one GPU per line). */
export function parseNvidiaSmi(stdout: string): GpuInfo[] {
  const gpus: GpuInfo[] = [];
  for (const line of stdout.split(/\r?\n/)) {
    if (!line.trim()) continue;
    const comma = line.lastIndexOf(",");
    if (comma < 0) continue;
    const name = line.slice(0, comma).trim();
    const memoryMiB = Number(line.slice(comma + 1).trim());
    if (name && Number.isFinite(memoryMiB) && memoryMiB > 0) gpus.push({ name, memoryMiB: Math.floor(memoryMiB) });
  }
  return gpus;
}

export const NVIDIA_SMI_ARGS = ["--query-gpu=name,memory.total", "--format=csv,noheader,nounits"];

/** Runs nvidia-smi; undefined when it is absent or fails. */
export function runNvidiaSmi(): string | undefined {
  try {
    return execFileSync("nvidia-smi", NVIDIA_SMI_ARGS, {
      encoding: "utf8",
      timeout: 10_000,
      stdio: ["ignore", "pipe", "ignore"],
    });
  } catch {
    return undefined;
  }
}

/** The machine as the fact gathering reads it; each part injectable for tests. */
export interface FactSources {
  /** nvidia-smi's output, or undefined when absent. */
  nvidiaSmi?: () => string | undefined;
  env?: NodeJS.ProcessEnv;
  /** Root of the file system (tests point it at a folder laid out like /sys, /usr/share/vulkan, …). */
  root?: string;
  /** onnxruntime-node's binary folder for this platform. */
  ortBinDir?: string;
}

const PCI_VENDOR_NAME = { nvidia: "NVIDIA", amd: "AMD", intel: "Intel", other: "GPU" } as const;

/** GPUs seen as /dev/dri render nodes with a known GPU vendor id (/sys/class/drm/renderD*\/device/vendor). */
export function renderNodeGpus(root = "/"): GpuSeen[] {
  const drm = path.join(root, "sys/class/drm");
  const gpus: GpuSeen[] = [];
  for (const node of safeReaddir(drm)
    .filter((n) => /^renderD\d+$/.test(n))
    .sort()) {
    const dev = path.join(drm, node, "device");
    const vendor = pciVendor(safeRead(path.join(dev, "vendor")) ?? "");
    if (vendor === "other") continue; // virtual or display-only devices are no compute GPU we know
    const id = safeRead(path.join(dev, "device"))?.trim() ?? "?";
    const vram = Number(safeRead(path.join(dev, "mem_info_vram_total")));
    gpus.push({
      name: `${PCI_VENDOR_NAME[vendor]} GPU ${id}`,
      vendor,
      source: "render-node",
      ...(vram > 0 ? { memoryMiB: Math.floor(vram / (1024 * 1024)) } : {}),
    });
  }
  return gpus;
}

/** Library folders the dynamic loader searches on common Linux systems, LD_LIBRARY_PATH first. */
function libraryDirs(env: NodeJS.ProcessEnv, root: string): string[] {
  const multiarch = process.arch === "arm64" ? "aarch64-linux-gnu" : "x86_64-linux-gnu";
  const dirs = (env.LD_LIBRARY_PATH ?? "").split(":").filter(Boolean);
  for (const d of [`lib/${multiarch}`, `usr/lib/${multiarch}`, "lib64", "usr/lib64", "lib", "usr/lib", "usr/local/lib"])
    dirs.push(path.join(root, d));
  return dirs;
}

export function hasVulkanLoader(env: NodeJS.ProcessEnv = process.env, root = "/"): boolean {
  return libraryDirs(env, root).some((d) => existsSync(path.join(d, "libvulkan.so.1")));
}

/**
 * The Vulkan driver manifests the loader would load: those VK_DRIVER_FILES / VK_ICD_FILENAMES name (files or
 * folders; they replace the search, so a name that does not exist leaves none), else the icd.d folders, plus
 * VK_ADD_DRIVER_FILES. A manifest that cannot be read or has no library_path is no driver.
 */
export function vulkanDrivers(env: NodeJS.ProcessEnv = process.env, root = "/"): VulkanDriver[] {
  const named = env.VK_DRIVER_FILES || env.VK_ICD_FILENAMES;
  const home = env.HOME ?? os.homedir();
  const searched = [
    ...(env.XDG_CONFIG_DIRS || "/etc/xdg").split(":"),
    "/etc",
    env.XDG_DATA_HOME || path.join(home, ".local/share"),
    ...(env.XDG_DATA_DIRS || "/usr/local/share:/usr/share").split(":"),
  ].map((d) => path.join(root, d, "vulkan/icd.d"));
  const entries = [...(named ? named.split(":") : searched), ...(env.VK_ADD_DRIVER_FILES ?? "").split(":")];
  const files: string[] = [];
  for (const e of entries.filter(Boolean)) {
    const isDir = safeStat(e)?.isDirectory();
    if (isDir) for (const f of safeReaddir(e).sort()) if (f.endsWith(".json")) files.push(path.join(e, f));
    if (isDir === false) files.push(e);
  }
  const drivers: VulkanDriver[] = [];
  for (const file of [...new Set(files)]) {
    if (process.arch === "x64" && /\.(i686|i386)\.json$/.test(file)) continue; // a 32-bit driver
    let library: unknown;
    try {
      library = (JSON.parse(readFileSync(file, "utf8")) as { ICD?: { library_path?: unknown } }).ICD?.library_path;
    } catch {
      continue;
    }
    if (typeof library === "string" && library) drivers.push({ file, library, kind: driverKind(file, library) });
  }
  return drivers;
}

/** onnxruntime-node's binaries for this platform (the CUDA provider is downloaded into the same folder). */
export function ortBinDir(): string {
  const pkg = createRequire(import.meta.url).resolve("onnxruntime-node/package.json");
  return path.join(path.dirname(pkg), "bin", "napi-v6", process.platform, process.arch);
}

export function gatherDeviceFacts(src: FactSources = {}): DeviceFacts {
  const env = src.env ?? process.env;
  const root = src.root ?? "/";
  const smi = (src.nvidiaSmi ?? runNvidiaSmi)();
  const nvidia: GpuSeen[] = (smi === undefined ? [] : parseNvidiaSmi(smi)).map((g) => ({
    ...g,
    vendor: "nvidia",
    source: "nvidia-smi",
  }));
  // nvidia-smi names NVIDIA GPUs better than their render nodes do; the nodes add the others.
  const nodes = renderNodeGpus(root).filter((g) => !(nvidia.length > 0 && g.vendor === "nvidia"));
  return {
    gpus: [...nvidia, ...nodes],
    vulkanLoader: hasVulkanLoader(env, root),
    drivers: vulkanDrivers(env, root),
    cudaBinaries: existsSync(path.join(src.ortBinDir ?? ortBinDir(), "libonnxruntime_providers_cuda.so")),
  };
}

export interface DetectOptions {
  memoryCapMiB?: number;
  /** The user's --device (default auto) and how it was asked, for the reason. */
  device?: DeviceChoice;
  askedBy?: string;
  /** The machine's facts (default: gathered now). */
  facts?: () => DeviceFacts;
  cpuModel?: () => string;
  totalMemBytes?: () => number;
}

export function detectDevice(opts: DetectOptions = {}): DeviceProfile {
  const decision: ProviderDecision = chooseExecutionProvider(
    (opts.facts ?? gatherDeviceFacts)(),
    opts.device ?? "auto",
    opts.askedBy,
  );
  const systemMiB = Math.floor((opts.totalMemBytes ?? os.totalmem)() / (1024 * 1024));
  const gpu = decision.gpu;
  const base = gpu
    ? { kind: "GPU" as const, model: gpu.name, realMemoryMiB: gpu.memoryMiB ?? systemMiB } // integrated: shared
    : {
        kind: "CPU" as const,
        model: (opts.cpuModel ?? (() => os.cpus()[0]?.model ?? `${os.arch()} CPU`))().trim(),
        realMemoryMiB: systemMiB,
      };
  // Forced webgpu without a GPU runs on a (software) driver: name that, e.g. "vk_swiftshader_icd".
  const driverName = decision.driver && path.basename(decision.driver.file, ".json");
  const providerDevice = decision.provider === "cpu" ? undefined : (gpu?.name ?? driverName);
  const cap = opts.memoryCapMiB;
  const capped = cap !== undefined && cap < base.realMemoryMiB;
  return {
    ...base,
    memoryMiB: capped ? cap : base.realMemoryMiB,
    capped,
    executionProvider: decision.provider,
    ...(providerDevice !== undefined ? { providerDevice } : {}),
    providerReason: decision.reason,
  };
}

function safeReaddir(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

function safeRead(file: string): string | undefined {
  try {
    return readFileSync(file, "utf8");
  } catch {
    return undefined;
  }
}

function safeStat(file: string) {
  try {
    return statSync(file);
  } catch {
    return undefined;
  }
}

/** The registry stores memory as uint32 MiB and a model string of a sane length. */
export function registryProfile(d: DeviceProfile): { kind: 0 | 1; deviceModel: string; memoryMiB: number } {
  return {
    kind: d.kind === "GPU" ? 1 : 0,
    deviceModel: d.model.slice(0, 64),
    memoryMiB: Math.min(d.memoryMiB, 0xffff_ffff),
  };
}
