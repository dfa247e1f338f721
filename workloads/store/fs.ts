// File-system backend: one file per blob (<dir>/<hex>.blob), written to a unique temp name and renamed into place,
// so a reader sees the old bytes or the new ones, never a mix. Rename replaces, which is how a put repairs a name.
// A read that fails for one name while the folder answers (a symlink loop, a file nobody may open, a symlink
// through a file) is that name's fault, UnreadableBlobError; a folder that cannot be read is the store's (readFaults.ts).
// A write must undo whatever a rival with write access planted under the name (a put is the maker's repair), and
// must leave a blob every verifier's account can open, whatever the writer's umask.
import { randomBytes } from "node:crypto";
import { constants } from "node:fs";
import { access, mkdir, open, readdir, rename, rmdir, stat, unlink, type FileHandle } from "node:fs/promises";
import { basename, dirname, join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { UnreadableBlobError } from "../errors.ts";
import type { BlobBackend } from "./backend.ts";
import { blame, fsReadFault } from "./readFaults.ts";

const codeOf = (e: unknown) => (e as NodeJS.ErrnoException).code;
const isMissing = (e: unknown) => codeOf(e) === "ENOENT";
const unique = () => `${process.pid}.${randomBytes(6).toString("hex")}`;

/** Every blob's mode, set after creation because the umask masks a create mode: verifiers run as other accounts. */
export const BLOB_MODE = 0o644;

/**
 * What rename(2) answers when the destination is a directory (EISDIR; ENOTEMPTY/EEXIST where the source is one
 * too). Rename replaces a file, a FIFO or a symlink (the link itself, never its target) in one step; a directory
 * it never replaces, so one planted under a blob's name would outlast every repair.
 */
const OCCUPIED_CODES = new Set(["EISDIR", "ENOTEMPTY", "EEXIST"]);
/** Bounds on cleaning up a planted tree: a rival's deep or huge tree costs the writer little; the rest stays aside. */
const CLEANUP_MAX_ENTRIES = 10_000;
const CLEANUP_MAX_DEPTH = 32;

/**
 * Removes `path` (a directory a rival planted, already renamed aside so nobody reads it) and all under it, never
 * following a symlink: each directory is opened O_NOFOLLOW and its entries are named through /proc/self/fd/<fd>,
 * the directory actually opened, so a rival swapping a subdirectory for a symlink mid-walk cannot aim the removal
 * outside the tree (the race `rm -r` by path name has). Best effort: where /proc is missing or a bound is hit, what
 * is left stays under its aside name, out of every blob's way.
 */
async function removePlanted(path: string): Promise<void> {
  const parent = await open(dirname(path), constants.O_RDONLY | constants.O_DIRECTORY);
  try {
    await removeEntry(`/proc/self/fd/${parent.fd}`, basename(path), { left: CLEANUP_MAX_ENTRIES }, 0);
  } finally {
    await parent.close();
  }
}

/** Removes `entry` of the directory `at` names (a /proc/self/fd path); a directory after its own entries. */
async function removeEntry(at: string, entry: string, budget: { left: number }, depth: number): Promise<void> {
  if (--budget.left < 0 || depth > CLEANUP_MAX_DEPTH) throw new Error("planted tree past the cleanup bounds");
  const path = join(at, entry);
  let dir: FileHandle;
  try {
    // O_NONBLOCK: never wait on a FIFO; O_NOFOLLOW + O_DIRECTORY: a symlink or a file fails here, and is unlinked.
    dir = await open(path, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (e) {
    if (codeOf(e) === "ENOTDIR" || codeOf(e) === "ELOOP") return unlink(path);
    throw e;
  }
  try {
    const here = `/proc/self/fd/${dir.fd}`;
    for (const child of await readdir(here)) await removeEntry(here, child, budget, depth + 1);
  } finally {
    await dir.close();
  }
  await rmdir(path);
}

/** Writes `bytes` to a new file `tmp` with mode BLOB_MODE whatever the umask (fchmod: the umask never applies). */
async function writeNew(tmp: string, bytes: Uint8Array): Promise<void> {
  const fh = await open(tmp, "wx", BLOB_MODE);
  try {
    await fh.chmod(BLOB_MODE);
    await fh.writeFile(bytes);
  } finally {
    await fh.close();
  }
}

/** Moves what is under `dest` to a fresh name beside it (the entry itself, never a symlink's target); null if gone. */
async function setAside(dest: string): Promise<string | null> {
  const aside = `${dest}.${unique()}.planted`;
  try {
    await rename(dest, aside);
    return aside;
  } catch (e) {
    if (isMissing(e)) return null;
    throw e;
  }
}

/**
 * Renames `tmp` onto `dest`; a directory there is set aside and the rename tried again (twice: a rival may plant
 * again in between). Returns what was set aside, for cleanup once the right bytes are in place.
 */
async function place(tmp: string, dest: string): Promise<string[]> {
  const aside: string[] = [];
  for (let tries = 1; ; tries++) {
    try {
      await rename(tmp, dest);
      return aside;
    } catch (e) {
      if (!OCCUPIED_CODES.has(codeOf(e) ?? "") || tries > 2) throw e;
      const moved = await setAside(dest);
      if (moved) aside.push(moved);
    }
  }
}

export class FsBackend implements BlobBackend {
  readonly dir: string;
  readonly url: string;

  constructor(dir: string) {
    this.dir = dir;
    this.url = pathToFileURL(resolve(dir)).href;
  }

  path(name: string): string {
    return join(this.dir, `${name}.blob`);
  }

  /** Whether the store's folder itself is there and readable (then a failure for one name is that name's). */
  private async folderAnswers(): Promise<boolean> {
    try {
      if (!(await stat(this.dir)).isDirectory()) return false;
      await access(this.dir, constants.R_OK | constants.X_OK);
      return true;
    } catch {
      return false;
    }
  }

  /** Null for a missing blob; UnreadableBlobError for a failure that is this name's alone; else `e` itself. */
  private async judged(name: string, e: unknown): Promise<null> {
    const fault = fsReadFault(codeOf(e));
    if (fault === "missing") return null;
    if (fault === "this-name" && blame(fault, await this.folderAnswers()) === "this-name")
      throw new UnreadableBlobError(name, `${codeOf(e)}: ${(e as Error).message}`);
    throw e;
  }

  async read(name: string, maxBytes = Infinity): Promise<Uint8Array | null> {
    let fh;
    try {
      // O_NONBLOCK: opening a FIFO planted under the name returns at once instead of pinning a threadpool thread.
      fh = await open(this.path(name), constants.O_RDONLY | constants.O_NONBLOCK);
    } catch (e) {
      return this.judged(name, e);
    }
    try {
      return await this.readOpen(fh, name, maxBytes);
    } catch (e) {
      if (e instanceof UnreadableBlobError || fsReadFault(codeOf(e)) !== "this-name") throw e;
      return this.judged(name, e); // EIO, EISDIR while reading the file's bytes
    }
  }

  private async readOpen(fh: FileHandle, name: string, maxBytes: number): Promise<Uint8Array> {
    try {
      const st = await fh.stat();
      if (!st.isFile()) throw new UnreadableBlobError(name, "not a regular file");
      if (st.size > maxBytes) throw new UnreadableBlobError(name, `${st.size} bytes, more than ${maxBytes}`);
      const b = await fh.readFile();
      return new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
    } finally {
      await fh.close();
    }
  }

  /** Replaces whatever is under `name` (a file, a symlink, a FIFO, a directory) by a readable file of `bytes`. */
  async write(name: string, bytes: Uint8Array): Promise<void> {
    await mkdir(this.dir, { recursive: true });
    const dest = this.path(name);
    const tmp = `${dest}.${unique()}.tmp`;
    let aside: string[];
    try {
      await writeNew(tmp, bytes);
      aside = await place(tmp, dest);
    } catch (e) {
      await unlink(tmp).catch(() => {});
      throw e;
    }
    // After the repair landed: a cleanup that fails leaves litter under an aside name, never a failed put.
    for (const p of aside) await removePlanted(p).catch(() => {});
  }

  /** True also for a name whose object cannot be read (a put then replaces it). */
  async exists(name: string): Promise<boolean> {
    try {
      await stat(this.path(name));
      return true;
    } catch (e) {
      if (isMissing(e)) return false;
      if (fsReadFault(codeOf(e)) === "this-name" && (await this.folderAnswers())) return true;
      throw e;
    }
  }
}
