// Portable arithmetic: the graph rule, and the same state hashes on several CPU kernel families
// (native, and emulated by qemu-user: Nehalem = SSE4.2 without FMA, Haswell = AVX2 + FMA).
import { expect } from "chai";
import { execFile, spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { promisify } from "node:util";
import { listTemplates } from "../../workloads/index.ts";
import { GraphBuilder, attrGraph, attrInt } from "../../workloads/onnx/builder.ts";
import { assertPortable, nonPortableOps } from "../../workloads/onnx/portableOps.ts";
import { referenceHashes } from "../../workloads/referenceHashes.ts";

const run = promisify(execFile);
const NODE = "node_modules/node/bin/node"; // the real ELF binary (node_modules/.bin/node is a link to it)
const STEPS = 20;
const EVERY = 5;

/** Reference hashes committed in docs/WORKLOADS.md: rows `| template | step | 0x… |`. */
function committedHashes(): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  const doc = readFileSync("docs/WORKLOADS.md", "utf8");
  for (const m of doc.matchAll(/^\| `([\w-]+)` \| (\d+) \| `(0x[0-9a-f]{64})` \|/gm)) (out[m[1]] ??= []).push(m[3]);
  return out;
}

function qemuAvailable(): boolean {
  return spawnSync("qemu-x86_64", ["--version"], { stdio: "ignore" }).status === 0;
}

describe("workloads: portable arithmetic", function () {
  it("every template graph uses only portable ops (Scan bodies included)", function () {
    for (const t of listTemplates()) {
      for (const [kind, bytes] of Object.entries(t.graphs)) {
        expect(nonPortableOps(bytes), `${t.descriptor.name} ${kind}`).to.deep.equal([]);
      }
    }
  });

  it("the rule rejects kernel-dependent ops, also inside a Scan body, naming them", function () {
    const g = new GraphBuilder("bad");
    const [a, b] = [g.input("a", [2, 2]), g.input("b", [2, 2])];
    g.output("y", g.op("Softmax", [g.op("MatMul", [a, b])], [attrInt("axis", -1)]), [2, 2]);
    expect(() => assertPortable("test graph", g.encode())).to.throw(/test graph uses ops outside .*MatMul, Softmax/);

    const body = new GraphBuilder("body");
    const [s, e] = [body.input("s", [2]), body.input("e", [2])];
    body.output("o", body.op("Add", [s, body.op("Exp", [e])]), [2]);
    const outer = new GraphBuilder("scan");
    const [acc, xs] = [outer.input("acc", [2]), outer.input("xs", ["n", 2])];
    outer.opMulti("Scan", [acc, xs], [attrGraph("body", body.graph()), attrInt("num_scan_inputs", 1)], ["sum"]);
    outer.output("sum", "sum", [2]);
    expect(nonPortableOps(outer.encode())).to.deep.equal(["Exp"]);
  });

  it("docs/WORKLOADS.md commits reference hashes for every template", function () {
    const ref = committedHashes();
    for (const t of listTemplates()) expect(ref[t.descriptor.name], t.descriptor.name).to.have.length(STEPS / EVERY);
  });

  it(`natively, ${STEPS} steps of every template give the committed hashes (after every ${EVERY} steps)`, async function () {
    expect(await referenceHashes(STEPS, EVERY)).to.deep.equal(committedHashes());
  });

  describe("under CPU emulation (qemu-user)", function () {
    const CPUS = ["Nehalem", "Haswell"];
    const runs = new Map<string, Promise<string>>();
    before(function () {
      if (!qemuAvailable()) return;
      // Both families at once: emulation is 5–10× slower than native and each run uses one core.
      for (const cpu of CPUS) {
        const args = ["-cpu", cpu, NODE, "workloads/referenceHashes.ts", String(STEPS), String(EVERY)];
        const p = run("qemu-x86_64", args, { timeout: 240_000 }).then((r) => r.stdout);
        p.catch(() => {}); // awaited (and reported) by its test
        runs.set(cpu, p);
      }
    });

    for (const cpu of CPUS) {
      it(`-cpu ${cpu}: every template gives the committed hashes`, async function () {
        if (!runs.has(cpu)) {
          const msg = "qemu-x86_64 not found: install Debian's qemu-user (apt-get install -y qemu-user)";
          if (process.env.CI === "true") throw new Error(msg);
          console.log(`      skipped: ${msg}`);
          this.skip();
        }
        expect(JSON.parse(await runs.get(cpu)!), `${cpu} hashes`).to.deep.equal(committedHashes());
      });
    }
  });
});
