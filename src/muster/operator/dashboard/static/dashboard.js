// Keeps the overview's board live: every two seconds it asks for the board's live
// part, which answers 204 while nothing is new, and swaps it in. Nothing else.
"use strict";
(function () {
  const board = document.getElementById("board");
  if (!board) {
    return;
  }
  async function poll() {
    try {
      const response = await fetch("/board?version=" + board.dataset.version, {
        cache: "no-store",
      });
      if (response.status === 200) {
        const html = await response.text();
        const holder = document.createElement("div");
        holder.innerHTML = html;
        const fresh = holder.querySelector("[data-version]");
        board.dataset.version = fresh ? fresh.dataset.version : board.dataset.version;
        board.innerHTML = html;
      }
      board.removeAttribute("data-stale");
    } catch (error) {
      board.setAttribute("data-stale", "true"); // the server is gone; try again later
    }
    window.setTimeout(poll, 2000);
  }
  window.setTimeout(poll, 2000);
})();
