/** A suite's scratch space: a fresh temporary folder and a trainer, opened before its tests and closed after. */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createTrainer, type Template, type Trainer } from "../../workloads/index.ts";

export interface Scratch {
  dir: string;
  trainer: Trainer;
}

/** A new folder named `prefix…` under the system's temp folder, and a trainer for `template`. */
export async function openScratch(prefix: string, template: Template): Promise<Scratch> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  return { dir, trainer: await createTrainer(template) };
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
