/**
 * What this provider trains on: the first NVIDIA GPU reported by `nvidia-smi`, else the CPU. `--memory-cap`
 * emulates a smaller card (the "capped profile"); the trainer's micro-batch follows the offered memory.
 */
import { execFileSync } from "node:child_process";
import os from "node:os";
import type { ExecutionProvider } from "../workloads/index.ts";

export interface DeviceProfile {
  kind: "GPU" | "CPU";
  model: string;
  /** Memory offered (the cap when capped). */
  memoryMiB: number;
  /** Memory the device really has. */
  realMemoryMiB: number;
  capped: boolean;
  executionProvider: ExecutionProvider;
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

export interface DetectOptions {
  memoryCapMiB?: number;
  /** nvidia-smi's output, or undefined when absent (injected in tests). */
  nvidiaSmi?: () => string | undefined;
  cpuModel?: () => string;
  totalMemBytes?: () => number;
}

export function detectDevice(opts: DetectOptions = {}): DeviceProfile {
  const smi = (opts.nvidiaSmi ?? runNvidiaSmi)();
  const gpu = smi === undefined ? undefined : parseNvidiaSmi(smi)[0];
  const base = gpu
    ? { kind: "GPU" as const, model: gpu.name, realMemoryMiB: gpu.memoryMiB, executionProvider: "cuda" as const }
    : {
        kind: "CPU" as const,
        model: (opts.cpuModel ?? (() => os.cpus()[0]?.model ?? `${os.arch()} CPU`))().trim(),
        realMemoryMiB: Math.floor((opts.totalMemBytes ?? os.totalmem)() / (1024 * 1024)),
        executionProvider: "cpu" as const,
      };
  const cap = opts.memoryCapMiB;
  const capped = cap !== undefined && cap < base.realMemoryMiB;
  return { ...base, memoryMiB: capped ? cap : base.realMemoryMiB, capped };
}

/** The registry stores memory as uint32 MiB and a model string of a sane length. */
export function registryProfile(d: DeviceProfile): { kind: 0 | 1; deviceModel: string; memoryMiB: number } {
  return {
    kind: d.kind === "GPU" ? 1 : 0,
    deviceModel: d.model.slice(0, 64),
    memoryMiB: Math.min(d.memoryMiB, 0xffff_ffff),
  };
}
