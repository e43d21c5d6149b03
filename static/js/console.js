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
  // Roving focus: j/k move real keyboard focus between rows (the focused row has
  // tabindex=0, the others -1), so a screen reader announces the row that a or r
  // will act on, and Tab leaves the table from where j/k left off.
  function rows() {
    return Array.prototype.slice.call(document.querySelectorAll("[data-hotkey-row]"));
  }
  // The selection is remembered by row id, not only by the class on a row: a poll can
  // swap the rows between a key press and the next one, and a j/k pressed while a
  // swap settles must not be undone by it.
  var selectedId = null, selectedIndex = -1;
  function current() {
    var all = rows(), i;
    if (selectedId !== null) {
      for (i = 0; i < all.length; i++) { if (all[i].getAttribute("data-id") === selectedId) { return i; } }
    }
    for (i = 0; i < all.length; i++) { if (all[i].classList.contains("selected")) { return i; } }
    return -1;
  }
  function select(index, focus) {
    var all = rows();
    if (!all.length) { return; }
    index = Math.max(0, Math.min(all.length - 1, index));
    selectedId = all[index].getAttribute("data-id");
    selectedIndex = index;
    all.forEach(function (row, i) {
      row.classList.toggle("selected", i === index);
      row.setAttribute("tabindex", i === index ? "0" : "-1");
    });
    if (focus !== false) { all[index].focus(); }
  }
  function closePanels() {
    // Escape closes open menus (<details data-escape-close>) and htmx panels.
    var closed = false;
    document.querySelectorAll("details[data-escape-close][open]").forEach(function (d) {
      d.open = false;
      var summary = d.querySelector("summary");
      if (summary) { summary.focus(); }
      closed = true;
    });
    document.querySelectorAll("[data-panel]").forEach(function (panel) {
      if (panel.children.length) {
        panel.innerHTML = "";
        var opener = panel.opener || document.querySelector("[hx-target='#" + panel.id + "']");
        if (opener) { opener.focus(); }
        closed = true;
      }
    });
    return closed;
  }
  document.addEventListener("click", function (event) {
    // "Keep it as it is" in an htmx panel closes the panel instead of reloading.
    var close = event.target.closest ? event.target.closest("[data-close-panel]") : null;
    if (close && close.closest("[data-panel]")) { event.preventDefault(); closePanels(); }
    // Remember which control opened a panel, to return focus there.
    var opener = event.target.closest ? event.target.closest("[hx-target]") : null;
    if (opener) {
      var target = document.querySelector(opener.getAttribute("hx-target"));
      if (target && target.hasAttribute("data-panel")) { target.opener = opener; }
    }
  });
  document.addEventListener("keydown", function (event) {
    var tag = (event.target.tagName || "").toLowerCase();
    if (event.key === "Escape" && closePanels()) { event.preventDefault(); return; }
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
    var onRow = event.target.matches && event.target.matches("[data-hotkey-row]");
    if (event.key === "j") { event.preventDefault(); select(current() + 1); }
    else if (event.key === "k") { event.preventDefault(); select(current() < 0 ? 0 : current() - 1); }
    else if (event.key === "a" || event.key === "r" || (event.key === "Enter" && onRow)) {
      var row = rows()[current()];
      if (!row) { return; }
      var selector = event.key === "a" ? "[data-hotkey-approve]" : event.key === "r" ? "[data-hotkey-reject]" : "a[href]";
      var target = row.querySelector(selector);
      if (target && !target.disabled) { event.preventDefault(); target.click(); }
    }
  });
  document.addEventListener("focusin", function (event) {
    // Clicking or tabbing onto a row makes it the current one.
    var row = event.target.closest ? event.target.closest("[data-hotkey-row]") : null;
    if (row && !row.classList.contains("selected")) {
      var index = rows().indexOf(row);
      if (index >= 0) { select(index, false); }
    }
  });

  // Keep the selection and focus across htmx refreshes (the inbox polls): the same
  // row if it is still there (rows have stable ids), else the row that took its place.
  var kept = null;
  document.addEventListener("htmx:beforeSwap", function (event) {
    if (!event.detail.shouldSwap) { return; }  // a 204 (nothing changed) swaps nothing
    var active = document.activeElement;
    kept = current() < 0 ? null : {
      focused: !!(active && active.closest && active.closest("[data-hotkey-row]"))
    };
  });
  document.addEventListener("htmx:afterSettle", function () {
    if (kept) {
      // current() finds the selected row by id (the latest j/k wins, even one pressed
      // while this swap settled); if it is gone, the row that took its place.
      var all = rows(), index = current();
      if (index < 0) { index = Math.min(selectedIndex, all.length - 1); }
      var refocus = kept.focused && (document.activeElement === document.body || !document.activeElement);
      if (index >= 0) { select(index, refocus); }
      // A decision took the last row away: focus its confirmation, not <body>. (The page's
      // live region, present since load, announces it: a region swapped in is not heard.)
      var notice = document.querySelector("[data-inbox-notice]");
      if (index < 0 && refocus && notice) { notice.focus(); }
      kept = null;
    }
    // Fragments may carry the page title (the inbox shows its pending count there).
    var title = document.querySelector("[data-page-title]");
    if (title) { document.title = title.getAttribute("data-page-title"); }
    labelScrollRegions();
    tick();
  });

  // --- Scroll regions (wide tables, JSON boxes) are focusable and named ------
  function labelScrollRegions() {
    document.querySelectorAll(".table-wrap:not([tabindex]), pre.json:not([tabindex]), pre.diff:not([tabindex])").forEach(function (el) {
      el.setAttribute("tabindex", "0");
      if (!el.getAttribute("role") && el.tagName !== "PRE") { el.setAttribute("role", "region"); }
      if (!el.getAttribute("aria-label")) {
        var section = el.closest("section, .card, main");
        var heading = section ? section.querySelector("h2, h1") : null;
        var name = heading ? heading.textContent.trim() : "";
        el.setAttribute("aria-label", (el.tagName === "PRE" ? "JSON" : "Table") + (name ? ": " + name : ""));
      }
    });
  }
  document.addEventListener("DOMContentLoaded", labelScrollRegions);
  // A panel that opens takes focus (its first field), so keyboard users land in it.
  document.addEventListener("htmx:afterSettle", function (event) {
    var target = event.detail && event.detail.target;
    if (target && target.hasAttribute && target.hasAttribute("data-panel")) {
      var field = target.querySelector("textarea, input:not([type=hidden]), select, button");
      if (field) { field.focus(); }
    }
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

  // --- A confirmation after a redirect (a decision made on its own page) -------
  // A live region filled before the page loads is not announced, and focus would
  // start on <body>: focus the messages, so they are read and the keyboard starts
  // there (j/k still move through the rows). Not when a field took focus itself.
  document.addEventListener("DOMContentLoaded", function () {
    var box = document.querySelector("[data-testid=messages]");
    var idle = !document.activeElement || document.activeElement === document.body;
    if (box && box.textContent.trim() && idle) {
      box.setAttribute("tabindex", "-1");
      box.focus();
    }
  });
})();
