// Stateroom console behaviour. No inline scripts (CSP script-src 'self').
(function () {
  "use strict";

  // Buttons with data-confirm ask before submitting their form.
  document.addEventListener("submit", function (event) {
    var form = event.target;
    var message = form.getAttribute("data-confirm");
    if (message && !window.confirm(message)) {
      event.preventDefault();
      event.stopImmediatePropagation();
      return;
    }
    // Double clicks submit once.
    if (form.dataset.submitted === "1") {
      event.preventDefault();
      return;
    }
    form.dataset.submitted = "1";
    window.setTimeout(function () { form.dataset.submitted = ""; }, 4000);
  }, true);

  // Keyboard shortcuts on pages that declare them (data-hotkeys on a list).
  function rows() {
    return Array.prototype.slice.call(document.querySelectorAll("[data-hotkey-row]"));
  }
  function select(index) {
    var all = rows();
    if (!all.length) { return; }
    index = Math.max(0, Math.min(all.length - 1, index));
    all.forEach(function (row, i) { row.classList.toggle("selected", i === index); });
    all[index].scrollIntoView({ block: "nearest" });
  }
  function current() {
    var all = rows();
    for (var i = 0; i < all.length; i++) { if (all[i].classList.contains("selected")) { return i; } }
    return -1;
  }
  document.addEventListener("keydown", function (event) {
    var tag = (event.target.tagName || "").toLowerCase();
    if (tag === "input" || tag === "textarea" || tag === "select" || event.metaKey || event.ctrlKey || event.altKey) {
      return;
    }
    if (event.key === "/") {
      var search = document.querySelector("[data-hotkey-search]");
      if (search) { event.preventDefault(); search.focus(); }
      return;
    }
    if (!rows().length) { return; }
    if (event.key === "j") { select(current() + 1); }
    else if (event.key === "k") { select(current() - 1); }
    else if (event.key === "a" || event.key === "r" || event.key === "Enter") {
      var row = rows()[current()];
      if (!row) { return; }
      var target = row.querySelector(event.key === "a" ? "[data-hotkey-approve]" : event.key === "r" ? "[data-hotkey-reject]" : "a[href]");
      if (target) { event.preventDefault(); target.click(); }
    }
  });

  // Keep the selection across htmx refreshes of the inbox.
  document.addEventListener("htmx:afterSwap", function () {
    var sel = document.querySelector("[data-hotkey-row].selected");
    if (!sel && rows().length && document.body.dataset.hadSelection === "1") { select(0); }
  });
  document.addEventListener("keydown", function () {
    if (current() >= 0) { document.body.dataset.hadSelection = "1"; }
  });

  // Countdowns: elements with data-expires (ISO time) show the time left.
  function tick() {
    var now = Date.now();
    document.querySelectorAll("[data-expires]").forEach(function (el) {
      var left = Math.round((Date.parse(el.getAttribute("data-expires")) - now) / 1000);
      if (isNaN(left)) { return; }
      if (left <= 0) { el.textContent = "expired"; return; }
      var h = Math.floor(left / 3600), m = Math.floor((left % 3600) / 60), s = left % 60;
      el.textContent = (h ? h + "h " : "") + (h || m ? m + "m " : "") + s + "s";
    });
  }
  window.setInterval(tick, 1000);
  document.addEventListener("DOMContentLoaded", tick);
})();
