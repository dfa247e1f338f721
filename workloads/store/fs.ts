// File-system backend: one file per blob (<dir>/<hex>.blob), written to a unique temp name and renamed into place,
// so a reader sees the old bytes or the new ones, never a mix. Rename replaces, which is how a put repairs a name.
import { randomBytes } from "node:crypto";
import { constants } from "node:fs";
import { mkdir, open, rename, stat, unlink, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { UnreadableBlobError } from "../errors.ts";
import type { BlobBackend } from "./backend.ts";

const isMissing = (e: unknown) => (e as NodeJS.ErrnoException).code === "ENOENT";

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

  async read(name: string, maxBytes = Infinity): Promise<Uint8Array | null> {
    let fh;
    try {
      // O_NONBLOCK: opening a FIFO planted under the name returns at once instead of pinning a threadpool thread.
      fh = await open(this.path(name), constants.O_RDONLY | constants.O_NONBLOCK);
    } catch (e) {
      if (isMissing(e)) return null;
      if ((e as NodeJS.ErrnoException).code === "EISDIR") throw new UnreadableBlobError(name, "a directory");
      throw e;
    }
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

  async exists(name: string): Promise<boolean> {
    try {
      await stat(this.path(name));
      return true;
    } catch (e) {
      if (isMissing(e)) return false;
      throw e;
    }
  }
}
