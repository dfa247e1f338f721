/**
 * What a request to the dashboard server asks for, or why it is refused. Pure: method + URL → decision, so every
 * rule (only GET/HEAD, no unknown parameters, safe names and paths) is tested without a socket.
 */
export type Decision =
  | { kind: "error"; status: number; reason: string }
  | { kind: "config" }
  | { kind: "status" }
  | { kind: "stream" }
  | { kind: "recording"; name: string }
  | { kind: "static"; path: string };

const RECORDING_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,120}\.jsonl$/;
const STATIC_PATH = /^\/[A-Za-z0-9._/-]*$/;
/** Query parameters the app itself puts in its URL (the view); anything else is a mistake worth a 400. */
const VIEW_PARAMS = new Set(["page", "run", "t", "job", "provider"]);

export function decideRequest(method: string, rawUrl: string, hasRecording: (name: string) => boolean): Decision {
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
