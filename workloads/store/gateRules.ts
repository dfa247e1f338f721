// What the content gate (gate.ts) lets through, decided from the request line and headers alone. Every blob is
// named by the sha256 of its bytes, so a correct write never needs to replace anything: the gate admits reads,
// and writes of content-named blobs whose bytes it hashes first (a whole PUT, or a multipart upload whose parts it
// keeps a copy of and hashes in order at completion). Deletes, copies, ACL/tagging/bucket calls and listings of
// uploads in progress are refused: none is needed to store a blob, and each could put other bytes under a name or
// take a blob away (an upload's id stays the uploader's secret). A listing of uploads in progress is answered by the
// gate itself with an empty list: standard clients (minio's) ask for it before a multipart write.
//
// The gate stores bytes, not requests: what reaches the server behind with a write is the checked body and the few
// headers a content-named blob needs (writeHeaders), never the client's metadata, encoding, expiry, storage class
// or redirect, which s3rver keeps and returns with every read (a 16 kB x-amz-meta-* header on correct bytes made
// every later read, existence check and re-put of the name fail at the gate's own client).
import type { IncomingHttpHeaders, OutgoingHttpHeaders } from "node:http";

export type GateDecision =
  | { kind: "read" }
  /** A PUT whose body must hash (sha256, hex) to `name` before it is passed on; `path` is `bucket/key`. */
  | { kind: "put"; name: string; path: string }
  /** CreateMultipartUpload of a content-named blob (the gate binds the upload's id to `path`). */
  | { kind: "create-upload"; path: string }
  /** UploadPart: passed on, and a copy kept for the completion's hash. */
  | { kind: "part"; uploadId: string; partNumber: number; path: string }
  /** CompleteMultipartUpload: the listed parts, in order, must hash to `name`. */
  | { kind: "complete"; uploadId: string; name: string; path: string }
  | { kind: "abort"; uploadId: string }
  /** ListMultipartUploads on a bucket: answered by the gate, empty (ids stay their uploaders' secret). */
  | { kind: "list-uploads"; bucket: string; prefix: string }
  | { kind: "refuse"; status: number; code: string; message: string };

/** Upload ids are used as folder names for the parts' copies: nothing but these characters. */
export const UPLOAD_ID = /^[0-9A-Za-z_-]{8,200}$/;

/**
 * A write's request path, as sent (not decoded, not normalised): `/bucket/prefix…/<64 hex>.blob`, the names
 * S3Backend gives blobs, in plain characters only. The gate and s3rver must read the same key from it: s3rver
 * decodes `%2F` and joins `..` segments into a file path (out of its folder), `\` and `%2e` are segments to the
 * WHATWG URL parser but not to s3rver; no segment may name one of s3rver's own files (`<name>._S3rver_object`
 * made a folder would squat a blob before it is written).
 */
const WRITE_PATH = /^\/([a-z0-9][a-z0-9.-]{0,62})\/((?:[A-Za-z0-9_-][A-Za-z0-9._-]*\/)*([0-9a-f]{64})\.blob)$/;
/**
 * A write's raw query: plain names and values (no encodings to decode differently), each name once, a handful
 * at most: s3rver (koa's querystring) reads only the first 1000 parameters and makes an array of a repeated one,
 * so `x-id&…×1000&uploadId=…&partNumber=1` was an upload part to the gate and a plain PUT to s3rver.
 */
const WRITE_QUERY = /^[A-Za-z0-9=&_.-]{0,400}$/;

const refuse = (status: number, code: string, message: string): GateDecision => ({
  kind: "refuse",
  status,
  code,
  message,
});

export function gateDecision(method: string, rawUrl: string, headers: Record<string, unknown>): GateDecision {
  const url = new URL(rawUrl, "http://gate");
  const q = url.searchParams;
  if (method === "GET" || method === "HEAD") {
    const bucket = /^\/([a-z0-9][a-z0-9.-]{0,62})\/?$/.exec(url.pathname)?.[1];
    if (method === "GET" && bucket && q.has("uploads") && !q.has("uploadId"))
      return { kind: "list-uploads", bucket, prefix: q.get("prefix") ?? "" };
    if (q.has("uploads") || q.has("uploadId"))
      return refuse(403, "AccessDenied", "the content gate does not list uploads in progress or their parts");
    return { kind: "read" };
  }
  const [rawPath, ...rawQuery] = rawUrl.split("?");
  const m = WRITE_PATH.exec(rawPath);
  // S3's own bound on a key, 1024 bytes, also keeps s3rver's file path under PATH_MAX: a deeper key let s3rver
  // make the folders and then fail to open the file, an error it does not catch (the whole process went down).
  if (!m || /_S3rver_/i.test(m[2]) || m[2].length > 1024)
    return refuse(403, "AccessDenied", `only content-named blobs (<sha256 hex>.blob) are written, not ${rawPath}`);
  const names = [...q.keys()];
  if (!WRITE_QUERY.test(rawQuery.join("?")) || names.length > 4 || new Set(names).size !== names.length)
    return refuse(400, "InvalidArgument", "a write's query is a few plain parameters, each once");
  const [, bucket, key, name] = m;
  const path = `${bucket}/${key}`;
  const uploadId = q.get("uploadId");
  if (uploadId !== null && !UPLOAD_ID.test(uploadId)) return refuse(400, "InvalidArgument", "malformed uploadId");
  if (headers["x-amz-copy-source"] !== undefined)
    return refuse(403, "AccessDenied", "the content gate copies nothing: a copy would put other bytes under a name");
  const others = (allowed: string[]) => [...q.keys()].filter((k) => k !== "x-id" && !allowed.includes(k));
  const only = (allowed: string[]) => others(allowed).length === 0;
  if (method === "PUT" && only([])) return { kind: "put", name, path };
  if (method === "PUT" && uploadId !== null && only(["uploadId", "partNumber"])) {
    // Written as s3rver names the part's file (the text as sent): `01` was part 1 to the gate, file "01" to
    // s3rver, while its completion reads file "1".
    const partNumber = Number(q.get("partNumber"));
    if (!/^[1-9][0-9]{0,4}$/.test(q.get("partNumber") ?? "") || partNumber > 10_000)
      return refuse(400, "InvalidArgument", `partNumber must be 1 … 10000, not ${q.get("partNumber")}`);
    return { kind: "part", uploadId, partNumber, path };
  }
  if (method === "POST" && q.has("uploads") && only(["uploads"])) return { kind: "create-upload", path };
  if (method === "POST" && uploadId !== null && only(["uploadId"])) return { kind: "complete", uploadId, name, path };
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

/**
 * The headers a write is passed on with: the checked body's length, a fixed content type, and the client's
 * signature fields (for a server that checks them; stored by none). Everything else the client sent stays out.
 */
export function writeHeaders(client: IncomingHttpHeaders, contentLength: number): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = { "content-length": contentLength, "content-type": "application/octet-stream" };
  for (const h of ["host", "authorization", "x-amz-date", "x-amz-content-sha256", "x-amz-security-token"])
    if (typeof client[h] === "string") out[h] = client[h];
  return out;
}

/** Headers of the server's answer that a reader may need; the rest (stored metadata above all) is not passed on. */
const ANSWER_HEADERS = [
  "content-length",
  "content-range",
  "accept-ranges",
  "etag",
  "last-modified",
  "date",
  "x-amz-request-id",
  "x-amz-id-2",
];
/** A content type longer than this is not a type but stored junk. */
const MAX_CONTENT_TYPE = 200;

/** The answer's headers a reader gets through the gate (an object stored before the gate, or past it, included). */
export function answerHeaders(upstream: IncomingHttpHeaders): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  for (const h of ANSWER_HEADERS) if (upstream[h] !== undefined) out[h] = upstream[h];
  const type = upstream["content-type"];
  if (type !== undefined) out["content-type"] = type.length <= MAX_CONTENT_TYPE ? type : "application/octet-stream";
  return out;
}

/** Stored headers a blob written through the gate never has: their names (empty for a clean object). */
export function storedExtras(upstream: IncomingHttpHeaders): string[] {
  return Object.keys(upstream).filter(
    (h) =>
      h.startsWith("x-amz-meta-") ||
      [
        "content-encoding",
        "content-disposition",
        "content-language",
        "cache-control",
        "expires",
        "x-amz-storage-class",
        "x-amz-website-redirect-location",
        "x-amz-tagging-count",
      ].includes(h) ||
      (h === "content-type" && (upstream[h] ?? "").length > MAX_CONTENT_TYPE),
  );
}

/** The empty ListMultipartUploadsResult: valid for the AWS SDK and minio's client, naming no upload. */
export function emptyUploadsXml(bucket: string, prefix: string): string {
  const esc = (s: string) => s.replace(/[<>&"']/g, (c) => `&#${c.charCodeAt(0)};`);
  return (
    `<?xml version="1.0" encoding="UTF-8"?>\n<ListMultipartUploadsResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">` +
    `<Bucket>${esc(bucket)}</Bucket><KeyMarker></KeyMarker><UploadIdMarker></UploadIdMarker>` +
    `<NextKeyMarker></NextKeyMarker><NextUploadIdMarker></NextUploadIdMarker><Prefix>${esc(prefix)}</Prefix>` +
    `<MaxUploads>1000</MaxUploads><IsTruncated>false</IsTruncated></ListMultipartUploadsResult>`
  );
}
