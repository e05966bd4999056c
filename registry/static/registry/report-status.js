/* Polls each pending report's status until its PDF is ready (or it failed), then shows the download link.
   No dependencies; the page works without it (reload to see the status). */
(function () {
  "use strict";
  var FINAL = { ready: true, failed: true };
  var INTERVAL_MS = 1500;

  function update(item, data) {
    item.dataset.status = data.status;
    var status = item.querySelector("[data-role=status]");
    var link = item.querySelector("[data-role=link]");
    status.textContent = data.status;
    if (data.ready && data.download_url && !link.querySelector("a")) {
      var a = document.createElement("a");
      a.href = data.download_url;
      a.className = "button button--primary";
      a.textContent = "Download the signed PDF";
      link.appendChild(a);
    }
    if (data.failed) {
      link.textContent = data.error ? "Failed: " + data.error : "Failed.";
    }
  }

  function poll(item) {
    fetch(item.dataset.statusUrl, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (response) { return response.ok ? response.json() : null; })
      .then(function (data) {
        if (!data) { return; }
        update(item, data);
        if (!FINAL[data.status]) { window.setTimeout(function () { poll(item); }, INTERVAL_MS); }
      })
      .catch(function () { window.setTimeout(function () { poll(item); }, INTERVAL_MS * 4); });
  }

  document.querySelectorAll(".report[data-status-url]").forEach(function (item) {
    if (!FINAL[item.dataset.status]) { poll(item); }
  });
})();
