/**
 * How the CLI finds a network `npm start` is running (and left up with --keep): while its network is up, npm start
 * writes `.gpuchain/networks/<pid>.json` (under the folder it was started in) naming its RPC, its deployment file
 * and the key files of the run (the roles' and the providers'), and removes it when it stops. A file whose process
 * is gone (a run killed by SIGKILL) is ignored. With neither --rpc nor --deployment given, a command run from the
 * same folder uses the newest such network (cli/context.ts), and names its keys' addresses by their role (the
 * client, the owner, the arbiter, alice …) wherever they appear.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { loadKey } from "../sdk/run/keys.ts";

export interface LiveNetwork {
  pid: number;
  rpc: string;
  /** Absolute. */
  deploymentFile: string;
  /** The run's folder (absolute). */
  runDir: string;
  startedAt: string;
  /** Names of the run's keys → their addresses (checksummed): client, owner, arbiter, verifier1 …, alice …. */
  names: Record<string, string>;
  /** Name → key file (absolute), for the hints. */
  keyFiles: Record<string, string>;
}

export const NETWORKS_DIR = path.join(".gpuchain", "networks");

/**
 * Writes this process's network file under `base` (default: the working folder); the returned function removes
 * it. The names are read when a command asks (the providers' keys are made after the network is up).
 */
export function announceNetwork(
  n: { rpc: string; deploymentFile: string; runDir: string },
  base = process.cwd(),
): () => void {
  const dir = path.join(base, NETWORKS_DIR);
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `${process.pid}.json`);
  const live: Omit<LiveNetwork, "names" | "keyFiles"> = {
    pid: process.pid,
    rpc: n.rpc,
    deploymentFile: path.resolve(n.deploymentFile),
    runDir: path.resolve(n.runDir),
    startedAt: new Date().toISOString(),
  };
  writeFileSync(file, `${JSON.stringify(live, null, 2)}\n`);
  return () => rmSync(file, { force: true });
}

/** The key files of a run, by name: its roles' (keys/NAME.key) and its providers' (providers/NAME/key). */
export function runKeys(runDir: string): Pick<LiveNetwork, "names" | "keyFiles"> {
  const names: Record<string, string> = {};
  const keyFiles: Record<string, string> = {};
  const add = (name: string, file: string) => {
    try {
      names[name] = loadKey(file).address;
      keyFiles[name] = file;
    } catch {
      // not a key file this run can read: no name for it
    }
  };
  const keys = path.join(runDir, "keys");
  if (existsSync(keys))
    for (const f of readdirSync(keys).sort()) if (f.endsWith(".key")) add(f.slice(0, -4), path.join(keys, f));
  const providers = path.join(runDir, "providers");
  if (existsSync(providers)) for (const p of readdirSync(providers).sort()) add(p, path.join(providers, p, "key"));
  return { names, keyFiles };
}

/** The networks npm start runs now, from `base`'s `.gpuchain/networks`, newest first. */
export function liveNetworks(base = process.cwd()): LiveNetwork[] {
  const dir = path.join(base, NETWORKS_DIR);
  if (!existsSync(dir)) return [];
  const found: LiveNetwork[] = [];
  for (const f of readdirSync(dir)) {
    if (!f.endsWith(".json")) continue;
    try {
      const n = JSON.parse(readFileSync(path.join(dir, f), "utf8")) as LiveNetwork;
      if (typeof n.rpc !== "string" || typeof n.deploymentFile !== "string" || !alive(n.pid)) continue;
      found.push({ ...n, ...runKeys(n.runDir) });
    } catch {
      // half written, or not ours: skipped
    }
  }
  return found.sort((a, b) => (a.startedAt < b.startedAt ? 1 : a.startedAt > b.startedAt ? -1 : 0));
}

/** The live network whose deployment file is `file`, if any: its names apply to what a command prints. */
export function liveNetworkOf(file: string | undefined, base = process.cwd()): LiveNetwork | undefined {
  if (!file) return undefined;
  const want = path.resolve(file);
  return liveNetworks(base).find((n) => n.deploymentFile === want);
}

function alive(pid: unknown): boolean {
  if (typeof pid !== "number" || !Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0); // signal 0: only asks whether the process exists
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}
