/**
 * Key files written through symlinks and over existing files: creating a key must never follow a
 * link planted at the key path (the link's target stays untouched, content and permissions) nor replace an existing
 * file; it fails with a KeyFileError that says why. Reusing an existing key (`gpuchain provide`'s second start)
 * still works. Real files and real symlinks in a temporary folder.
 */
import { expect } from "chai";
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { Wallet } from "ethers";
import { openProviderKey } from "../../agent/cli.ts";
import { createLogger } from "../../sdk/run/log.ts";
import { KeyFileError, loadKey, loadOrCreateKey, writeKey } from "../../sdk/run/keys.ts";

const KEY_A = Wallet.createRandom().privateKey;
const KEY_B = Wallet.createRandom().privateKey;

function thrown(f: () => unknown): Error {
  try {
    f();
  } catch (err) {
    return err as Error;
  }
  throw new Error("expected an error, got none");
}

describe("adversary: key files are never written through a symlink nor over an existing file", function () {
  let dir: string;
  let victim: string;
  const victimText = "the victim's own file: not a key\n";

  beforeEach(function () {
    dir = mkdtempSync(path.join(tmpdir(), "gpuchain-lows-keys-"));
    victim = path.join(dir, "victim.txt");
    writeFileSync(victim, victimText);
    chmodSync(victim, 0o644);
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const untouched = () => {
    expect(readFileSync(victim, "utf8")).to.equal(victimText);
    expect(statSync(victim).mode & 0o777).to.equal(0o644);
  };

  it("writeKey onto a symlink to another file: KeyFileError, the target keeps its content and permissions", function () {
    const key = path.join(dir, "keys", "owner.key");
    writeKey(path.join(dir, "keys", "other.key"), KEY_B); // makes the folder
    symlinkSync(victim, key);
    const err = thrown(() => writeKey(key, KEY_A));
    expect(err).to.be.instanceOf(KeyFileError);
    expect(err.message).to.match(/refusing to write a key to .*owner\.key: it is a symlink/);
    untouched();
    expect(lstatSync(key).isSymbolicLink()).to.equal(true);
  });

  it("writeKey onto a dangling symlink: KeyFileError, nothing is created where it points", function () {
    const key = path.join(dir, "owner.key");
    const target = path.join(dir, "planted-target.key");
    symlinkSync(target, key);
    expect(thrown(() => writeKey(key, KEY_A))).to.be.instanceOf(KeyFileError);
    expect(existsSync(target)).to.equal(false);
  });

  it("writeKey onto a symlink to a file holding that very key: still refused (creation never follows a link)", function () {
    const real = path.join(dir, "real.key");
    writeKey(real, KEY_A);
    const key = path.join(dir, "link.key");
    symlinkSync(real, key);
    expect(thrown(() => writeKey(key, KEY_A))).to.be.instanceOf(KeyFileError);
  });

  it("writeKey onto an existing file with other content: KeyFileError, the file is not overwritten", function () {
    const key = path.join(dir, "owner.key");
    writeKey(key, KEY_B);
    const err = thrown(() => writeKey(key, KEY_A));
    expect(err).to.be.instanceOf(KeyFileError);
    expect(err.message).to.match(/it is an existing file/);
    expect(readFileSync(key, "utf8").trim()).to.equal(KEY_B);
    const other = path.join(dir, "notes.txt");
    writeFileSync(other, "keep me");
    expect(thrown(() => writeKey(other, KEY_A))).to.be.instanceOf(KeyFileError);
    expect(readFileSync(other, "utf8")).to.equal("keep me");
  });

  it("writeKey: a new file is 0600 and holds the key; the same key again (a re-used run folder) is fine", function () {
    const key = path.join(dir, "run", "keys", "client.key");
    writeKey(key, KEY_A);
    expect(statSync(key).mode & 0o777).to.equal(0o600);
    expect(loadKey(key).privateKey).to.equal(KEY_A);
    writeKey(key, KEY_A);
    expect(loadKey(key).privateKey).to.equal(KEY_A);
  });

  it("loadOrCreateKey on a dangling symlink: KeyFileError, no key is created where it points", function () {
    const key = path.join(dir, "provider.key");
    const target = path.join(dir, "planted-target.key");
    symlinkSync(target, key);
    const err = thrown(() => loadOrCreateKey(key, true));
    expect(err).to.be.instanceOf(KeyFileError);
    expect(err.message).to.match(/symlink/);
    expect(existsSync(target)).to.equal(false);
  });

  it("gpuchain provide's key: created once (0600), then reused; a key readable by others is still refused", function () {
    const key = path.join(dir, "agent", "provider.key");
    const records: { msg: string; address?: string }[] = [];
    const logger = createLogger({ component: "agent", write: (l) => records.push(JSON.parse(l)) });
    const first = openProviderKey(key, logger)!;
    expect(statSync(key).mode & 0o777).to.equal(0o600);
    const second = openProviderKey(key, logger)!;
    expect(second.address).to.equal(first.address);
    expect(records.map((r) => r.msg)).to.deep.equal(["created provider key", "using provider key"]);
    expect(loadOrCreateKey(key, true)).to.include({ created: false });
    chmodSync(key, 0o644);
    expect(thrown(() => loadOrCreateKey(key, true))).to.be.instanceOf(KeyFileError);
  });
});
