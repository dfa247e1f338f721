// Store failures that say nothing about the blob's author: the store could not be read or written right now
// (retry later), or it holds other bytes under a content name (store corruption). Neither is a WorkloadError, so
// no caller can mistake one for a defect of the checkpoint itself.

/** The store did not answer usefully (timeout, 5xx, EMFILE, truncated body, …) after every retry. */
export class StoreUnavailableError extends Error {
  code = "STORE_UNAVAILABLE";
  store: string;
  constructor(store: string, op: string, cause: unknown) {
    super(`store ${store} unavailable (${op}): ${describe(cause)}`, { cause });
    this.name = "StoreUnavailableError";
    this.store = store;
  }
}

/** A put found other bytes under the name and could not replace them with the right ones. */
export class StoreCorruptionError extends Error {
  code = "STORE_CORRUPTION";
  constructor(store: string, name: string, detail: string) {
    super(`store corruption at ${store}: ${name} ${detail}`);
    this.name = "StoreCorruptionError";
  }
}

/** A backend error worth no retry (bad credentials, no such bucket): the store is misconfigured. */
export class StoreConfigError extends Error {
  code = "STORE_CONFIG";
}

export function describe(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const code = (err as NodeJS.ErrnoException).code ?? (err as { Code?: string }).Code;
  return code && !err.message.includes(code) ? `${code} ${err.message}` : err.message || err.name;
}
