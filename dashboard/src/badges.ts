/** The badges and their one-line meanings (the help page's words). A badge is shown only when it is true. */
export const BADGE_MEANING: Record<string, string> = {
  "Real GPU": "A physical GPU doing the work live.",
  "Real, separate machine": "A physical GPU on another computer, often a teammate's.",
  "Capped profile": "The same physical device with a memory limit, to show the job adapting to a smaller card.",
  "Injected fault": "A provider we made misbehave on purpose, to show bad work being refused.",
  Recorded: "Played back from a saved real run, not happening now.",
  "Local chain": "Settled on a chain running on this machine, not on Base Sepolia.",
  Synthetic: "A CPU workload standing in when no GPU is available.",
};
