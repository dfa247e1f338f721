/**
 * The one rule for a provider's name, wherever a person types it (`gpuchain provide --name`, the dashboard's Provide
 * compute form): 1–64 letters, digits, dots, dashes or underscores, and not "." or "..". The name becomes a folder
 * (`.gpuchain/providers/NAME/key`), so a slash or a dot-only name would put the key somewhere else. Pure.
 */
export const PROVIDER_NAME_RULE = "1–64 letters, digits, dot, dash or underscore (not . or ..)";

const PROVIDER_NAME = /^(?!\.{1,2}$)[A-Za-z0-9._-]{1,64}$/;

export function isProviderName(name: string): boolean {
  return PROVIDER_NAME.test(name);
}
