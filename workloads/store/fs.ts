// File-system backend: one file per blob (<dir>/<hex>.blob), written to a unique temp name and renamed into place,
// so a reader sees the old bytes or the new ones, never a mix. Rename replaces, which is how a put repairs a name.
import { randomBytes } from "node:crypto";
import { mkdir, readFile, rename, stat, unlink, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
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

  async read(name: string): Promise<Uint8Array | null> {
    try {
      const b = await readFile(this.path(name));
      return new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
    } catch (e) {
      if (isMissing(e)) return null;
      throw e;
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
