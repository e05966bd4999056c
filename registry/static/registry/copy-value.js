/* "Copy" buttons: each [data-copy] button copies its value (a full hash or key shown shortened). Hidden until this
   script runs, so a page without scripts shows no button that does nothing; the full value is in the title too. */
(function () {
  "use strict";
  if (!navigator.clipboard) { return; }
  document.querySelectorAll("button.copy[data-copy]").forEach(function (button) { button.hidden = false; });
  document.addEventListener("click", function (event) {
    var button = event.target.closest("button.copy[data-copy]");
    if (!button) { return; }
    navigator.clipboard.writeText(button.dataset.copy).then(function () {
      button.setAttribute("data-copied", "true");
      button.firstChild.textContent = "Copied";
    });
  });
})();
