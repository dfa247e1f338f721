/**
 * Key files for providers, verifiers and keepers: created with 0600 permissions, refused when readable by others.
 * Keys never live in a committed file.
 *
 * Creating a key file never follows a symlink and never overwrites a file (O_CREAT | O_EXCL | O_NOFOLLOW, mode
 * 0600, then fchmod on the open descriptor): a link planted at the key path cannot make us write a key somewhere
 * else nor change another file's permissions, and an existing key is never replaced. Reading an existing key file
 * (reuse) works as before.
 */
import {
  closeSync,
  constants,
  existsSync,
  fchmodSync,
  lstatSync,
  mkdirSync,
  openSync,
  readFileSync,
  statSync,
  writeSync,
} from "node:fs";
import path from "node:path";
import { Wallet } from "ethers";

export class KeyFileError extends Error {}

/** Loads the key at `file`, or creates one (0600) when `create` and nothing (not even a link) is there. */
export function loadOrCreateKey(file: string, create: boolean): { wallet: Wallet; created: boolean } {
  const entry = lstatOrUndefined(file);
  if (entry === undefined) {
    if (!create) throw new KeyFileError(`no key file at ${file}`);
    const wallet = Wallet.createRandom();
    createKeyFile(file, wallet.privateKey);
    return { wallet: new Wallet(wallet.privateKey), created: true };
  }
  if (entry.isSymbolicLink() && !existsSync(file)) {
    throw new KeyFileError(
      `key file ${file} is a symlink to a missing file; refusing to create a key through it (remove the link)`,
    );
  }
  return { wallet: loadKey(file), created: false };
}

export function loadKey(file: string): Wallet {
  if (!existsSync(file)) throw new KeyFileError(`no key file at ${file} (a 0600 file holding a 0x… private key)`);
  const stat = statSync(file);
  if (!stat.isFile()) throw new KeyFileError(`key file ${file} is not a file`);
  const mode = stat.mode & 0o777;
  if (mode & 0o077) {
    throw new KeyFileError(
      `key file ${file} has permissions ${mode.toString(8)}; it must be readable by its owner only (chmod 600 ${file})`,
    );
  }
  const text = readFileSync(file, "utf8").trim();
  if (!/^0x[0-9a-fA-F]{64}$/.test(text)) {
    throw new KeyFileError(`key file ${file} does not hold a private key (expected 0x followed by 64 hex digits)`);
  }
  return new Wallet(text);
}

/**
 * Writes a known key (e.g. a local chain's test account) to a new 0600 file. A regular file already holding exactly
 * this key is left as it is (a re-used run folder); anything else at the path — another key, another file, a
 * symlink even to this key — is refused with a KeyFileError and left untouched.
 */
export function writeKey(file: string, privateKey: string): void {
  const entry = lstatOrUndefined(file);
  if (entry?.isFile() && readFileSync(file, "utf8").trim() === privateKey.trim()) return;
  createKeyFile(file, privateKey);
}

/** A new 0600 file holding `privateKey`: never through a symlink, never over an existing file. */
function createKeyFile(file: string, privateKey: string): void {
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  let fd: number;
  try {
    // O_NOFOLLOW is 0 where the platform has none; O_EXCL alone already refuses an existing path or link.
    fd = openSync(file, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | (constants.O_NOFOLLOW ?? 0), 0o600);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "EEXIST" || code === "ELOOP") {
      const what = lstatOrUndefined(file)?.isSymbolicLink() ? "a symlink" : "an existing file";
      throw new KeyFileError(
        `refusing to write a key to ${file}: it is ${what}, and a key file is only ever created new ` +
          "(never through a link, never over a file); remove it or choose another path",
      );
    }
    throw new KeyFileError(`cannot create key file ${file}: ${(err as Error).message}`);
  }
  try {
    fchmodSync(fd, 0o600); // the umask may have narrowed it; on the descriptor, so no path is looked up again
    writeSync(fd, privateKey + "\n");
  } finally {
    closeSync(fd);
  }
}

function lstatOrUndefined(file: string) {
  try {
    return lstatSync(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw err;
  }
}
