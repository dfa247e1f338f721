/**
 * A suite's scratch space: a fresh temporary folder, a trainer and a checkpoint store in the folder, opened before
 * its tests and closed after.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createTrainer, FsCheckpointStore, type Template, type Trainer } from "../../workloads/index.ts";

export interface Scratch {
  dir: string;
  trainer: Trainer;
  /** Under `dir`/store. */
  store: FsCheckpointStore;
}

/** A new folder named `prefix…` under the system's temp folder, a trainer for `template` and a store. */
export async function openScratch(prefix: string, template: Template): Promise<Scratch> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  return { dir, trainer: await createTrainer(template), store: new FsCheckpointStore(join(dir, "store")) };
}

/** Closes the trainer (if the suite got that far) and removes the folder with everything in it. */
export async function closeScratch(s: Partial<Scratch>): Promise<void> {
  await s.trainer?.close();
  if (s.dir) await rm(s.dir, { recursive: true, force: true });
}

/** The suite's scratch, opened in a `before` hook and closed in an `after` hook registered here. */
export function useScratch(prefix: string, template: Template): Scratch {
  const scratch = {} as Scratch;
  before(async () => Object.assign(scratch, await openScratch(prefix, template)));
  after(() => closeScratch(scratch));
  return scratch;
}
