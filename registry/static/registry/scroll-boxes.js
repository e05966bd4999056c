// A box that scrolls sideways (a wide table on a narrow screen) can only be scrolled from the keyboard when it can
// take the focus: while it overflows it gets tabindex="0" (and, a wrapping box, the role and name of a region named
// by its table's caption), and loses them again when it fits, so boxes that fit are no extra Tab stops. Boxes
// whose page gave them a tabindex are left as they are.
(function () {
  "use strict";

  function name(box) {
    var caption = box.querySelector("caption");
    var section = box.closest("section");
    var heading = section && section.querySelector("h2, h3");
    var text = (caption || heading || {}).textContent || "Table";
    return text.replace(/\s+/g, " ").trim() + " (scrolls sideways)";
  }

  function update(box) {
    if (box.hasAttribute("tabindex") && !box.hasAttribute("data-scroll-focus")) return;
    var table = box.tagName === "TABLE";
    if (box.scrollWidth > box.clientWidth + 1) {
      if (box.hasAttribute("data-scroll-focus")) return;
      box.setAttribute("data-scroll-focus", "");
      box.setAttribute("tabindex", "0");
      if (!table) {
        box.setAttribute("role", "region");
        box.setAttribute("aria-label", name(box));
      }
    } else if (box.hasAttribute("data-scroll-focus")) {
      box.removeAttribute("data-scroll-focus");
      box.removeAttribute("tabindex");
      if (!table) {
        box.removeAttribute("role");
        box.removeAttribute("aria-label");
      }
    }
  }

  function updateAll() {
    document.querySelectorAll(".table-wrap, .table").forEach(function (box) {
      if (box.tagName === "TABLE" && box.parentElement.classList.contains("table-wrap")) return;
      update(box);
    });
  }

  var pending = false;
  function soon() {
    if (pending) return;
    pending = true;
    requestAnimationFrame(function () {
      pending = false;
      updateAll();
    });
  }

  updateAll();
  window.addEventListener("resize", soon);
  window.addEventListener("load", soon);
})();
