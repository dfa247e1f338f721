/**
 * DNS rebinding (THREATS.md, "Outsider (a web page)"): a page from evil.example whose name is re-pointed at 127.0.0.1
 * reaches the dashboard server as its own origin and could read /api/config (the RPC URL, often with an API key, and
 * local paths). The real server, real HTTP requests: any Host that is not a loopback name with the server's own port
 * (or a host it was started to allow) gets a 403 with the reason; the loopback names still get their answer.
 */
import { expect } from "chai";
import { request } from "node:http";
import { connect } from "node:net";
import { rmSync } from "node:fs";
import path from "node:path";
import { startDashboardServer, type DashboardServer } from "../../dashboard/server/server.ts";
import { allowedHosts, checkHost } from "../../dashboard/server/routes.ts";
import { freePort } from "../../demo/chain.ts";
import { offlineDeployment } from "../dashboard/helpers.ts";

/** GET `path` from the server on 127.0.0.1, naming `host` in the Host header (what a rebound page sends). */
function get(port: number, urlPath: string, host: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port, path: urlPath, method: "GET", headers: { host } }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (c: string) => (body += c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on("error", reject);
    req.end();
  });
}

/** A raw request (node's own client always adds a Host): the status line's code and the whole answer. */
function raw(port: number, text: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1", () => socket.end(text));
    let answer = "";
    socket.setEncoding("utf8");
    socket.on("data", (c: string) => (answer += c));
    socket.on("error", reject);
    socket.on("close", () => resolve({ status: Number(/^HTTP\/1\.\d (\d{3})/.exec(answer)?.[1] ?? 0), body: answer }));
  });
}

describe("adversary: the dashboard server refuses requests naming another Host (DNS rebinding)", function () {
  this.timeout(300_000);
  const dir = path.join(".gpuchain", `lows-dash-host-${process.pid}`);
  const secretRpc = "http://127.0.0.1:1/v2/SECRET-API-KEY"; // nothing listens there: the chain is not needed
  let server: DashboardServer;
  let proxied: DashboardServer;

  before(async function () {
    const dead = `http://127.0.0.1:${await freePort(0)}`;
    const deploymentFile = offlineDeployment(dir);
    server = await startDashboardServer({ rpc: secretRpc, deploymentFile, coordinatorUrl: dead, collectorUrl: dead });
    proxied = await startDashboardServer({
      rpc: secretRpc,
      deploymentFile,
      coordinatorUrl: dead,
      collectorUrl: dead,
      allowedHosts: ["dash.example.org", "proxy.example.org:8443"],
    });
  });

  after(async function () {
    await server?.close();
    await proxied?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("Host: evil.example:PORT gets a 403 with the reason, and no config (the RPC URL) in it", async function () {
    for (const urlPath of ["/api/config", "/api/status", "/api/stream", "/"]) {
      const r = await get(server.port, urlPath, `evil.example:${server.port}`);
      expect(r.status, urlPath).to.equal(403);
      const body = JSON.parse(r.body) as { ok: boolean; reason: string };
      expect(body.ok).to.equal(false);
      expect(body.reason).to.match(/Host "evil\.example:\d+" is not a name of this dashboard.*DNS rebinding/);
      expect(r.body).not.to.include("SECRET-API-KEY");
    }
  });

  it("a loopback name on another port, a look-alike name and an empty Host are refused too", async function () {
    for (const host of [
      `localhost:${server.port + 1}`,
      `127.0.0.1:${server.port}.evil.example`,
      `localhost.evil.example:${server.port}`,
      "localhost",
    ]) {
      const r = await get(server.port, "/api/config", host);
      expect(r.status, JSON.stringify(host)).to.equal(403);
      expect(r.body).not.to.include("SECRET-API-KEY");
    }
    // HTTP/1.0 needs no Host; an empty one names nothing either.
    for (const text of [
      "GET /api/config HTTP/1.0\r\n\r\n",
      "GET /api/config HTTP/1.1\r\nHost:\r\nConnection: close\r\n\r\n",
    ]) {
      const r = await raw(server.port, text);
      expect(r.status, JSON.stringify(text)).to.equal(403);
      expect(r.body).to.include("no Host header");
      expect(r.body).not.to.include("SECRET-API-KEY");
    }
  });

  it("control: 127.0.0.1:PORT, localhost:PORT and [::1]:PORT (any case) get the config", async function () {
    for (const host of [
      `127.0.0.1:${server.port}`,
      `localhost:${server.port}`,
      `[::1]:${server.port}`,
      `LocalHost:${server.port}`,
    ]) {
      const r = await get(server.port, "/api/config", host);
      expect(r.status, host).to.equal(200);
      expect(JSON.parse(r.body).rpc).to.equal("http://127.0.0.1:1/v2/REDACTED"); // its key never leaves the server
    }
  });

  it("hosts the server was started to allow are answered; others still are not", async function () {
    expect((await get(proxied.port, "/api/status", `dash.example.org:${proxied.port}`)).status).to.equal(200);
    expect((await get(proxied.port, "/api/status", "proxy.example.org:8443")).status).to.equal(200);
    expect((await get(proxied.port, "/api/status", `proxy.example.org:${proxied.port}`)).status).to.equal(403);
    expect((await get(proxied.port, "/api/status", `evil.example:${proxied.port}`)).status).to.equal(403);
    expect((await get(proxied.port, "/api/status", `localhost:${proxied.port}`)).status).to.equal(200);
  });

  it("the rule itself: loopback names with the port, a specific listen address, bare allowed names take the port", function () {
    expect(allowedHosts(8700, "127.0.0.1")).to.deep.equal(["127.0.0.1:8700", "localhost:8700", "[::1]:8700"]);
    expect(allowedHosts(8700, "192.168.1.5")).to.include("192.168.1.5:8700");
    expect(allowedHosts(8700, "::1")).to.deep.equal(["127.0.0.1:8700", "localhost:8700", "[::1]:8700"]);
    expect(allowedHosts(8700, "0.0.0.0")).to.deep.equal(["127.0.0.1:8700", "localhost:8700", "[::1]:8700"]);
    expect(allowedHosts(8700, undefined, ["Dash.Example", "fe80::1", "x.example:1"])).to.include.members([
      "dash.example:8700",
      "[fe80::1]:8700",
      "x.example:1",
    ]);
    const allowed = allowedHosts(8700, "127.0.0.1");
    expect(checkHost("LOCALHOST:8700", allowed)).to.equal(undefined);
    expect(checkHost(undefined, allowed)).to.include({ kind: "error", status: 403 });
    expect(checkHost("evil.example:8700", allowed)).to.include({ kind: "error", status: 403 });
  });
});
