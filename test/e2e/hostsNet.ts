/**
 * demo/hosts.ts on this machine: namespaces linked on a private /24 reach each other only over the run's links,
 * a cut link makes a host unreachable while its process keeps running, and nothing of the run is left behind.
 * Skipped, saying why, where namespaces cannot be made (not root, not Linux).
 */
import { expect } from "chai";
import { spawn, execFileSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { HostNet, hostsUnavailable } from "../../demo/hosts.ts";

const SERVER =
  "require('node:http').createServer((q, s) => s.end('hi from ' + process.argv[1])).listen(8080, process.argv[2], () => console.log('up'))";

function run(wrapper: string[], code: string, ...args: string[]): string {
  return execFileSync(
    wrapper[0] ?? process.execPath,
    [...wrapper.slice(1), ...(wrapper.length ? [process.execPath] : []), "-e", code, ...args],
    {
      timeout: 20_000,
    },
  )
    .toString()
    .trim();
}

const FETCH =
  "fetch(process.argv[1], { signal: AbortSignal.timeout(3000) }).then(r => r.text()).then(console.log, () => console.log('unreachable'))";

describe("demo: separate hosts on one machine (network namespaces)", function () {
  const why = hostsUnavailable();
  let net: HostNet | undefined;
  let server: ChildProcess | undefined;
  let dir = "";
  before(function () {
    if (why) {
      console.log(`      skipped: ${why}`);
      this.skip();
    }
    dir = mkdtempSync(path.join(tmpdir(), "gpuchain-hosts-"));
  });
  after(function () {
    server?.kill("SIGKILL");
    net?.destroy();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("links hosts over the run's /24 only, survives a cut link, and removes every namespace at the end", async function () {
    net = new HostNet(["store", "alice", "bob"], dir);
    const store = net.host("store");
    expect(net.leftovers().sort()).to.deep.equal([
      `${net.prefix}alice`,
      `${net.prefix}bob`,
      `${net.prefix}hub`,
      `${net.prefix}store`,
    ]);
    const w = net.wrapper("store");
    server = spawn(w[0], [...w.slice(1), process.execPath, "-e", SERVER, "store", store.ip], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    await new Promise<void>((ok) => server!.stdout!.once("data", () => ok()));
    const url = `http://${store.ip}:8080/`;
    expect(run(net.wrapper("alice"), FETCH, url)).to.equal("hi from store");
    expect(run([], FETCH, url)).to.equal("hi from store"); // the orchestrator, over the root link
    // The store's own loopback is not another host's: alice cannot reach it through 127.0.0.1.
    expect(run(net.wrapper("alice"), FETCH, "http://127.0.0.1:8080/")).to.equal("unreachable");
    net.cut("store");
    expect(run(net.wrapper("bob"), FETCH, url)).to.equal("unreachable");
    expect(server.exitCode).to.equal(null); // still running, only cut off
    net.restore("store");
    expect(run(net.wrapper("bob"), FETCH, url)).to.equal("hi from store");
    server.kill("SIGKILL");
    net.destroy();
    expect(net.leftovers()).to.deep.equal([]);
    expect(() => execFileSync("ip", ["link", "show", `g${process.pid}ra`], { stdio: "ignore" })).to.throw();
  });
});
