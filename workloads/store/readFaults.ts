// Whose fault a failed read is, decided without I/O. A failure that names the blob (a symlink loop, a file nobody
// may open, a path through a file, an I/O error on it, stored headers no client can parse, an object in a storage
// class that cannot be read) is an answer about what the reporter put under its own name: the verifier refuses it
// after the grace as `blob-unreadable`. Only a store that fails for every name is an outage (the verifier
// abstains); the backends tell the two apart by asking the store about another name (the probe).

/** How one failure reads before the probe: nothing there, possibly this name's fault, or the store's. */
export type ReadFault = "missing" | "this-name" | "store";

/**
 * Error codes an open or read of one file gives for that file alone (the folder answering otherwise): ELOOP (a
 * symlink loop), EACCES/EPERM (a file the reader may not open), ENOTDIR (a symlink through a file), EIO (an I/O
 * error on it), EISDIR (a directory), ENXIO (a socket), ENAMETOOLONG (a symlink to a very long path).
 */
const FS_NAME_CODES = new Set(["ELOOP", "EACCES", "EPERM", "ENOTDIR", "EIO", "EISDIR", "ENXIO", "ENAMETOOLONG"]);

export function fsReadFault(code: string | undefined): ReadFault {
  if (code === "ENOENT") return "missing";
  return code !== undefined && FS_NAME_CODES.has(code) ? "this-name" : "store";
}

type SdkError = { name?: string; code?: string; message?: string; $metadata?: { httpStatusCode?: number } };

/**
 * An S3 read's failure. The answer's own headers unparseable (HPE_*: a 16 kB stored metadata header overflows
 * every client's parser), or a 4xx other than not-found, timeout and throttling (InvalidObjectState for an object
 * in an archive storage class, 400 for one under a customer's encryption key, 403 for one object) may be this
 * name's; 5xx, timeouts, refused connections are the store's.
 */
export function s3ReadFault(err: unknown): ReadFault {
  const e = (err ?? {}) as SdkError;
  const status = e.$metadata?.httpStatusCode;
  if (e.name === "NoSuchKey" || e.name === "NotFound" || (status === 404 && e.name !== "NoSuchBucket"))
    return "missing";
  if (e.name === "NoSuchBucket") return "store";
  if (/^HPE_/.test(e.code ?? "") || e.name === "InvalidObjectState") return "this-name";
  if (status !== undefined && status >= 400 && status < 500 && status !== 408 && status !== 429) return "this-name";
  return "store";
}

/**
 * The verdict once the store was asked about another name: a failure that may be this name's is, when the store
 * answers for that other name; otherwise (and for every other failure) it is the store's.
 */
export const blame = (fault: ReadFault, storeAnswersOtherNames: boolean): ReadFault =>
  fault === "this-name" && !storeAnswersOtherNames ? "store" : fault;
