// Two runs under one `.gpuchain/`: a run that starts prunes the checkpoint stores of runs that ended, never of one
// still running beside it (before the live mark, a bench part deleted a running e2e test's store).
import { expect } from "chai";
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { isLive, markLive, pruneEndedStores } from "../../demo/runDirs.ts";

describe("demo: runs beside each other keep each other's stores", function () {
  let runs: string;
  beforeEach(() => (runs = mkdtempSync(path.join(tmpdir(), "gpuchain-runs-"))));
  afterEach(() => rmSync(runs, { recursive: true, force: true }));

  /** A run folder with a recording and a store. */
  const run = (name: string) => {
    const dir = path.join(runs, name);
    mkdirSync(path.join(dir, "store"), { recursive: true });
    writeFileSync(path.join(dir, "recording.jsonl"), "");
    writeFileSync(path.join(dir, "store", "blob"), "bytes");
    return dir;
  };
  const hasStore = (dir: string) => existsSync(path.join(dir, "store", "blob"));

  it("prunes ended runs' stores (no mark, or a mark of a process that exited), not a live run's", function () {
    const live = run("live");
    const unmark = markLive(live);
    const ended = run("ended");
    const crashed = run("crashed");
    const exited = spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"]).stdout.toString();
    writeFileSync(path.join(crashed, "running.pid"), exited);
    const current = run("current");

    expect([isLive(live), isLive(ended), isLive(crashed)]).to.deep.equal([true, false, false]);
    pruneEndedStores(runs, current);
    expect([hasStore(live), hasStore(ended), hasStore(crashed), hasStore(current)]).to.deep.equal([
      true,
      false,
      false,
      true,
    ]);

    unmark(); // the live run ends: the next run's start prunes it
    expect(isLive(live)).to.equal(false);
    pruneEndedStores(runs, current);
    expect(hasStore(live)).to.equal(false);
    expect(existsSync(path.join(live, "recording.jsonl")), "recordings stay").to.equal(true);
  });

  it("a mark that is not a process id counts as ended; folders that are not runs are left alone", function () {
    const odd = run("odd");
    writeFileSync(path.join(odd, "running.pid"), "not a pid");
    const other = path.join(runs, "notes");
    mkdirSync(path.join(other, "store"), { recursive: true });
    pruneEndedStores(runs, path.join(runs, "current"));
    expect(hasStore(odd)).to.equal(false);
    expect(existsSync(path.join(other, "store"))).to.equal(true);
  });
});
