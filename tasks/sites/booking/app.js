// Skyway Travel front-end. Bookings live in localStorage (fresh per browser context).
var APP = (function () {
  "use strict";
  function $(s) { return document.querySelector(s); }
  function esc(s) { return String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;"); }
  function params() {
    var out = {};
    location.search.replace(/^\?/, "").split("&").forEach(function (kv) {
      if (!kv) return;
      var i = kv.indexOf("=");
      var k = decodeURIComponent((i < 0 ? kv : kv.slice(0, i)).replace(/\+/g, " "));
      out[k] = i < 0 ? "" : decodeURIComponent(kv.slice(i + 1).replace(/\+/g, " "));
    });
    return out;
  }
  function qs(o) {
    return Object.keys(o).filter(function (k) { return o[k] !== "" && o[k] !== undefined && o[k] !== null; })
      .map(function (k) { return k + "=" + encodeURIComponent(o[k]); }).join("&");
  }
  var DAYS = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
  var MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
  function fmtDate(d) {
    if (!SW.validDate(d)) return d;
    var p = d.split("-");
    return DAYS[SW.weekday(d)] + " " + (+p[2]) + " " + MONTHS[+p[1] - 1] + " " + p[0];
  }
  function hm(min) {
    var d = Math.floor(min / 1440), m = min % 1440;
    var s = ("0" + Math.floor(m / 60)).slice(-2) + ":" + ("0" + (m % 60)).slice(-2);
    return d ? s + " (+" + d + ")" : s;
  }
  function dur(min) { return Math.floor(min / 60) + "h " + ("0" + (min % 60)).slice(-2) + "m"; }
  function eur(n) { return "€" + String(Math.round(n)).replace(/\B(?=(\d{3})+(?!\d))/g, ","); }
  function apName(code) { var a = SW.airport(code); return a ? a.city + " (" + code + ")" : code; }
  function flightNos(f) { return f.legs.map(function (l) { return l.flight; }).join(" + "); }
  function airlines(f) {
    var seen = [];
    f.legs.forEach(function (l) { if (seen.indexOf(SW_AIRLINES[l.airline]) < 0) seen.push(SW_AIRLINES[l.airline]); });
    return seen.join(" / ");
  }
  function stopsText(f) { return f.stops ? "1 stop (" + f.via + ", " + dur(f.layover) + ")" : "Direct"; }
  function load(key, dflt) { try { var v = localStorage.getItem(key); return v === null ? dflt : JSON.parse(v); } catch (e) { return dflt; } }
  function save(key, v) { try { localStorage.setItem(key, JSON.stringify(v)); } catch (e) { /* ignore */ } }
  function bookings() { return load("sw_bookings", []); }

  function initCommon() {
    var n = bookings().filter(function (b) { return b.status !== "Cancelled"; }).length;
    var el = $("#bookings-count");
    if (el) el.textContent = n ? " (" + n + ")" : "";
  }

  function airportOptions(sel, placeholder) {
    sel.innerHTML = '<option value="">' + placeholder + "</option>" + SW_AIRPORTS.map(function (a) {
      return '<option value="' + a.code + '">' + esc(a.city + " \u2013 " + a.name + " (" + a.code + ")") + "</option>";
    }).join("");
  }

  // ---------- search form ----------
  function initSearch() {
    initCommon();
    airportOptions($("#from"), "Select origin");
    airportOptions($("#to"), "Select destination");
    var p = params();
    if (p.from) $("#from").value = p.from;
    if (p.to) $("#to").value = p.to;
    if (p.depart) $("#depart").value = p.depart;
    if (p["return"]) $("#return").value = p["return"];
    if (p.pax) $("#passengers").value = p.pax;
    if (p.cabin && document.getElementById("cabin-" + p.cabin)) document.getElementById("cabin-" + p.cabin).checked = true;
    if (p.direct === "1") $("#direct-only").checked = true;
    $("#swap").addEventListener("click", function (e) {
      e.preventDefault();
      var f = $("#from").value; $("#from").value = $("#to").value; $("#to").value = f;
    });
    $("#search-form").addEventListener("submit", function (e) {
      var err = [];
      var from = $("#from").value, to = $("#to").value, dep = $("#depart").value, ret = $("#return").value;
      var pax = parseInt($("#passengers").value, 10);
      if (!from) err.push("Please choose where you are flying from.");
      if (!to) err.push("Please choose where you are flying to.");
      if (from && to && from === to) err.push("Origin and destination must be different.");
      if (!dep) err.push("Please choose a departure date.");
      else if (!SW.validDate(dep)) err.push("Please enter a valid departure date.");
      if (ret && !SW.validDate(ret)) err.push("Please enter a valid return date.");
      else if (ret && dep && ret < dep) err.push("The return date must be on or after the departure date.");
      if (isNaN(pax) || pax < 1 || pax > 9) err.push("Passengers must be between 1 and 9.");
      var box = $("#search-error");
      if (err.length) {
        e.preventDefault();
        box.innerHTML = err.map(esc).join("<br>");
        box.style.display = "block";
      } else {
        box.style.display = "none";
      }
    });
  }

  // ---------- results ----------
  function initResults() {
    initCommon();
    var p = params();
    var pax = Math.max(1, Math.min(9, parseInt(p.pax, 10) || 1));
    var cab = SW.cabin(p.cabin);
    var stage = p["return"] && p.out ? "return" : "outbound";
    var from = stage === "return" ? p.to : p.from;
    var to = stage === "return" ? p.from : p.to;
    var date = stage === "return" ? p["return"] : p.depart;
    var base = { from: p.from, to: p.to, depart: p.depart, "return": p["return"] || "", pax: pax, cabin: cab.id, direct: p.direct === "1" ? "1" : "" };
    $("#modify-search").href = "index.html?" + qs(base);
    if (!SW.airport(p.from) || !SW.airport(p.to) || !SW.validDate(p.depart)) {
      $("#results-title").textContent = "Incomplete search";
      $("#no-results").textContent = "Please start a new search from the home page.";
      $("#no-results").style.display = "block";
      return;
    }
    $("#results-title").textContent = (stage === "return" ? "Choose your return flight: " : (p["return"] ? "Choose your outbound flight: " : "Choose your flight: ")) + apName(from) + " \u2192 " + apName(to);
    $("#search-summary").textContent = SW.airport(p.from).city + " \u2192 " + SW.airport(p.to).city + " \u00b7 " + fmtDate(p.depart) +
      (p["return"] ? " \u2013 " + fmtDate(p["return"]) + " (return)" : " (one way)") + " \u00b7 " + pax + (pax === 1 ? " passenger" : " passengers") + " \u00b7 " + cab.name;
    $("#step-label").textContent = p["return"] ? (stage === "return" ? "Step 2 of 3: return flight" : "Step 1 of 3: outbound flight") : "Step 1 of 2: choose a flight";
    if (stage === "return") {
      var o = SW.findFlight(p.from, p.to, p.depart, cab.id, p.out);
      if (o) {
        $("#selected-outbound").innerHTML = "<strong>Outbound selected:</strong> " + esc(flightNos(o)) + " \u00b7 " + fmtDate(p.depart) + " \u00b7 " + hm(o.dep) + " \u2192 " + hm(o.arr) +
          " \u00b7 " + eur(o.price) + ' per person \u00b7 <a href="results.html?' + qs(base) + '" id="change-outbound">Change</a>';
        $("#selected-outbound").style.display = "block";
      }
    }
    var sortSel = $("#sort"), directBox = $("#filter-direct");
    sortSel.value = ["price", "departure", "duration"].indexOf(p.sort) >= 0 ? p.sort : "price";
    directBox.checked = p.direct === "1";
    function render() {
      var list = SW.flights(from, to, date, cab.id);
      if (directBox.checked) list = list.filter(function (f) { return f.stops === 0; });
      var key = sortSel.value;
      list.sort(function (a, b) {
        var d = key === "price" ? a.price - b.price : key === "duration" ? a.duration - b.duration : a.dep - b.dep;
        return d || a.dep - b.dep || (a.id < b.id ? -1 : 1);
      });
      $("#result-count").textContent = list.length + (list.length === 1 ? " flight" : " flights") + " on " + fmtDate(date);
      $("#no-results").textContent = "No flights match your search on this date. Try another date or allow connections.";
      $("#no-results").style.display = list.length ? "none" : "block";
      $("#results").innerHTML = list.map(function (f) {
        return '<div class="flight" id="flight-' + f.id + '">' +
          '<div class="airline"><span class="tail tail-' + f.legs[0].airline + '"></span><div><div class="flight-number">' + esc(flightNos(f)) + '</div><div class="muted">' + esc(airlines(f)) + "</div></div></div>" +
          '<div class="times"><span class="dep">' + hm(f.dep) + '</span><span class="line"></span><span class="arr">' + hm(f.arr) + "</span>" +
          '<div class="muted">' + f.legs[0].from + " \u2192 " + f.legs[f.legs.length - 1].to + "</div></div>" +
          '<div><div class="duration">' + dur(f.duration) + '</div><div class="stops ' + (f.stops ? "stop1" : "direct") + '">' + stopsText(f) + "</div></div>" +
          '<div class="pricebox"><div class="price">' + eur(f.price) + '</div><div class="muted">per person</div>' +
          (pax > 1 ? '<div class="muted total-price">' + eur(f.price * pax) + " total</div>" : "") +
          '<button type="button" class="btn select-btn" id="select-' + f.id + '" data-id="' + f.id + '">Select</button></div>' +
          "</div>";
      }).join("");
      Array.prototype.forEach.call(document.querySelectorAll(".select-btn"), function (b) {
        b.addEventListener("click", function () {
          var id = b.getAttribute("data-id");
          var next = {};
          for (var k in base) next[k] = base[k];
          if (p["return"] && stage === "outbound") {
            next.out = id;
            location.href = "results.html?" + qs(next);
          } else if (stage === "return") {
            next.out = p.out; next.ret = id;
            location.href = "passenger.html?" + qs(next);
          } else {
            next.out = id;
            location.href = "passenger.html?" + qs(next);
          }
        });
      });
      var st = {};
      for (var k2 in base) st[k2] = base[k2];
      st.direct = directBox.checked ? "1" : "";
      if (stage === "return") st.out = p.out;
      if (sortSel.value !== "price") st.sort = sortSel.value;
      try { history.replaceState(null, "", "results.html?" + qs(st)); } catch (e) { /* ignore */ }
      base.direct = st.direct;
    }
    sortSel.addEventListener("change", render);
    directBox.addEventListener("change", render);
    render();
  }

  // ---------- passenger details ----------
  function trip(p) {
    var cab = SW.cabin(p.cabin);
    var pax = Math.max(1, Math.min(9, parseInt(p.pax, 10) || 1));
    var out = SW.findFlight(p.from, p.to, p.depart, cab.id, p.out);
    var ret = p["return"] ? SW.findFlight(p.to, p.from, p["return"], cab.id, p.ret) : null;
    return { cab: cab, pax: pax, out: out, ret: ret, ok: !!out && (!p["return"] || !!ret) };
  }
  function legLine(f, date) {
    return esc(flightNos(f)) + " \u00b7 " + fmtDate(date) + " \u00b7 " + hm(f.dep) + " " + f.legs[0].from + " \u2192 " + hm(f.arr) + " " + f.legs[f.legs.length - 1].to + " \u00b7 " + stopsText(f);
  }
  function quote(t, seatId) {
    var seat = SW_SEATS.filter(function (s) { return s.id === seatId; })[0] || SW_SEATS[0];
    var journeys = t.ret ? 2 : 1;
    var fares = (t.out.price + (t.ret ? t.ret.price : 0)) * t.pax;
    var extras = seat.fee * t.pax * journeys;
    return { fares: fares, extras: extras, total: fares + extras, seat: seat, journeys: journeys };
  }
  function bookingRef(o) {
    var alphabet = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789";
    var h = SW.fnv(JSON.stringify(o)), s = "";
    for (var i = 0; i < 6; i++) { s += alphabet.charAt(h % 32); h = Math.floor(h / 32); }
    return s;
  }
  function initPassenger() {
    initCommon();
    var p = params();
    var t = trip(p);
    if (!t.ok) {
      $("#passenger-page").innerHTML = '<div class="panel" id="no-flight"><h1>Flight not available</h1><p>The selected flight could not be found. <a href="index.html">Start a new search</a>.</p></div>';
      return;
    }
    $("#trip-summary").innerHTML = '<div id="summary-outbound"><strong>Outbound:</strong> ' + legLine(t.out, p.depart) + "</div>" +
      (t.ret ? '<div id="summary-return"><strong>Return:</strong> ' + legLine(t.ret, p["return"]) + "</div>" : "") +
      '<div id="summary-cabin"><strong>Cabin:</strong> ' + esc(t.cab.name) + " \u00b7 <strong>Passengers:</strong> " + t.pax + "</div>";
    var names = "";
    for (var i = 1; i <= t.pax; i++) {
      names += '<div class="field"><label for="pax-name-' + i + '">Passenger ' + i + " full name" + (i === 1 ? " (lead passenger)" : "") + "</label>" +
        '<input id="pax-name-' + i + '" name="pax' + i + '" autocomplete="off"><div class="error" id="error-pax-name-' + i + '"></div></div>';
    }
    $("#pax-fields").innerHTML = names;
    $("#seat").innerHTML = SW_SEATS.map(function (s) { return '<option value="' + s.id + '">' + esc(s.name) + "</option>"; }).join("");
    function renderQuote() {
      var q = quote(t, $("#seat").value);
      $("#fare-breakdown").innerHTML =
        '<div class="row"><span>Outbound ' + esc(flightNos(t.out)) + " (" + eur(t.out.price) + " \u00d7 " + t.pax + ")</span><span>" + eur(t.out.price * t.pax) + "</span></div>" +
        (t.ret ? '<div class="row"><span>Return ' + esc(flightNos(t.ret)) + " (" + eur(t.ret.price) + " \u00d7 " + t.pax + ")</span><span>" + eur(t.ret.price * t.pax) + "</span></div>" : "") +
        (q.extras ? '<div class="row" id="extras-row"><span>Extra legroom (€25 \u00d7 ' + t.pax + " \u00d7 " + q.journeys + ")</span><span>" + eur(q.extras) + "</span></div>" : "");
      $("#price-total").textContent = eur(q.total);
    }
    $("#seat").addEventListener("change", renderQuote);
    renderQuote();
    $("#passenger-form").addEventListener("submit", function (e) {
      e.preventDefault();
      var errors = 0, list = [];
      for (var i = 1; i <= t.pax; i++) {
        var v = document.getElementById("pax-name-" + i).value.trim().replace(/\s+/g, " ");
        var ok = /^[A-Za-zÀ-ÿ'’.\-]+( [A-Za-zÀ-ÿ'’.\-]+)+$/.test(v);
        document.getElementById("error-pax-name-" + i).textContent = ok ? "" : "Please enter the first and last name of passenger " + i + ".";
        document.getElementById("pax-name-" + i).parentNode.classList.toggle("invalid", !ok);
        if (!ok) errors++;
        list.push(v);
      }
      var email = $("#email").value.trim();
      var eok = /^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email);
      $("#error-email").textContent = eok ? "" : "Please enter a valid email address.";
      $("#email").parentNode.classList.toggle("invalid", !eok);
      if (!eok) errors++;
      var meal = document.querySelector('input[name="meal"]:checked');
      $("#error-meal").textContent = meal ? "" : "Please choose a meal option.";
      if (!meal) errors++;
      var box = $("#form-errors");
      if (errors) {
        box.textContent = "Please correct " + errors + (errors === 1 ? " error" : " errors") + " to continue.";
        box.style.display = "block";
        return;
      }
      box.style.display = "none";
      var seatId = $("#seat").value;
      var q = quote(t, seatId);
      var mealObj = SW_MEALS.filter(function (m) { return m.id === meal.value; })[0];
      var key = [p.from, p.to, p.depart, p["return"] || "", t.pax, t.cab.id, t.out.id, t.ret ? t.ret.id : "", list.join("|").toLowerCase(), email.toLowerCase(), seatId, meal.value];
      var ref = bookingRef(key);
      var b = {
        ref: ref, from: p.from, to: p.to, depart: p.depart, returnDate: p["return"] || "", pax: t.pax, cabin: t.cab.name,
        out: { id: t.out.id, flight: flightNos(t.out), dep: t.out.dep, arr: t.out.arr, stops: stopsText(t.out), price: t.out.price },
        ret: t.ret ? { id: t.ret.id, flight: flightNos(t.ret), dep: t.ret.dep, arr: t.ret.arr, stops: stopsText(t.ret), price: t.ret.price } : null,
        names: list, email: email, phone: $("#phone").value.trim(), seat: q.seat.name.replace(/ \(.*\)$/, ""), meal: mealObj.name,
        fares: q.fares, extras: q.extras, total: q.total, status: "Confirmed"
      };
      var all = bookings().filter(function (x) { return x.ref !== ref; });
      all.push(b);
      save("sw_bookings", all);
      location.href = "confirmation.html?ref=" + ref;
    });
  }

  // ---------- confirmation ----------
  function initConfirmation() {
    initCommon();
    var ref = params().ref || "";
    var b = bookings().filter(function (x) { return x.ref === ref; })[0];
    if (!b) {
      $("#confirmation").innerHTML = '<div class="panel" id="no-booking"><h1>Booking not found</h1><p>We could not find booking \u201c' + esc(ref) + '\u201d. See <a href="bookings.html">My bookings</a>.</p></div>';
      return;
    }
    $("#booking-ref").textContent = b.ref;
    $("#conf-status").textContent = b.status;
    $("#conf-route").textContent = apName(b.from) + " \u2192 " + apName(b.to) + (b.ret ? " (return)" : " (one way)");
    $("#conf-outbound").textContent = b.out.flight + " \u00b7 " + fmtDate(b.depart) + " \u00b7 " + hm(b.out.dep) + " \u2192 " + hm(b.out.arr) + " \u00b7 " + b.out.stops;
    if (b.ret) {
      $("#conf-return").textContent = b.ret.flight + " \u00b7 " + fmtDate(b.returnDate) + " \u00b7 " + hm(b.ret.dep) + " \u2192 " + hm(b.ret.arr) + " \u00b7 " + b.ret.stops;
    } else {
      $("#conf-return-row").style.display = "none";
    }
    $("#conf-cabin").textContent = b.cabin;
    $("#conf-passengers").innerHTML = b.names.map(function (n) { return "<li>" + esc(n) + "</li>"; }).join("");
    $("#conf-seat").textContent = b.seat;
    $("#conf-meal").textContent = b.meal;
    $("#conf-email").textContent = b.email;
    $("#conf-total").textContent = eur(b.total);
  }

  // ---------- my bookings ----------
  function initBookings() {
    initCommon();
    function render() {
      var all = bookings();
      var active = all.filter(function (b) { return b.status !== "Cancelled"; }).length;
      $("#booking-count").textContent = all.length ? all.length + (all.length === 1 ? " booking" : " bookings") + " (" + active + " active)" : "";
      $("#no-bookings").style.display = all.length ? "none" : "block";
      $("#bookings-table").style.display = all.length ? "table" : "none";
      $("#bookings-body").innerHTML = all.map(function (b) {
        return '<tr id="booking-' + b.ref + '" class="booking-row' + (b.status === "Cancelled" ? " cancelled" : "") + '">' +
          '<td><a href="confirmation.html?ref=' + b.ref + '" class="ref">' + b.ref + "</a></td>" +
          "<td>" + esc(apName(b.from)) + " \u2192 " + esc(apName(b.to)) + "</td>" +
          "<td>" + fmtDate(b.depart) + (b.ret ? "<br><span class=\"muted\">return " + fmtDate(b.returnDate) + "</span>" : "") + "</td>" +
          "<td>" + esc(b.out.flight) + (b.ret ? "<br>" + esc(b.ret.flight) : "") + "</td>" +
          "<td>" + b.pax + "</td><td>" + esc(b.cabin) + "</td><td>" + eur(b.total) + "</td>" +
          '<td id="status-' + b.ref + '" class="status">' + b.status + "</td>" +
          "<td>" + (b.status === "Cancelled" ? "" :
            '<button type="button" class="btn small secondary" id="cancel-' + b.ref + '" data-ref="' + b.ref + '">Cancel</button>' +
            '<button type="button" class="btn small danger" id="confirm-cancel-' + b.ref + '" data-ref="' + b.ref + '" style="display:none">Yes, cancel</button>') + "</td></tr>";
      }).join("");
      Array.prototype.forEach.call(document.querySelectorAll("[id^=cancel-]"), function (btn) {
        btn.addEventListener("click", function () {
          btn.style.display = "none";
          document.getElementById("confirm-cancel-" + btn.getAttribute("data-ref")).style.display = "inline-block";
        });
      });
      Array.prototype.forEach.call(document.querySelectorAll("[id^=confirm-cancel-]"), function (btn) {
        btn.addEventListener("click", function () {
          var all2 = bookings();
          all2.forEach(function (b) { if (b.ref === btn.getAttribute("data-ref")) b.status = "Cancelled"; });
          save("sw_bookings", all2);
          initCommon();
          render();
        });
      });
    }
    render();
  }

  return { initSearch: initSearch, initResults: initResults, initPassenger: initPassenger, initConfirmation: initConfirmation,
    initBookings: initBookings, initCommon: initCommon, fmtDate: fmtDate, hm: hm };
})();
