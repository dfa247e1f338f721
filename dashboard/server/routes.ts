/**
 * What a request to the dashboard server asks for, or why it is refused. Pure: method + URL → decision, so every
 * rule (only GET/HEAD, but POST /api/rpc: the relay of chain reads; no unknown parameters, safe names and paths)
 * is tested without a socket; the same for the Host header (`checkHost`).
 */
export type Decision =
  | { kind: "error"; status: number; reason: string }
  | { kind: "config" }
  | { kind: "rpc" }
  | { kind: "status" }
  | { kind: "stream" }
  | { kind: "recording"; name: string }
  | { kind: "static"; path: string };

const RECORDING_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,120}\.jsonl$/;
const STATIC_PATH = /^\/[A-Za-z0-9._/-]*$/;
/** Query parameters the app itself puts in its URL (the view); anything else is a mistake worth a 400. */
const VIEW_PARAMS = new Set(["page", "run", "t", "job", "provider"]);

/** The relay of chain reads for a browser whose RPC URL carries a key (dashboard/server/publicConfig.ts). */
export const RPC_RELAY = "/api/rpc";

export function decideRequest(method: string, rawUrl: string, hasRecording: (name: string) => boolean): Decision {
  if (method === "POST" && rawUrl === RPC_RELAY) return { kind: "rpc" };
  if (method !== "GET" && method !== "HEAD") {
    return {
      kind: "error",
      status: 405,
      reason: `${method} is not allowed: the dashboard is read-only (GET and HEAD only)`,
    };
  }
  let url: URL;
  try {
    url = new URL(rawUrl, "http://dashboard.invalid");
  } catch {
    return { kind: "error", status: 400, reason: "malformed URL" };
  }
  const p = url.pathname;
  const params = [...url.searchParams.keys()];
  if (p.startsWith("/api/")) {
    if (params.length)
      return { kind: "error", status: 400, reason: `${p} takes no query parameters (got ${params.join(", ")})` };
    if (p === "/api/config") return { kind: "config" };
    if (p === "/api/status") return { kind: "status" };
    if (p === "/api/stream") return { kind: "stream" };
    if (p.startsWith("/api/recordings/")) {
      let name: string;
      try {
        name = decodeURIComponent(p.slice("/api/recordings/".length));
      } catch {
        return { kind: "error", status: 400, reason: "malformed recording name" };
      }
      if (!RECORDING_NAME.test(name))
        return {
          kind: "error",
          status: 400,
          reason: `recording name must look like NAME.jsonl (letters, digits, . _ -), got "${name.slice(0, 80)}"`,
        };
      if (!hasRecording(name)) return { kind: "error", status: 404, reason: `no recording named ${name}` };
      return { kind: "recording", name };
    }
    return { kind: "error", status: 404, reason: `no API route ${p}` };
  }
  const unknown = params.filter((k) => !VIEW_PARAMS.has(k));
  if (unknown.length)
    return {
      kind: "error",
      status: 400,
      reason: `unknown query parameter ${unknown.join(", ")} (the view takes ${[...VIEW_PARAMS].join(", ")})`,
    };
  let decoded: string;
  try {
    decoded = decodeURIComponent(p);
  } catch {
    return { kind: "error", status: 400, reason: "malformed path" };
  }
  if (!STATIC_PATH.test(decoded) || decoded.split("/").some((s) => s === ".." || s === ".")) {
    return { kind: "error", status: 400, reason: "bad path: letters, digits, . _ - and / only, no . or .. segments" };
  }
  return { kind: "static", path: decoded === "/" ? "index.html" : decoded.slice(1) };
}

/** Host names that always mean this machine (with the server's own port). */
const LOOPBACK_HOSTS = ["127.0.0.1", "localhost", "[::1]"];
/** Listen addresses that mean "every interface" (the server adds its interfaces' own addresses instead). */
export const WILDCARDS = new Set(["0.0.0.0", "::", "[::]", ""]);

/**
 * The Host values (`name:port`, lower case) a request may carry: the loopback names with the server's own port,
 * the address it listens on when that is a specific one (not 0.0.0.0 or ::), and the `allowed` ones (`name:port`,
 * or a bare name or address, which then means the server's own port).
 */
export function allowedHosts(port: number, listenHost: string | undefined, allowed: readonly string[] = []): string[] {
  const bracket = (h: string) => (h.includes(":") && !h.startsWith("[") ? `[${h}]` : h);
  const withPort = (h: string) => (/^(\[[^\]]+\]|[^:[\]]+):\d+$/.test(h) ? h : `${bracket(h)}:${port}`);
  const own = listenHost && !WILDCARDS.has(listenHost) ? [listenHost] : [];
  return [...new Set([...LOOPBACK_HOSTS, ...own, ...allowed].map((h) => withPort(h).toLowerCase()))];
}

/**
 * DNS rebinding: a page from evil.example whose name is re-pointed at 127.0.0.1 reaches this server as its own
 * origin, so the browser lets it read /api/config (the RPC URL, which often carries an API key, and local paths).
 * Its requests still carry `Host: evil.example:PORT`, so any Host that is not in `allowed` (allowedHosts) is
 * refused with a 403 and the reason, before anything else is looked at.
 */
export function checkHost(host: string | undefined, allowed: readonly string[]): Decision | undefined {
  if (host === undefined || host === "") {
    return { kind: "error", status: 403, reason: "no Host header: the dashboard answers only requests naming it" };
  }
  if (allowed.includes(host.toLowerCase())) return undefined;
  return {
    kind: "error",
    status: 403,
    reason:
      `Host "${host.slice(0, 100)}" is not a name of this dashboard (it answers 127.0.0.1, localhost and [::1] ` +
      "with its own port, and the hosts it was started to allow): a page reaching it under another name " +
      "(DNS rebinding) is refused",
  };
}
