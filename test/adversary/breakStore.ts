/**
 * Break attempts on the store changes (workloads/store/fs.ts, readFaults.ts, verified.ts). On a `file://` store
 * without the content gate, THREATS.md promises "repair within the grace": the maker's agent puts a damaged blob
 * again. And a failure that names a blob is now that blob's fault (`blob-unreadable`, refused after 30 s), which on
 * probation costs a newcomer its lock (test/adversary/breakProbation.ts: a plain refusal forfeits).
 *
 * FIXED: failed on the code as first reviewed (asserts the safe behaviour), passes now. HELD: the attack was
 * stopped already. OPEN (skipped): a known limit, written up in docs/THREATS.md, kept as its reproduction.
 */
import { expect } from "chai";
import { spawnSync } from "node:child_process";
import { chmod, mkdir, mkdtemp, readdir, rm, unlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { BlobStore, FsBackend, UnreadableBlobError } from "../../workloads/index.ts";

const asRoot = process.getuid?.() === 0;

async function errorOf(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (e) {
    return e;
  }
  return null;
}

describe("breakStore: a rival with write access to a file:// store (no gate) blocks an honest blob for good", function () {
  let root: string;
  before(async () => {
    root = await mkdtemp(join(tmpdir(), "break-store-"));
  });
  after(async () => rm(root, { recursive: true, force: true }));

  it("FIXED: a non-empty directory planted over an honest blob cannot be repaired by the maker's put (rename onto a directory fails), so every verifier refuses it blob-unreadable", async function () {
    const backend = new FsBackend(join(root, "dir-plant"));
    const store = new BlobStore(backend, { retry: { attempts: 2, baseDelayMs: 5 } });
    const bytes = new TextEncoder().encode("honest checkpoint bytes");
    const hash = await store.put(bytes);
    // Find the file the put wrote (its name scheme is the backend's).
    const file = join(backend.dir, (await readdir(backend.dir))[0]);
    // The rival replaces it by a folder with something inside (rename cannot replace a non-empty folder).
    await unlink(file);
    await mkdir(file);
    await writeFile(join(file, "x"), "x");
    expect(await errorOf(store.get(hash)), "what a verifier reads now").to.be.instanceOf(UnreadableBlobError);
    // The honest maker's agent repairs (agent/blobs.ts guardBlobs puts the blob again).
    const repair = await errorOf(store.put(bytes));
    // SAFE: the repair lands and the honest bytes read back.
    expect(repair, `the maker's repair failed: ${(repair as Error)?.message}`).to.equal(null);
    expect(Buffer.from(await store.get(hash)).toString()).to.equal("honest checkpoint bytes");
  });

  it("HELD: a plain file with other bytes or mode 000 over an honest blob is repaired by the maker's put", async function () {
    const backend = new FsBackend(join(root, "file-plant"));
    const store = new BlobStore(backend, { retry: { attempts: 2, baseDelayMs: 5 } });
    const bytes = new TextEncoder().encode("honest bytes two");
    const hash = await store.put(bytes);
    const file = join(backend.dir, (await readdir(backend.dir))[0]);
    await writeFile(file, "squatter");
    await chmod(file, 0o000);
    await store.put(bytes);
    expect(Buffer.from(await store.get(hash)).toString()).to.equal("honest bytes two");
  });
});

describe("breakStore: an honest maker's own file mode is blamed on its blob", function () {
  let root: string;
  before(async () => {
    root = await mkdtemp(join(tmpdir(), "break-umask-"));
    await chmod(root, 0o755);
  });
  after(async () => rm(root, { recursive: true, force: true }));

  /** Reads `hash` from `dir` in a process running as uid nobody (a verifier under its own account). */
  async function readAsNobody(dir: string, hash: string): Promise<string> {
    const index = fileURLToPath(new URL("../../workloads/index.ts", import.meta.url));
    const script = join(root, "read-as-nobody.ts");
    await writeFile(
      script,
      `import { BlobStore, FsBackend } from ${JSON.stringify(index)};
new BlobStore(new FsBackend(process.argv[2]), { retry: { attempts: 1 } }).get(process.argv[3])
  .then(() => console.log("read"), (e) => console.log(e.constructor.name));`,
    );
    await chmod(script, 0o644);
    const r = spawnSync(process.execPath, ["--import", "tsx", script, dir, hash], {
      cwd: process.cwd(),
      encoding: "utf8",
      timeout: 60_000,
      ...(asRoot ? { uid: 65534, gid: 65534 } : {}),
    });
    return (r.stdout.trim() || r.stderr.trim()).split("\n").pop()!;
  }

  it("FIXED: a provider running with a hardened umask (077) writes blobs other accounts cannot open; the verifier then refuses its honest checkpoint blob-unreadable (EACCES blamed on the name) instead of the maker's put making them readable", async function () {
    if (!asRoot) this.skip(); // needs a second uid
    this.timeout(120_000);
    const dir = join(root, "store");
    await mkdir(dir, { recursive: true });
    await chmod(dir, 0o755);
    const old = process.umask(0o077);
    let hash: string;
    try {
      hash = await new BlobStore(new FsBackend(dir), { retry: { attempts: 1 } }).put(
        new TextEncoder().encode("honest bytes under a strict umask"),
      );
    } finally {
      process.umask(old);
    }
    await chmod(dir, 0o755); // the folder is shared with the verifiers, as the operator set it up
    // SAFE: the blob the honest maker put is readable by the verifiers (the backend sets the mode it needs).
    expect(await readAsNobody(dir, hash)).to.equal("read");
  });
});
