// Facets apply on change (progressive enhancement: without this file, "Apply filters" submits the same GET form).
// Empty fields are left out of the URL, so it holds only the filters in force; the control that changed gets the
// focus back after the page loads, so keyboard users keep their place.
(function () {
  "use strict";
  var KEY = "benchreg:facet-focus";
  var forms = document.querySelectorAll("form[data-autosubmit]");
  Array.prototype.forEach.call(forms, function (form) {
    var apply = form.querySelector("[data-apply]");
    if (apply) { apply.hidden = true; }
    form.addEventListener("change", function (event) {
      var target = event.target;
      if (!target || !target.name) { return; }
      try { sessionStorage.setItem(KEY, target.id || ""); } catch (e) { /* storage may be off */ }
      if (form.requestSubmit) { form.requestSubmit(); } else { form.submit(); }
    });
    form.addEventListener("submit", function () {
      Array.prototype.forEach.call(form.elements, function (el) {
        if (el.name && el.value === "" && el.type !== "submit") { el.disabled = true; }
      });
    });
  });
  // Back/forward may restore the page with the fields disabled on submit: enable them again.
  window.addEventListener("pageshow", function () {
    Array.prototype.forEach.call(forms, function (form) {
      Array.prototype.forEach.call(form.elements, function (el) { el.disabled = false; });
    });
  });
  // On a narrow screen the facet panel starts closed unless a filter is in force (its summary says how many).
  if (window.matchMedia && window.matchMedia("(max-width: 900px)").matches) {
    Array.prototype.forEach.call(document.querySelectorAll("details[data-collapse-narrow]"), function (d) {
      if (!d.hasAttribute("data-active")) { d.open = false; }
    });
  }
  var focusId = null;
  try { focusId = sessionStorage.getItem(KEY); sessionStorage.removeItem(KEY); } catch (e) { /* ignore */ }
  if (focusId) {
    var el = document.getElementById(focusId);
    if (el) { el.focus(); }
  }
})();
