// Keeps the overview's board live: every two seconds it asks for the board's live
// part, which answers 204 while nothing is new, and swaps it in. A link that had the
// keyboard's focus has it again after the swap, and the status line (announced by
// screen readers) says when the board was made. Nothing else.
"use strict";
(function () {
  const board = document.getElementById("board");
  const status = document.getElementById("freshness");
  if (!board) {
    return;
  }
  function swap(html) {
    const active = document.activeElement;
    const href = board.contains(active) ? active.getAttribute("href") : null;
    board.innerHTML = html;
    const fresh = board.querySelector("[data-version]");
    if (fresh) {
      board.dataset.version = fresh.dataset.version;
    }
    if (href) {
      const again = board.querySelector('a[href="' + CSS.escape(href) + '"]');
      if (again) {
        again.focus();
      }
    }
    const summary = board.querySelector(".summary");
    if (status && summary) {
      status.textContent = "Updated. " + summary.textContent.replace(/\s+/g, " ").trim();
    }
  }
  async function poll() {
    try {
      const response = await fetch("/board?version=" + board.dataset.version, {
        cache: "no-store",
      });
      if (response.status === 200) {
        swap(await response.text());
      }
      board.removeAttribute("data-stale");
    } catch (error) {
      board.setAttribute("data-stale", "true"); // the server is gone; try again later
    }
    window.setTimeout(poll, 2000);
  }
  window.setTimeout(poll, 2000);
})();
