// File-system backend: one file per blob (<dir>/<hex>.blob), written to a unique temp name and renamed into place,
// so a reader sees the old bytes or the new ones, never a mix. Rename replaces, which is how a put repairs a name.
// A read that fails for one name while the folder answers (a symlink loop, a file nobody may open, a symlink
// through a file) is that name's fault, UnreadableBlobError; a folder that cannot be read is the store's (readFaults.ts).
import { randomBytes } from "node:crypto";
import { constants } from "node:fs";
import { access, mkdir, open, rename, stat, unlink, writeFile, type FileHandle } from "node:fs/promises";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { UnreadableBlobError } from "../errors.ts";
import type { BlobBackend } from "./backend.ts";
import { blame, fsReadFault } from "./readFaults.ts";

const codeOf = (e: unknown) => (e as NodeJS.ErrnoException).code;
const isMissing = (e: unknown) => codeOf(e) === "ENOENT";

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

  async write(name: string, bytes: Uint8Array): Promise<void> {
    await mkdir(this.dir, { recursive: true });
    const dest = this.path(name);
    const tmp = `${dest}.${process.pid}.${randomBytes(6).toString("hex")}.tmp`;
    try {
      await writeFile(tmp, bytes, { flag: "wx" });
      await rename(tmp, dest);
    } catch (e) {
      await unlink(tmp).catch(() => {});
      throw e;
    }
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
