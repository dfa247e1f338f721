/** The pages, their number keys and `g` letters (pure: the shortcuts and the tests share it). */
export const PAGES = [
  { id: "status", title: "Status", key: "1", g: "s" },
  { id: "provide", title: "Provide compute", key: "2", g: "p" },
  { id: "onchain", title: "On-chain", key: "3", g: "o" },
  { id: "help", title: "Help", key: "4", g: "h" },
  { id: "recorded", title: "Recorded run", key: "5", g: "r" },
] as const;
export type PageId = (typeof PAGES)[number]["id"];
