/**
 * A machine identity for signed heartbeats: a hash of the OS's machine id (never the id itself), the same for
 * every process and network namespace on one machine, different between machines. The dashboard shows "Real,
 * separate machine" only when a provider's differs from the operator's; `--hosts` runs share it by design.
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { hostname } from "node:os";

let cached: string | undefined;

export function machineId(): string {
  if (cached) return cached;
  let raw = "";
  for (const f of ["/etc/machine-id", "/var/lib/dbus/machine-id"]) {
    try {
      raw = readFileSync(f, "utf8").trim();
      if (raw) break;
    } catch {
      // not on this OS; try the next source
    }
  }
  cached =
    "0x" +
    createHash("sha256")
      .update(`gpuchain/machine/v1|${raw || hostname()}`)
      .digest("hex")
      .slice(0, 32);
  return cached;
}

/**
 * The badge a provider's run may carry: "Real, separate machine" only when its signed machine identity differs
 * from the operator's; separate network namespaces on one machine share the identity and say so.
 */
export function machineBadge(
  providerMachine: string | undefined,
  operatorMachine: string,
  namespaces = false,
): string | undefined {
  if (providerMachine !== undefined && providerMachine.toLowerCase() !== operatorMachine.toLowerCase()) {
    return "Real, separate machine";
  }
  return namespaces ? "Separate hosts on one machine" : undefined;
}
