// MemPalace for opencode: files each session into the palace when the agent
// goes idle and before its context is compacted, by running
// `mempalace hook run --harness opencode` (only the session's new exchanges
// are filed; a diary checkpoint every 15 of your messages).
//
// Written by `mempalace hook install --harness opencode`; run that again after
// moving the mempalace binary, or set MEMPALACE_BIN. Delete this file to stop.
import { spawn } from "node:child_process";

const MEMPALACE = process.env.MEMPALACE_BIN || __MEMPALACE__;

function runHook(kind, sessionID, directory) {
  if (!sessionID) return;
  try {
    // Detached and not awaited: saving memories never slows the session.
    const child = spawn(MEMPALACE, ["hook", "run", "--harness", "opencode", "--hook", kind], {
      stdio: ["pipe", "ignore", "ignore"],
      detached: true,
    });
    child.on("error", () => {});
    child.stdin.on("error", () => {});
    child.stdin.end(JSON.stringify({ session_id: sessionID, cwd: directory }));
    child.unref();
  } catch {
    // A missing binary must not disturb opencode.
  }
}

export const MemPalace = async ({ directory }) => ({
  event: async ({ event }) => {
    const sessionID = event?.properties?.sessionID ?? event?.properties?.info?.id;
    if (event?.type === "session.idle") runHook("stop", sessionID, directory);
    else if (event?.type === "session.compacted") runHook("precompact", sessionID, directory);
  },
});
