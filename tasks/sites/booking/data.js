// Skyway Travel data: airports, airlines and a deterministic timetable generator.
var SW_AIRPORTS = [
  { code: "LHR", city: "London", name: "London Heathrow", country: "United Kingdom", lat: 51.47, lon: -0.45, centre: 24, lounge: true },
  { code: "CDG", city: "Paris", name: "Paris Charles de Gaulle", country: "France", lat: 49.01, lon: 2.55, centre: 25, lounge: true },
  { code: "AMS", city: "Amsterdam", name: "Amsterdam Schiphol", country: "Netherlands", lat: 52.31, lon: 4.76, centre: 15, lounge: true },
  { code: "FRA", city: "Frankfurt", name: "Frankfurt am Main", country: "Germany", lat: 50.03, lon: 8.57, centre: 12, lounge: true },
  { code: "MAD", city: "Madrid", name: "Madrid Barajas", country: "Spain", lat: 40.47, lon: -3.56, centre: 13, lounge: false },
  { code: "FCO", city: "Rome", name: "Rome Fiumicino", country: "Italy", lat: 41.80, lon: 12.25, centre: 30, lounge: false },
  { code: "LIS", city: "Lisbon", name: "Lisbon Humberto Delgado", country: "Portugal", lat: 38.77, lon: -9.13, centre: 7, lounge: false },
  { code: "VIE", city: "Vienna", name: "Vienna International", country: "Austria", lat: 48.11, lon: 16.57, centre: 18, lounge: true },
  { code: "CPH", city: "Copenhagen", name: "Copenhagen Kastrup", country: "Denmark", lat: 55.62, lon: 12.65, centre: 8, lounge: false },
  { code: "DUB", city: "Dublin", name: "Dublin Airport", country: "Ireland", lat: 53.43, lon: -6.25, centre: 10, lounge: false }
];

var SW_AIRLINES = { SW: "Skyway Air", BC: "Bluecrest Airlines", NV: "Nordvik Air", TQ: "Tramontana" };

var SW_CABINS = [
  { id: "economy", name: "Economy", factor: 1.0 },
  { id: "premium", name: "Premium Economy", factor: 1.65 },
  { id: "business", name: "Business", factor: 2.9 }
];

var SW_SEATS = [
  { id: "none", name: "No preference", fee: 0 },
  { id: "window", name: "Window", fee: 0 },
  { id: "aisle", name: "Aisle", fee: 0 },
  { id: "legroom", name: "Extra legroom (+€25)", fee: 25 }
];

var SW_MEALS = [
  { id: "standard", name: "Standard" },
  { id: "vegetarian", name: "Vegetarian" },
  { id: "vegan", name: "Vegan" },
  { id: "none", name: "No meal" }
];

// Pairs with no direct service (either direction): passengers connect via a hub.
var SW_NO_DIRECT = ["DUB-VIE", "LIS-CPH", "LIS-VIE", "DUB-FCO", "MAD-CPH"];
var SW_HUBS = ["AMS", "FRA"];

var SW = (function () {
  "use strict";
  var SLOTS = [375, 440, 515, 605, 690, 780, 865, 950, 1040, 1125, 1210]; // minutes after midnight
  var DAY_PATTERNS = [
    { mask: [1, 1, 1, 1, 1, 1, 1], label: "Daily" },
    { mask: [1, 1, 1, 1, 1, 1, 1], label: "Daily" },
    { mask: [1, 1, 1, 1, 1, 1, 1], label: "Daily" },
    { mask: [0, 1, 1, 1, 1, 1, 0], label: "Mon–Fri" },
    { mask: [1, 1, 1, 1, 1, 0, 1], label: "Not Fri" },
    { mask: [1, 1, 0, 1, 0, 1, 0], label: "Sun, Mon, Wed, Fri" },
    { mask: [1, 1, 1, 1, 1, 1, 0], label: "Not Sat" }
  ]; // mask index = getUTCDay() (0 = Sunday)
  var WEEKDAY_FACTOR = [1.15, 1.10, 0.90, 0.92, 1.05, 1.25, 0.95];
  var DATE_FACTOR = [0.90, 0.95, 1.00, 1.10, 1.20];
  var AIRLINE_CODES = ["SW", "BC", "NV", "TQ"];

  function fnv(str) {
    var h = 0x811c9dc5;
    for (var i = 0; i < str.length; i++) { h ^= str.charCodeAt(i); h = Math.imul(h, 0x01000193) >>> 0; }
    return h >>> 0;
  }
  function airport(code) {
    for (var i = 0; i < SW_AIRPORTS.length; i++) if (SW_AIRPORTS[i].code === code) return SW_AIRPORTS[i];
    return null;
  }
  function distance(a, b) {
    var A = airport(a), B = airport(b), r = Math.PI / 180;
    var dlat = (B.lat - A.lat) * r, dlon = (B.lon - A.lon) * r;
    var h = Math.sin(dlat / 2) * Math.sin(dlat / 2) + Math.cos(A.lat * r) * Math.cos(B.lat * r) * Math.sin(dlon / 2) * Math.sin(dlon / 2);
    return Math.round(2 * 6371 * Math.asin(Math.sqrt(h)));
  }
  function flightMinutes(a, b) { return Math.round((35 + distance(a, b) / 760 * 60) / 5) * 5; }
  function hasDirect(a, b) { return SW_NO_DIRECT.indexOf(a + "-" + b) < 0 && SW_NO_DIRECT.indexOf(b + "-" + a) < 0; }
  function pairIndex(a, b) {
    var i = -1, j = -1;
    SW_AIRPORTS.forEach(function (x, k) { if (x.code === a) i = k; if (x.code === b) j = k; });
    return i * SW_AIRPORTS.length + j;
  }

  // All scheduled services between a and b (ignoring the date).
  function schedule(a, b) {
    if (a === b || !airport(a) || !airport(b)) return [];
    var pi = pairIndex(a, b), out = [];
    if (hasDirect(a, b)) {
      var h = fnv(a + b);
      var n = 2 + h % 3;
      var used = {};
      for (var i = 0; i < n; i++) {
        var hi = fnv(a + b + i);
        var slot = hi % SLOTS.length;
        while (used[slot]) slot = (slot + 1) % SLOTS.length;
        used[slot] = 1;
        var code = AIRLINE_CODES[(hi >>> 4) % AIRLINE_CODES.length];
        var num = 100 + ((pi * 4 + i) * 37) % 500;
        var dur = flightMinutes(a, b);
        var pat = DAY_PATTERNS[(hi >>> 8) % DAY_PATTERNS.length];
        out.push({
          id: code + num, legs: [{ flight: code + " " + num, airline: code, from: a, to: b, dep: SLOTS[slot], arr: SLOTS[slot] + dur }],
          dep: SLOTS[slot], arr: SLOTS[slot] + dur, duration: dur, stops: 0, via: "", days: pat.mask, daysLabel: pat.label,
          base: 49 + distance(a, b) * 0.09
        });
      }
    }
    SW_HUBS.forEach(function (hub, j) {
      if (hub === a || hub === b) return;
      var hj = fnv(a + hub + b);
      var slot = hj % 6;
      var code1 = AIRLINE_CODES[(hj >>> 3) % AIRLINE_CODES.length];
      var code2 = AIRLINE_CODES[(hj >>> 6) % AIRLINE_CODES.length];
      var n1 = 600 + ((pi * 2 + j) * 2 * 7) % 400;
      var n2 = 600 + ((pi * 2 + j) * 2 * 7 + 7) % 400;
      var d1 = flightMinutes(a, hub), d2 = flightMinutes(hub, b);
      var lay = 50 + ((hj >>> 9) % 6) * 20;
      var dep = SLOTS[slot], arr1 = dep + d1, dep2 = arr1 + lay, arr = dep2 + d2;
      var pat = DAY_PATTERNS[(hj >>> 12) % DAY_PATTERNS.length];
      out.push({
        id: code1 + n1 + "-" + code2 + n2,
        legs: [{ flight: code1 + " " + n1, airline: code1, from: a, to: hub, dep: dep, arr: arr1 },
               { flight: code2 + " " + n2, airline: code2, from: hub, to: b, dep: dep2, arr: arr }],
        dep: dep, arr: arr, duration: arr - dep, stops: 1, via: hub, layover: lay, days: pat.mask, daysLabel: pat.label,
        base: 45 + (distance(a, hub) + distance(hub, b)) * 0.07
      });
    });
    return out;
  }
  function weekday(date) {
    var m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(date || "");
    if (!m) return -1;
    return new Date(Date.UTC(+m[1], +m[2] - 1, +m[3])).getUTCDay();
  }
  function validDate(date) {
    var m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(date || "");
    if (!m) return false;
    var d = new Date(Date.UTC(+m[1], +m[2] - 1, +m[3]));
    return d.getUTCFullYear() === +m[1] && d.getUTCMonth() === +m[2] - 1 && d.getUTCDate() === +m[3];
  }
  function cabin(id) {
    for (var i = 0; i < SW_CABINS.length; i++) if (SW_CABINS[i].id === id) return SW_CABINS[i];
    return SW_CABINS[0];
  }
  // Price per passenger in euros for a service on a date in a cabin.
  function price(f, date, cabinId) {
    var wd = weekday(date);
    var p = f.base * WEEKDAY_FACTOR[wd] * DATE_FACTOR[fnv(f.id + date) % DATE_FACTOR.length] * cabin(cabinId).factor;
    return Math.round(p);
  }
  // Services operating on a given date, with prices.
  function flights(a, b, date, cabinId) {
    var wd = weekday(date);
    if (wd < 0) return [];
    return schedule(a, b).filter(function (f) { return f.days[wd]; }).map(function (f) {
      var g = {};
      for (var k in f) g[k] = f[k];
      g.date = date;
      g.price = price(f, date, cabinId);
      return g;
    });
  }
  function findFlight(a, b, date, cabinId, id) {
    var l = flights(a, b, date, cabinId);
    for (var i = 0; i < l.length; i++) if (l[i].id === id) return l[i];
    return null;
  }
  return { fnv: fnv, airport: airport, distance: distance, schedule: schedule, flights: flights, findFlight: findFlight,
    weekday: weekday, validDate: validDate, cabin: cabin, price: price };
})();
