// For bench/system.ts: ProcessGroup starts the children its `niceOf` names under nice(1), the others at the group's
// own priority — real children reporting their own niceness (os.getPriority) and that of a thread they start.
import { expect } from "chai";
import os from "node:os";
import { ProcessGroup } from "../../demo/processes.ts";

const REPORT = [
  "-e",
  "const { Worker } = require('node:worker_threads');" +
    "const w = new Worker(\"require('node:worker_threads').parentPort" +
    ".postMessage(require('node:os').getPriority())\"," +
    " { eval: true });" +
    "w.on('message', (t) => { console.log(JSON.stringify({ main: require('node:os').getPriority(), thread: t }));" +
    " w.terminate(); });",
];

async function niceness(group: ProcessGroup, lines: Map<string, string>, name: string) {
  const child = group.start(name, REPORT);
  await new Promise((resolve) => child.once("exit", resolve));
  return JSON.parse(lines.get(name)!) as { main: number; thread: number };
}

describe("demo: ProcessGroup's niceness for background children", function () {
  this.timeout(30_000);

  it("starts the children it names niced (every thread of theirs), the others at its own priority", async function () {
    const lines = new Map<string, string>();
    const group = new ProcessGroup(
      (name, line) => void lines.set(name, line),
      (name) => (name === "verifier1" ? 7 : undefined),
    );
    const own = os.getPriority();
    expect(await niceness(group, lines, "verifier1")).to.deep.equal({
      main: Math.min(19, own + 7),
      thread: Math.min(19, own + 7),
    });
    expect(await niceness(group, lines, "alice")).to.deep.equal({ main: own, thread: own });
    await group.stopAll(1_000);
  });
});

describe("demo: ProcessGroup tells its owner when a child exits (npm start --keep)", function () {
  this.timeout(30_000);

  it("passes the exit code of a child that ends, and the signal of one that is killed", async function () {
    const group = new ProcessGroup(() => {});
    const exits: [string, number | null, string | null][] = [];
    group.onExit = (name, code, signal) => void exits.push([name, code, signal]);
    const ends = group.start("ends", ["-e", "process.exit(3)"]);
    await new Promise((r) => ends.once("exit", r));
    group.start("hangs", ["-e", "setInterval(() => {}, 1000)"]);
    await group.kill("hangs", "SIGKILL");
    expect(exits).to.deep.equal([
      ["ends", 3, null],
      ["hangs", null, "SIGKILL"],
    ]);
    expect(group.size).to.equal(0);
  });
});
