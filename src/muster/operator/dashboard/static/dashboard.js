// Keeps the overview's board live: every two seconds it asks for the board's live
// part, which answers 204 while nothing is new, and swaps it in. A link that had the
// keyboard's focus has it again after the swap, and the status line (announced by
// screen readers) says when the board was made. With `?namespace=NS` in the address
// (the namespace links), only that namespace's gangs are shown in the tables, after
// each swap too: the board is the same for every viewer, rendered once on the server.
"use strict";
(function () {
  const board = document.getElementById("board");
  const status = document.getElementById("freshness");
  const chosen = new URLSearchParams(window.location.search).get("namespace") || "";
  if (!board) {
    return;
  }
  function filter() {
    let shown = 0;
    let all = 0;
    board.querySelectorAll("tr[data-namespace]").forEach(function (row) {
      const mine = !chosen || row.dataset.namespace === chosen;
      row.hidden = !mine;
      all += 1;
      shown += mine ? 1 : 0;
    });
    board.querySelectorAll("#namespaces a").forEach(function (link) {
      if (link.dataset.namespace === chosen) {
        link.setAttribute("aria-current", "page");
      } else {
        link.removeAttribute("aria-current");
      }
    });
    const said = board.querySelector("#filtered");
    if (said && chosen) {
      said.textContent = "showing the " + shown + " of " + all + " gangs in " + chosen;
    }
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
    filter();
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
  filter();
  window.setTimeout(poll, 2000);
})();
