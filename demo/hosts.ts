/**
 * Separate network hosts on one machine (`npm start -- --hosts`, Linux, as root): one network namespace per part,
 * linked by veth pairs to a bridge in a hub namespace of the run's own, on a private /24 that only these links use.
 * The orchestrator (in the root namespace) reaches them over one more veth pair. Every namespace is named with
 * the run's prefix (`gpc-<pid>-`), and all of them are deleted at the end — also on failure, Ctrl-C or exit
 * (deleting a namespace deletes its veth ends, and with them their peers). A link can be cut and restored (a
 * host unreachable while its processes keep running). Hosts share the filesystem: each gets its own data folder.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync } from "node:fs";
import path from "node:path";

export type Host = { name: string; ns: string; ip: string; dataDir: string };

const ip = (...args: string[]) => execFileSync("ip", args, { stdio: ["ignore", "pipe", "pipe"] }).toString();

/** Why namespaces cannot be made here, or undefined when they can (root, iproute2, netns support). */
export function hostsUnavailable(): string | undefined {
  if (process.platform !== "linux") return "--hosts needs Linux network namespaces";
  if (process.getuid?.() !== 0) return "--hosts needs root (ip netns add)";
  const probe = `gpc-${process.pid}-probe`;
  try {
    ip("netns", "add", probe);
    ip("netns", "del", probe);
    return undefined;
  } catch (err) {
    return `--hosts cannot create network namespaces here: ${(err as Error).message.split("\n")[0]}`;
  }
}

/** A private /24 for this run (10.213.x.0/24), chosen from the pid so two runs on one machine differ. */
export function subnetFor(pid: number): string {
  return `10.213.${pid % 250}`;
}

export class HostNet {
  readonly prefix: string;
  readonly subnet: string;
  readonly hosts = new Map<string, Host>();
  /** The orchestrator's address on the run's network (root namespace). */
  readonly rootIp: string;
  private readonly hub: string;
  private readonly tag: string;
  private readonly links = new Map<string, string>();
  private made: string[] = [];
  private destroyed = false;
  private readonly onExit = () => this.destroy();

  constructor(names: string[], dataRoot: string, pid = process.pid) {
    if (names.length > 200) throw new RangeError("at most 200 hosts on one /24");
    this.prefix = `gpc-${pid}-`;
    this.tag = `g${pid}`;
    this.subnet = subnetFor(pid);
    this.hub = `${this.prefix}hub`;
    this.rootIp = `${this.subnet}.1`;
    process.once("exit", this.onExit);
    try {
      this.addNs(this.hub);
      ip("-n", this.hub, "link", "add", "br0", "type", "bridge");
      ip("-n", this.hub, "link", "set", "br0", "up");
      this.attach(undefined, `${this.tag}r`, this.rootIp);
      names.forEach((name, i) => {
        const ns = `${this.prefix}${name}`;
        this.addNs(ns);
        const hostIp = `${this.subnet}.${10 + i}`;
        this.attach(ns, `${this.tag}n${i}`, hostIp);
        const dataDir = path.join(dataRoot, name);
        mkdirSync(dataDir, { recursive: true });
        this.hosts.set(name, { name, ns, ip: hostIp, dataDir });
      });
    } catch (err) {
      this.destroy();
      throw err;
    }
  }

  private addNs(ns: string): void {
    ip("netns", "add", ns);
    this.made.push(ns);
    ip("-n", ns, "link", "set", "lo", "up");
  }

  /** A veth pair: one end in `ns` (the root namespace when undefined) with `addr`, the other on the hub bridge. */
  private attach(ns: string | undefined, base: string, addr: string): void {
    const [end, peer] = [`${base}a`, `${base}b`];
    ip("link", "add", end, "type", "veth", "peer", "name", peer);
    ip("link", "set", peer, "netns", this.hub);
    ip("-n", this.hub, "link", "set", peer, "master", "br0", "up");
    const at = ns ? ["-n", ns] : [];
    if (ns) ip("link", "set", end, "netns", ns);
    ip(...at, "addr", "add", `${addr}/24`, "dev", end);
    ip(...at, "link", "set", end, "up");
    if (ns) this.links.set(ns, end);
  }

  host(name: string): Host {
    const h = this.hosts.get(name);
    if (!h) throw new Error(`no host ${name} in this run`);
    return h;
  }

  /** The command prefix that runs a program on host `name` (same pid: `ip netns exec` execs the program). */
  wrapper(name: string): string[] {
    return ["ip", "netns", "exec", this.host(name).ns];
  }

  /** Cuts host `name` off the network (its processes keep running). */
  cut(name: string): void {
    const { ns } = this.host(name);
    ip("-n", ns, "link", "set", this.links.get(ns)!, "down");
  }

  restore(name: string): void {
    const { ns } = this.host(name);
    ip("-n", ns, "link", "set", this.links.get(ns)!, "up");
  }

  /** Namespaces of this run that still exist (for tests and the final check). */
  leftovers(): string[] {
    return ip("netns", "list")
      .split("\n")
      .map((l) => l.split(" ")[0])
      .filter((n) => n.startsWith(this.prefix));
  }

  /** Deletes every namespace (and so every link) this run made; safe to call twice. */
  destroy(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    process.off("exit", this.onExit);
    for (const ns of this.made.reverse()) {
      try {
        ip("netns", "del", ns);
      } catch {
        // already gone
      }
    }
    try {
      ip("link", "del", `${this.tag}ra`);
    } catch {
      // deleted with its peer in the hub
    }
  }
}

/** The parts of `npm start` and the host each runs on (chain and keepers share one: the operator's). */
export const SCENARIO_HOSTS = ["chain", "store", "verifier1", "verifier2", "verifier3", "mallory", "alice", "bob"];

/** Makes the scenario's hosts under `runDir/hosts/` and says where each part runs. */
export function scenarioHosts(runDir: string, note: (l: string) => void): HostNet {
  const why = hostsUnavailable();
  if (why) throw new Error(why);
  const net = new HostNet(SCENARIO_HOSTS, path.join(runDir, "hosts"));
  note(
    `separate hosts on one machine: ${net.hosts.size} network namespaces on ${net.subnet}.0/24 (prefix ${net.prefix})`,
  );
  for (const h of net.hosts.values()) {
    const parts = h.name === "chain" ? "chain + keepers (coordinator, collector, finalizer, reserves)" : h.name;
    note(`  host ${h.ns} ${h.ip}: ${parts} (data ${h.dataDir})`);
  }
  return net;
}
