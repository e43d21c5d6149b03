// Stateroom console behaviour. No inline scripts (CSP script-src 'self').
(function () {
  "use strict";

  // --- Forms: confirmation, and double clicks submit once -----------------
  document.addEventListener("submit", function (event) {
    var form = event.target;
    var message = form.getAttribute("data-confirm");
    if (message && !window.confirm(message)) {
      event.preventDefault();
      event.stopImmediatePropagation();
      return;
    }
    if (form.dataset.submitted === "1") {
      // Stop htmx too: it listens on the form, after this capturing listener.
      event.preventDefault();
      event.stopImmediatePropagation();
      return;
    }
    form.dataset.submitted = "1";
    window.setTimeout(function () { form.dataset.submitted = ""; }, 4000);
  }, true);
  // A form that comes back (validation errors) may be submitted again.
  document.addEventListener("htmx:afterRequest", function (event) {
    var form = event.detail.elt;
    if (form && form.dataset) { form.dataset.submitted = ""; }
  });

  // --- JSON fields (edited approval arguments): checked before submit ------
  function topLevelChanges(before, after) {
    var keys = {}, changed = [];
    Object.keys(before).concat(Object.keys(after)).forEach(function (k) { keys[k] = true; });
    Object.keys(keys).sort().forEach(function (k) {
      if (JSON.stringify(before[k]) !== JSON.stringify(after[k])) { changed.push(k); }
    });
    return changed;
  }
  function checkJson(field) {
    var status = field.form ? field.form.querySelector("[data-json-status]") : null;
    var text, ok = true;
    try {
      var value = JSON.parse(field.value);
      if (value === null || typeof value !== "object" || Array.isArray(value)) {
        throw new Error("the arguments must be a JSON object");
      }
      var original = JSON.parse(field.defaultValue || "{}");
      var changed = topLevelChanges(original, value);
      text = changed.length ? "Valid JSON. Changed: " + changed.join(", ") + "." : "Valid JSON, unchanged.";
      field.setCustomValidity("");
    } catch (err) {
      ok = false;
      text = "Not valid JSON: " + err.message;
      field.setCustomValidity(text);
    }
    if (status) {
      status.textContent = text;
      status.classList.toggle("error", !ok);
    }
    return ok;
  }
  document.addEventListener("input", function (event) {
    if (event.target.matches && event.target.matches("[data-json-field]")) { checkJson(event.target); }
  });
  // The browser refuses to submit an invalid field; show it even inside closed <details>.
  document.addEventListener("invalid", function (event) {
    var details = event.target.closest ? event.target.closest("details") : null;
    if (details) { details.open = true; }
  }, true);

  // --- Keyboard: lists that declare rows (data-hotkey-row) -----------------
  function rows() {
    return Array.prototype.slice.call(document.querySelectorAll("[data-hotkey-row]"));
  }
  function current() {
    var all = rows();
    for (var i = 0; i < all.length; i++) { if (all[i].classList.contains("selected")) { return i; } }
    return -1;
  }
  function select(index, scroll) {
    var all = rows();
    if (!all.length) { return; }
    index = Math.max(0, Math.min(all.length - 1, index));
    all.forEach(function (row, i) {
      row.classList.toggle("selected", i === index);
      row.setAttribute("aria-selected", i === index ? "true" : "false");
    });
    if (scroll !== false) { all[index].scrollIntoView({ block: "nearest" }); }
  }
  document.addEventListener("keydown", function (event) {
    var tag = (event.target.tagName || "").toLowerCase();
    if (tag === "input" || tag === "textarea" || tag === "select") {
      if (event.key === "Escape") { event.target.blur(); }
      return;
    }
    if (event.metaKey || event.ctrlKey || event.altKey) { return; }
    if (event.key === "/") {
      var search = document.querySelector("[data-hotkey-search]");
      if (search) { event.preventDefault(); search.focus(); search.select(); }
      return;
    }
    if (!rows().length) { return; }
    if (event.key === "j") { select(current() + 1); }
    else if (event.key === "k") { select(current() < 0 ? 0 : current() - 1); }
    else if (event.key === "a" || event.key === "r" || event.key === "Enter") {
      var row = rows()[current()];
      if (!row) { return; }
      var selector = event.key === "a" ? "[data-hotkey-approve]" : event.key === "r" ? "[data-hotkey-reject]" : "a[href]";
      var target = row.querySelector(selector);
      if (target && !target.disabled) { event.preventDefault(); target.click(); }
    }
  });

  // Keep the selection across htmx refreshes (the inbox polls): same row if it
  // is still there, else the row that took its place.
  var kept = null;
  document.addEventListener("htmx:beforeSwap", function () {
    var index = current();
    kept = index < 0 ? null : { id: rows()[index].getAttribute("data-id"), index: index };
  });
  document.addEventListener("htmx:afterSettle", function () {
    if (kept) {
      var all = rows(), index = -1;
      for (var i = 0; i < all.length; i++) { if (all[i].getAttribute("data-id") === kept.id) { index = i; } }
      if (index < 0) { index = Math.min(kept.index, all.length - 1); }
      if (index >= 0) { select(index, false); }
    }
    // Fragments may carry the page title (the inbox shows its pending count there).
    var title = document.querySelector("[data-page-title]");
    if (title) { document.title = title.getAttribute("data-page-title"); }
    tick();
  });

  // --- Countdowns: elements with data-expires (ISO time) show the time left ---
  function tick() {
    var now = Date.now();
    document.querySelectorAll("[data-expires]").forEach(function (el) {
      var left = Math.round((Date.parse(el.getAttribute("data-expires")) - now) / 1000);
      if (isNaN(left)) { return; }
      el.classList.toggle("soon", left > 0 && left < 300);
      el.classList.toggle("over", left <= 0);
      if (left <= 0) { el.textContent = "expired"; return; }
      var h = Math.floor(left / 3600), m = Math.floor((left % 3600) / 60), s = left % 60;
      el.textContent = (h ? h + "h " : "") + (h || m ? m + "m " : "") + s + "s";
    });
  }
  window.setInterval(tick, 1000);
  document.addEventListener("DOMContentLoaded", tick);
})();
