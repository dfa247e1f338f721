/**
 * One trainer per workload template, created on first use with the device's execution provider and the
 * micro-batch that fits the offered memory. A GPU provider (webgpu, cuda) that fails to load falls back to the CPU
 * with a warning naming it and why; the pool then stays on the CPU (a provider that cannot open a session on this
 * machine will not open one for the next template either) and tells the agent, whose profile changes with it.
 */
import type { Logger } from "../sdk/run/log.ts";
import {
  type ExecutionProvider,
  createTrainer,
  ExecutionProviderError,
  microBatchForMemory,
  type Template,
  type Trainer,
} from "../workloads/index.ts";
import type { DeviceProfile } from "./device.ts";

export type TrainerFactory = typeof createTrainer;

export class TrainerPool {
  device: DeviceProfile;
  logger: Logger;
  factory: TrainerFactory;
  /** The provider trainers are made on now: the device's, or cpu after it failed to load. */
  executionProvider: ExecutionProvider;
  /** Called once when the device's provider failed to load and the pool moved to the cpu. */
  onFallback?: (failed: ExecutionProvider) => void;
  private trainers = new Map<string, Promise<Trainer>>();

  constructor(
    device: DeviceProfile,
    logger: Logger,
    factory: TrainerFactory = createTrainer,
    onFallback?: (failed: ExecutionProvider) => void,
  ) {
    this.device = device;
    this.logger = logger;
    this.factory = factory;
    this.executionProvider = device.executionProvider;
    this.onFallback = onFallback;
  }

  /** Whether a trainer for `t` is loaded or loading. */
  has(t: Template): boolean {
    return this.trainers.has(t.templateId);
  }

  /** Throws RangeError when even one atom per micro-batch of `t` does not fit the offered memory. */
  check(t: Template): void {
    microBatchForMemory(t, this.device.memoryMiB);
  }

  get(t: Template): Promise<Trainer> {
    let tr = this.trainers.get(t.templateId);
    if (!tr) {
      tr = this.create(t);
      this.trainers.set(t.templateId, tr);
      tr.catch(() => this.trainers.delete(t.templateId));
    }
    return tr;
  }

  private async create(t: Template): Promise<Trainer> {
    // Throws RangeError when even one atom per micro-batch does not fit the offered memory.
    const microBatchAtoms = microBatchForMemory(t, this.device.memoryMiB);
    const ep = this.executionProvider;
    try {
      const tr = await this.factory(t, { executionProvider: ep, microBatchAtoms });
      this.logger.info("trainer ready", {
        template: t.descriptor.name,
        executionProvider: ep,
        microBatchAtoms,
        atomsPerStep: t.atomsPerStep,
      });
      return tr;
    } catch (err) {
      if (ep === "cpu" || !(err instanceof ExecutionProviderError)) throw err;
      this.logger.warn(`${ep} execution provider failed to load; falling back to cpu`, {
        template: t.descriptor.name,
        executionProvider: ep,
        error: err.message,
      });
      if (this.executionProvider === ep) {
        this.executionProvider = "cpu";
        this.onFallback?.(ep);
      }
      return this.factory(t, { executionProvider: "cpu", microBatchAtoms });
    }
  }

  async closeAll(): Promise<void> {
    const all = [...this.trainers.values()];
    this.trainers.clear();
    await Promise.all(all.map(async (p) => (await p.catch(() => undefined))?.close()));
  }
}
