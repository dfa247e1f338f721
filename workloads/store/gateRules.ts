// What the content gate (gate.ts) lets through, decided from the request line and headers alone. Every blob is
// named by the sha256 of its bytes, so a correct write never needs to replace anything: the gate admits reads,
// and writes of content-named blobs whose bytes it hashes first (a whole PUT, or a multipart upload whose parts it
// keeps a copy of and hashes in order at completion). Deletes, copies, ACL/tagging/bucket calls and listings of
// uploads in progress are refused: none is needed to store a blob, and each could put other bytes under a name or
// take a blob away (an upload's id stays the uploader's secret).

export type GateDecision =
  | { kind: "read" }
  /** A PUT whose body must hash (sha256, hex) to `name` before it is passed on. */
  | { kind: "put"; name: string }
  /** CreateMultipartUpload of a content-named blob. */
  | { kind: "create-upload" }
  /** UploadPart: passed on, and a copy kept for the completion's hash. */
  | { kind: "part"; uploadId: string; partNumber: number }
  /** CompleteMultipartUpload: the listed parts, in order, must hash to `name`. */
  | { kind: "complete"; uploadId: string; name: string }
  | { kind: "abort"; uploadId: string }
  | { kind: "refuse"; status: number; code: string; message: string };

/** Upload ids are used as folder names for the parts' copies: nothing but these characters. */
const UPLOAD_ID = /^[0-9A-Za-z_-]{8,200}$/;

/** `…/<64 hex>.blob`: the names S3Backend gives blobs (prefix/name.blob). */
const CONTENT_KEY = /(?:^|\/)([0-9a-f]{64})\.blob$/;

const refuse = (status: number, code: string, message: string): GateDecision => ({
  kind: "refuse",
  status,
  code,
  message,
});

/** The object key of a path-style request (`/bucket/key…`), decoded; null for the bucket itself. */
function keyOf(pathname: string): string | null {
  const rest = pathname.replace(/^\/+/, "");
  const slash = rest.indexOf("/");
  if (slash < 0 || slash === rest.length - 1) return null;
  try {
    return decodeURIComponent(rest.slice(slash + 1));
  } catch {
    return null;
  }
}

export function gateDecision(method: string, rawUrl: string, headers: Record<string, unknown>): GateDecision {
  const url = new URL(rawUrl, "http://gate");
  const q = url.searchParams;
  if (method === "GET" || method === "HEAD") {
    if (q.has("uploads") || q.has("uploadId"))
      return refuse(403, "AccessDenied", "the content gate does not list uploads in progress or their parts");
    return { kind: "read" };
  }
  const key = keyOf(url.pathname);
  const m = key === null ? null : CONTENT_KEY.exec(key);
  if (!m)
    return refuse(403, "AccessDenied", `only content-named blobs (<sha256 hex>.blob) are written, not ${key ?? "/"}`);
  const name = m[1];
  const uploadId = q.get("uploadId");
  if (uploadId !== null && !UPLOAD_ID.test(uploadId)) return refuse(400, "InvalidArgument", "malformed uploadId");
  if (headers["x-amz-copy-source"] !== undefined)
    return refuse(403, "AccessDenied", "the content gate copies nothing: a copy would put other bytes under a name");
  const others = (allowed: string[]) => [...q.keys()].filter((k) => k !== "x-id" && !allowed.includes(k));
  const only = (allowed: string[]) => others(allowed).length === 0;
  if (method === "PUT" && only([])) return { kind: "put", name };
  if (method === "PUT" && uploadId !== null && only(["uploadId", "partNumber"])) {
    const partNumber = Number(q.get("partNumber"));
    if (!Number.isInteger(partNumber) || partNumber < 1 || partNumber > 10_000)
      return refuse(400, "InvalidArgument", `partNumber must be 1 … 10000, not ${q.get("partNumber")}`);
    return { kind: "part", uploadId, partNumber };
  }
  if (method === "POST" && q.has("uploads") && only(["uploads"])) return { kind: "create-upload" };
  if (method === "POST" && uploadId !== null && only(["uploadId"])) return { kind: "complete", uploadId, name };
  if (method === "DELETE" && uploadId !== null && only(["uploadId"])) return { kind: "abort", uploadId };
  if (method === "DELETE")
    return refuse(
      403,
      "AccessDenied",
      "the content gate deletes nothing: blobs stay until the store's operator prunes them",
    );
  const query = others([]).join("&");
  return refuse(403, "AccessDenied", `the content gate does not take ${method}${query ? ` ?${query}` : ""}`);
}

/**
 * The parts a CompleteMultipartUpload body lists, in its order, with their ETags (unquoted, lower case); null when
 * it lists none or a part lacks either field.
 */
export function listedParts(xml: string): { partNumber: number; etag: string }[] | null {
  const parts = [...xml.matchAll(/<Part>([\s\S]*?)<\/Part>/g)].map((m) => {
    const n = /<PartNumber>\s*(\d{1,5})\s*<\/PartNumber>/.exec(m[1]);
    const e = /<ETag>\s*(?:"|&quot;)?([0-9a-fA-F]{32})(?:"|&quot;)?\s*<\/ETag>/.exec(m[1]);
    return n && e ? { partNumber: Number(n[1]), etag: e[1].toLowerCase() } : null;
  });
  if (parts.length === 0 || parts.some((p) => p === null)) return null;
  return parts as { partNumber: number; etag: string }[];
}
