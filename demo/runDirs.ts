/**
 * The runs under `.gpuchain/`: each run marks its folder as live (its process id) while it runs, so a run that
 * starts beside it (a second `npm start`, a bench part, an e2e test) prunes only the stores of runs that ended.
 */
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";

const LIVE_MARK = "running.pid";

/** Marks `runDir` as the live run of this process; the returned function takes the mark away. */
export function markLive(runDir: string): () => void {
  const mark = path.join(runDir, LIVE_MARK);
  writeFileSync(mark, String(process.pid));
  return () => rmSync(mark, { force: true });
}

/** Whether the run in `dir` is still going: its mark names a process that is alive. */
export function isLive(dir: string): boolean {
  let pid: number;
  try {
    pid = Number(readFileSync(path.join(dir, LIVE_MARK), "utf8"));
  } catch {
    return false; // no mark: it ended (or predates marks)
  }
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0); // signal 0: only asks whether the process exists
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM"; // alive, another user's
  }
}

/**
 * Earlier runs beside this one keep their recordings; the checkpoint stores (hundreds of MB for MNIST) of those
 * that ended are removed. Only folders that are runs (they hold a recording.jsonl) are touched; live ones are not.
 */
export function pruneEndedStores(runsDir: string, current: string): void {
  if (!existsSync(runsDir)) return;
  for (const entry of readdirSync(runsDir, { withFileTypes: true })) {
    const dir = path.join(runsDir, entry.name);
    if (!entry.isDirectory() || dir === current || !existsSync(path.join(dir, "recording.jsonl"))) continue;
    if (isLive(dir)) continue;
    rmSync(path.join(dir, "store"), { recursive: true, force: true });
  }
}
