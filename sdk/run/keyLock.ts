/**
 * Two processes on one key coordinate: each picks a nonce and broadcasts only while it holds this key's
 * lock file, and picks it from the node's pending count read under the lock (sdk/node/txManager.ts). So a second
 * keeper, a `gpuchain` command or an agent on the same key never takes a nonce the other just used.
 *
 * One file per chain id and address, `<dir>/<chainId>-<address>.lock`, created exclusively (O_EXCL) and holding
 * the owner's pid; removed after the broadcast. A lock whose pid no longer runs (a process killed mid-send) is
 * stale and taken over. A lock held longer than `timeoutMs` by a live process is an error naming that pid.
 * Directory: `GPUCHAIN_KEY_LOCK_DIR`, else `<tmpdir>/gpuchain-keys` (shared by every checkout on the machine, as
 * the key is). Processes on other machines cannot see it: for them the manager's foreign-nonce check remains.
 */
import { closeSync, mkdirSync, openSync, readFileSync, unlinkSync, writeSync } from "node:fs";
import os from "node:os";
import path from "node:path";

export const KEY_LOCK_DIR_ENV = "GPUCHAIN_KEY_LOCK_DIR";

export function keyLockDir(env: Record<string, string | undefined> = process.env): string {
  return env[KEY_LOCK_DIR_ENV] || path.join(os.tmpdir(), "gpuchain-keys");
}

export class KeyLockTimeoutError extends Error {
  readonly code = "KEY_LOCK_TIMEOUT";
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

function ownerOf(file: string): number | undefined {
  try {
    const pid = Number(readFileSync(file, "utf8").trim());
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined; // gone meanwhile, or being written
  }
}

/** Runs `fn` holding the lock of (`chainId`, `address`); waits for another holder, takes over a dead one's. */
export async function withKeyLock<T>(
  chainId: bigint,
  address: string,
  fn: () => Promise<T>,
  o: { dir?: string; timeoutMs?: number } = {},
): Promise<T> {
  const dir = o.dir ?? keyLockDir();
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `${chainId}-${address.toLowerCase()}.lock`);
  const timeoutMs = o.timeoutMs ?? 60_000;
  const started = Date.now();
  for (let wait = 2; ; wait = Math.min(wait * 2, 50)) {
    try {
      const fd = openSync(file, "wx");
      writeSync(fd, `${process.pid}\n`);
      closeSync(fd);
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    }
    const owner = ownerOf(file);
    if (owner !== undefined && !alive(owner)) {
      try {
        unlinkSync(file); // stale: its process is gone
      } catch {
        // another waiter took it over first
      }
      continue;
    }
    if (Date.now() - started > timeoutMs) {
      throw new KeyLockTimeoutError(
        `key ${address} on chain ${chainId}: process ${owner ?? "?"} has held its send lock (${file}) for over ` +
          `${timeoutMs / 1000} s; is it stuck? (remove the file if that process is gone)`,
      );
    }
    await new Promise((r) => setTimeout(r, wait));
  }
  try {
    return await fn();
  } finally {
    try {
      unlinkSync(file);
    } catch {
      // taken over as stale while we held it (we were paused longer than anyone waits): nothing to release
    }
  }
}
