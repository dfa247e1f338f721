/**
 * Key files for providers, verifiers and keepers: created with 0600 permissions, refused when readable by others.
 * Keys never live in a committed file.
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { Wallet } from "ethers";

export class KeyFileError extends Error {}

/** Loads the key at `file`, or creates one (0600) when `create` and the file does not exist. */
export function loadOrCreateKey(file: string, create: boolean): { wallet: Wallet; created: boolean } {
  if (!existsSync(file)) {
    if (!create) throw new KeyFileError(`no key file at ${file}`);
    mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
    const wallet = Wallet.createRandom();
    writeFileSync(file, wallet.privateKey + "\n", { mode: 0o600, flag: "wx" });
    chmodSync(file, 0o600);
    return { wallet: new Wallet(wallet.privateKey), created: true };
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

/** Writes a known key (e.g. a local chain's test account) to a 0600 file. */
export function writeKey(file: string, privateKey: string): void {
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  writeFileSync(file, privateKey + "\n", { mode: 0o600 });
  chmodSync(file, 0o600);
}
