/**
 * A stale deployment said as one: the chain answers, but the deployment file names addresses without the contracts
 * (a chain restarted since), or was made on another chain. The dashboard server runs the CLI's own check
 * (sdk/node/contracts.ts checkDeploymentOn) and sends its one line, redeploy advice included; the page then says that
 * wherever it would otherwise say "the chain is not answering", and asks for its config again once the server's
 * deployment changed (fixed, stale again, or new addresses), so a redeploy is picked up without a reload. Pure.
 */

/** What the page knows of the server's view: its status snapshot and its config (either may be missing). */
export interface DeploymentSeen {
  deploymentProblem?: string | null;
  escrow?: string;
  chainId?: string | null;
}

/** The server's last word on the deployment: the snapshot's (polled every 2 s) over the config's; none recorded. */
export function deploymentProblemOf(
  recorded: boolean,
  snapshot: DeploymentSeen | null | undefined,
  config: DeploymentSeen | null | undefined,
): string | null {
  if (recorded) return null;
  if (snapshot && snapshot.deploymentProblem !== undefined) return snapshot.deploymentProblem;
  return config?.deploymentProblem ?? null;
}

/** A problem that is a file made on another chain (checkDeploymentOn's chain id line), not a stale one. */
const OTHER_CHAIN = /was deployed on chain \d+, but the RPC/;

/** The banner's title for a problem. */
export function deploymentProblemTitle(problem: string): string {
  return OTHER_CHAIN.test(problem) ? "Deployment file is for another chain" : "Deployment file is stale";
}

/**
 * The words for a read that failed, where the page would say "the chain is not answering": with a deployment
 * problem, the chain does answer and the contracts are what is missing.
 */
export function chainDownWords(problem: string | null): string {
  if (!problem) return "the chain is not answering";
  return OTHER_CHAIN.test(problem)
    ? "the chain answers, but the deployment file was made on another chain"
    : "the chain answers, but the deployment file is stale (no contract code at its addresses)";
}

/**
 * Whether the page's config is behind the server's: the deployment became stale or was fixed, its addresses
 * changed (the file read again after a redeploy), or the chain id is known now (the chain answered after the page
 * loaded). Absent fields (an older server) never count.
 */
export function configBehind(
  config: (DeploymentSeen & { deployment: { escrow: string } }) | null | undefined,
  snapshot: DeploymentSeen | null | undefined,
): boolean {
  if (!config || !snapshot) return false;
  if (snapshot.deploymentProblem !== undefined && snapshot.deploymentProblem !== (config.deploymentProblem ?? null))
    return true;
  if (snapshot.escrow && snapshot.escrow.toLowerCase() !== config.deployment.escrow.toLowerCase()) return true;
  return Boolean(snapshot.chainId) && snapshot.chainId !== config.chainId;
}
