// deploybot console: live updates over Server-Sent Events, and approval countdowns.
// No framework. Without JavaScript every page and form still works; pages just do not update.
(function () {
  "use strict";
  var live = document.getElementById("live");

  function busy() {
    // Do not replace the page under someone typing feedback or a reason.
    var active = document.activeElement;
    if (active && live.contains(active) && /^(TEXTAREA|INPUT|SELECT)$/.test(active.tagName)) return true;
    var fields = live.querySelectorAll(
      "form[method=post] textarea, form[method=post] input[type=text], form[method=post] input:not([type])");
    for (var i = 0; i < fields.length; i++) if (fields[i].value) return true;
    return false;
  }

  var source = null, pending = false, loading = false;

  function listen() {
    if (!live || !live.dataset.watch || !window.EventSource) return;
    if (source) source.close();
    var url = live.dataset.prefix + "/changes?watch=" + encodeURIComponent(live.dataset.watch) +
      "&since=" + encodeURIComponent(live.dataset.version || "");
    var mine = source = new EventSource(url);
    source.addEventListener("changed", function (e) {
      if (e.data !== live.dataset.version) { pending = true; refresh(); }
    });
    // Refused (429: too many live streams open) or gone: the browser gives up on a stream
    // that was not a 200, so try again later, once.
    source.addEventListener("error", function () {
      if (mine === source && mine.readyState === EventSource.CLOSED) setTimeout(listen, 30000);
    });
  }

  function refresh() {
    if (!pending || loading) return;
    if (busy()) return;  // tried again when the field is left
    loading = true; pending = false;
    fetch(window.location.href, { credentials: "same-origin", headers: { "Accept": "text/html" } })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) {
        loading = false;
        if (html === null) return;
        var fresh = new DOMParser().parseFromString(html, "text/html").getElementById("live");
        if (!fresh) return;
        // Someone began typing while the page was fetched: keep what they typed, update later.
        if (busy()) { pending = true; return; }
        var open = {};
        live.querySelectorAll("details[open]").forEach(function (d) { if (d.parentElement.id) open[d.parentElement.id] = true; });
        live.innerHTML = fresh.innerHTML;
        live.dataset.version = fresh.dataset.version;
        document.title = fresh.ownerDocument.title;  // "(N) ...": what waits for you, kept current too
        live.querySelectorAll("details").forEach(function (d) { if (open[d.parentElement.id]) d.open = true; });
        tick();
        confirms();
        localTimes();
        scrolls();
        listen();
      })
      .catch(function () { loading = false; pending = true; });
  }

  // Times in the reader's own time zone; the server's UTC stays on hover. A time shown as
  // "5 min ago" keeps its words and gets both on hover.
  function pad(n) { return (n < 10 ? "0" : "") + n; }
  function zone(d) {
    try {
      var part = new Intl.DateTimeFormat(undefined, { timeZoneName: "short" }).formatToParts(d)
        .filter(function (p) { return p.type === "timeZoneName"; })[0];
      return part ? " " + part.value : "";
    } catch (e) { return ""; }
  }
  function localTimes() {
    document.querySelectorAll("time[datetime]").forEach(function (el) {
      if (el.dataset.local) return;
      var d = new Date(el.getAttribute("datetime"));
      if (isNaN(d.getTime())) return;
      var utc = el.getAttribute("title") || "";
      var local = d.getFullYear() + "-" + pad(d.getMonth() + 1) + "-" + pad(d.getDate()) + " " +
        pad(d.getHours()) + ":" + pad(d.getMinutes()) + ":" + pad(d.getSeconds()) + zone(d);
      if (el.textContent.trim() === utc.trim()) { el.textContent = local; el.title = utc; }
      else el.title = local + " (" + utc + ")";
      el.dataset.local = "1";
    });
  }

  // A running deploy's output: fetched every two seconds while its box is on the page (the
  // page itself is replaced once the deploy ends, and the box goes with it).
  function follow() {
    var box = document.querySelector("pre[data-output]");
    if (!box) return;
    fetch(box.dataset.output, { credentials: "same-origin" })
      .then(function (r) { return r.status === 200 ? r.text() : null; })
      .then(function (text) {
        if (text === null || !document.body.contains(box)) return;
        var atEnd = box.scrollTop + box.clientHeight >= box.scrollHeight - 4;
        box.textContent = text;
        if (atEnd) box.scrollTop = box.scrollHeight;
      })
      .catch(function () {});
  }

  function tick() {
    var now = Date.now();
    document.querySelectorAll("[data-expires]").forEach(function (el) {
      var left = Math.floor((Date.parse(el.dataset.expires) - now) / 1000);
      if (isNaN(left)) return;
      if (left <= 0) {
        // Lapsed: an approval would be refused now, so its button goes (the page updates once it is recorded).
        el.textContent = "expired";
        var card = el.closest("article.approval");
        if (card) card.querySelectorAll("button.primary").forEach(function (b) { b.disabled = true; });
        return;
      }
      var m = Math.floor(left / 60), s = left % 60;
      el.textContent = m < 60 ? m + " min " + (s < 10 ? "0" : "") + s + " s left"
        : Math.floor(m / 60) + " h " + (m % 60) + " min left";
    });
  }

  // A confirmation's "No, keep it": closes its question, and nothing is sent (without a script
  // the toggle itself closes it).
  function scrolls() {
    // A box wider than the screen (the matrix on a phone) scrolls inside itself: say so.
    document.querySelectorAll("[data-hint]").forEach(function (box) {
      var hint = document.getElementById(box.dataset.hint);
      if (hint) hint.hidden = box.scrollWidth <= box.clientWidth;
    });
  }
  window.addEventListener("resize", scrolls);

  function confirms() {
    document.querySelectorAll("button.confirm-no").forEach(function (b) { b.hidden = false; });
  }
  document.addEventListener("click", function (e) {
    var no = e.target.closest && e.target.closest("button.confirm-no");
    if (!no) return;
    var open = no.closest("details");
    if (open) { open.open = false; open.querySelector("summary").focus(); }
  });
  confirms();
  scrolls();

  // Finding a tag keeps the reason typed so far (without a script, the reason shown when the page came).
  document.addEventListener("submit", function (e) {
    if (e.target.id !== "find-tag") return;
    var typed = document.getElementById("d-reason"), kept = e.target.querySelector("input[name=reason]");
    if (typed && kept) kept.value = typed.value;
  });

  if (live) {
    live.dataset.prefix = "/console";
    live.addEventListener("focusout", function () { setTimeout(refresh, 0); });
    listen();
  }
  localTimes();
  tick();
  setInterval(tick, 1000);
  setInterval(follow, 2000);
})();
