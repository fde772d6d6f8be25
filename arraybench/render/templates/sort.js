// Sort a table by a column: a click (or Enter) on its header, again to reverse. The page's only
// script, allowed by its hash in the Content-Security-Policy; without it the page reads the same.
// Rows stay in their group (a size's rows, under its header cell) and sort within it.
(function () {
  "use strict";
  function value(cell) {
    if (!cell) return null;
    var v = cell.getAttribute("data-v");
    if (v !== null) return v === "" ? null : Number(v);
    var text = cell.textContent.trim();
    return text === "—" || text === "" ? null : text.toLowerCase();
  }
  function compare(a, b, dir) {
    if (a === null || b === null) return a === b ? 0 : (a === null ? 1 : -1);  // blanks last
    if (typeof a !== typeof b) { a = String(a); b = String(b); }
    return (a < b ? -1 : a > b ? 1 : 0) * dir;
  }
  function sortBy(table, col, th) {
    var dir = th.getAttribute("aria-sort") === "ascending" ? -1 : 1;
    var heads = table.tHead.rows[0].cells;
    for (var i = 0; i < heads.length; i++) heads[i].removeAttribute("aria-sort");
    th.setAttribute("aria-sort", dir === 1 ? "ascending" : "descending");
    var lead = table.hasAttribute("data-grouped") ? 1 : 0;  // the group's header cell, rowspan
    Array.prototype.forEach.call(table.tBodies, function (body) {
      var rows = Array.prototype.slice.call(body.rows);
      var group = lead ? rows[0].cells[0] : null;
      if (group) group.remove();
      rows.sort(function (a, b) { return compare(value(a.cells[col - lead]), value(b.cells[col - lead]), dir); });
      rows.forEach(function (row) { body.appendChild(row); });
      if (group) rows[0].insertBefore(group, rows[0].firstChild);
    });
  }
  Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), function (table) {
    var heads = table.tHead.rows[0].cells;
    Array.prototype.forEach.call(heads, function (th, col) {
      if (th.hasAttribute("data-nosort")) return;
      var button = document.createElement("button");
      button.type = "button";
      button.className = "sort";
      button.title = "sort by " + th.textContent;
      button.textContent = th.textContent;
      th.textContent = "";
      th.appendChild(button);
      button.addEventListener("click", function () { sortBy(table, col, th); });
    });
  });
})();
