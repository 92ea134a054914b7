"use strict";
// Findings filters: show the rows that match every chosen filter, and say how many.
(function () {
  var form = document.getElementById("filters");
  var table = document.getElementById("findings-table");
  if (!form || !table) { return; }
  var rows = Array.prototype.slice.call(table.querySelectorAll("tbody tr[data-rule]"));
  var shown = document.getElementById("shown-count");
  var none = document.getElementById("no-match");
  var keys = ["severity", "status", "rule", "file"];

  function apply() {
    var want = {};
    keys.forEach(function (k) { want[k] = form.elements[k].value; });
    var text = form.elements.text.value.trim().toLowerCase();
    var count = 0;
    rows.forEach(function (row) {
      var ok = keys.every(function (k) { return !want[k] || row.dataset[k] === want[k]; });
      if (ok && text) { ok = row.textContent.toLowerCase().indexOf(text) !== -1; }
      row.hidden = !ok;
      if (ok) { count += 1; }
    });
    shown.textContent = String(count);
    none.hidden = count !== 0;
  }

  form.addEventListener("input", apply);
  form.addEventListener("change", apply);
  form.addEventListener("submit", function (event) { event.preventDefault(); });
  // Reset the fields here, not after the browser's own reset, so the table is right at once.
  form.addEventListener("reset", function (event) {
    event.preventDefault();
    keys.forEach(function (k) { form.elements[k].value = ""; });
    form.elements.text.value = "";
    apply();
  });
  apply();
}());
