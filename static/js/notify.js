// Desktop notifications while a console tab is open: the nav's "Mine" badge
// (#nav-assigned, polled by htmx) carries how many pending approvals are asked of
// me and the newest one's id; when a newer one appears and the browser allows
// it, show a notification. Permission is asked only after a click on a
// [data-enable-notifications] button.
(function () {
  "use strict";
  var KEY = "stateroom.assignedNewest";

  function supported() { return "Notification" in window; }

  function showState() {
    document.querySelectorAll("[data-notifications-state]").forEach(function (el) {
      if (!supported()) { el.textContent = "This browser has no desktop notifications."; return; }
      el.textContent = { granted: "On for this browser.", denied: "Blocked in this browser's settings.", "default": "" }[Notification.permission] || "";
    });
    document.querySelectorAll("[data-enable-notifications]").forEach(function (button) {
      button.hidden = !supported() || Notification.permission !== "default";
    });
  }

  function read(badge) {
    return {
      count: parseInt(badge.getAttribute("data-assigned-count") || "0", 10),
      newest: parseInt(badge.getAttribute("data-assigned-newest") || "0", 10)
    };
  }

  function seen() { return parseInt(window.sessionStorage.getItem(KEY) || "0", 10); }

  function remember(newest) { window.sessionStorage.setItem(KEY, String(newest)); }

  function check(badge, announce) {
    var now = read(badge);
    var before = seen();
    remember(Math.max(before, now.newest));
    if (!announce || now.newest <= before || now.count < 1) { return; }
    if (!supported() || Notification.permission !== "granted") { return; }
    var note = new Notification("Stateroom: an approval is asked of you", {
      body: now.count + " pending approval" + (now.count === 1 ? " is" : "s are") + " assigned to you.",
      tag: "stateroom-assigned"
    });
    note.onclick = function () { window.focus(); window.location.href = badge.getAttribute("href"); };
  }

  document.addEventListener("click", function (event) {
    var button = event.target.closest("[data-enable-notifications]");
    if (!button || !supported()) { return; }
    Notification.requestPermission().then(showState);
  });

  document.addEventListener("DOMContentLoaded", function () {
    showState();
    var badge = document.getElementById("nav-assigned");
    // The first look of a tab only records what is there; a poll announces what is new.
    if (badge) { check(badge, seen() > 0 && read(badge).newest > seen()); }
  });

  // After any swap (the badge's poll among them): announce only a newer assignment.
  document.addEventListener("htmx:afterSettle", function () {
    var badge = document.getElementById("nav-assigned");
    if (badge) { check(badge, true); }
  });
})();
