// Northwind Goods front-end. All state lives in localStorage (fresh per browser context).
var NW = (function () {
  "use strict";

  function $(sel) { return document.querySelector(sel); }
  function esc(s) {
    return String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
  }
  function fmt(n) { return "$" + n.toFixed(2); }
  function round2(n) { return Math.round(n * 100) / 100; }
  function params() {
    var out = {};
    var q = location.search.replace(/^\?/, "");
    if (!q) return out;
    q.split("&").forEach(function (kv) {
      if (!kv) return;
      var i = kv.indexOf("=");
      var k = decodeURIComponent((i < 0 ? kv : kv.slice(0, i)).replace(/\+/g, " "));
      var v = i < 0 ? "" : decodeURIComponent(kv.slice(i + 1).replace(/\+/g, " "));
      out[k] = v;
    });
    return out;
  }
  function slug(s) { return String(s).toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-|-$/g, ""); }
  function product(id) {
    for (var i = 0; i < NW_PRODUCTS.length; i++) if (NW_PRODUCTS[i].id === id) return NW_PRODUCTS[i];
    return null;
  }
  function category(id) {
    for (var i = 0; i < NW_CATEGORIES.length; i++) if (NW_CATEGORIES[i].id === id) return NW_CATEGORIES[i];
    return null;
  }
  function stars(r) {
    var full = Math.round(r);
    var s = "";
    for (var i = 0; i < 5; i++) s += i < full ? "\u2605" : "\u2606";
    return s;
  }

  // ---------- storage ----------
  function load(key, dflt) {
    try { var v = localStorage.getItem(key); return v === null ? dflt : JSON.parse(v); } catch (e) { return dflt; }
  }
  function save(key, v) { try { localStorage.setItem(key, JSON.stringify(v)); } catch (e) { /* ignore */ } }
  function getCart() { return load("nw_cart", []); }
  function setCart(c) { save("nw_cart", c); updateCartCount(); }
  function getShipping() { return load("nw_shipping", "standard"); }
  function setShipping(s) { save("nw_shipping", s); }
  function getPromo() { return load("nw_promo", ""); }
  function lineId(item) { return item.id + (item.option ? "-" + slug(item.option) : ""); }
  function cartCount() { return getCart().reduce(function (a, it) { return a + it.qty; }, 0); }
  function updateCartCount() {
    var el = $("#cart-count");
    if (el) el.textContent = String(cartCount());
  }
  function addToCart(id, option, qty) {
    var cart = getCart();
    var p = product(id);
    var existing = null;
    cart.forEach(function (it) { if (it.id === id && (it.option || "") === (option || "")) existing = it; });
    var have = existing ? existing.qty : 0;
    if (have + qty > p.stock) return { ok: false, max: p.stock - have };
    if (existing) existing.qty += qty; else cart.push({ id: id, option: option || "", qty: qty });
    setCart(cart);
    return { ok: true, qty: have + qty };
  }
  function shippingMethod(id) {
    for (var i = 0; i < NW_SHIPPING.length; i++) if (NW_SHIPPING[i].id === id) return NW_SHIPPING[i];
    return NW_SHIPPING[0];
  }
  function totals(cart, shipId, promo) {
    var subtotal = 0;
    cart.forEach(function (it) { subtotal += product(it.id).price * it.qty; });
    subtotal = round2(subtotal);
    var pr = NW_PROMOS[promo];
    var discount = pr ? round2(subtotal * pr.percent / 100) : 0;
    var m = shippingMethod(shipId);
    var ship = m.price;
    if (m.id === "standard" && subtotal >= NW_FREE_SHIPPING_THRESHOLD) ship = 0;
    if (cart.length === 0) ship = 0;
    return { subtotal: subtotal, discount: discount, shipping: ship, total: round2(subtotal - discount + ship), method: m };
  }
  function fnv(str) {
    var h = 0x811c9dc5;
    for (var i = 0; i < str.length; i++) {
      h ^= str.charCodeAt(i);
      h = Math.imul(h, 0x01000193) >>> 0;
    }
    return h >>> 0;
  }
  function orderNumber(cart, shipId, promo) {
    var key = cart.map(function (it) { return it.id + ":" + (it.option || "") + ":" + it.qty; }).sort().join(";") + "|" + shipId + "|" + (promo || "");
    var alphabet = "23456789ABCDEFGHJKLMNPQRSTUVWXYZ", h = fnv(key), out = "";
    for (var i = 0; i < 7; i++) { out += alphabet.charAt(h % 32); h = Math.floor(h / 32); }
    return "NW-" + out;
  }

  // ---------- shared bits ----------
  var ICONS = {
    kitchen: '<path d="M14 18h30v26a8 8 0 0 1-8 8H22a8 8 0 0 1-8-8z"/><path d="M44 24h4a7 7 0 0 1 0 14h-4" fill="none"/>',
    home: '<path d="M10 30 32 12l22 18"/><path d="M16 28v24h32V28L32 15z"/><rect x="27" y="38" width="10" height="14" fill="#fff"/>',
    outdoor: '<path d="M6 52 24 20l10 16 6-8 18 24z"/><path d="M24 20l-5 9h10z" fill="#fff"/>',
    electronics: '<path d="M14 36v-4a18 18 0 0 1 36 0v4" fill="none"/><rect x="10" y="34" width="10" height="16" rx="3"/><rect x="44" y="34" width="10" height="16" rx="3"/>',
    office: '<rect x="16" y="10" width="32" height="44" rx="3"/><path d="M22 20h20M22 28h20M22 36h14" fill="none"/>',
    apparel: '<path d="M22 10 10 18l5 10 6-3v29h22V25l6 3 5-10-12-8c-2 5-6 7-10 7s-8-2-10-7z"/>'
  };
  function thumb(p, big) {
    var size = big ? 200 : 84;
    return '<div class="' + (big ? "product-image" : "thumb") + '" style="background:' + (big ? "#fff" : "#f1eee6") + '">' +
      '<svg class="product-icon" width="' + size + '" height="' + size + '" viewBox="0 0 64 64" aria-hidden="true"><g fill="' + p.color +
      '" stroke="#2b2b2b" stroke-width="2" stroke-linejoin="round">' + ICONS[p.category] + "</g></svg></div>";
  }
  function card(p) {
    var stock = p.stock > 0 ? '<span class="instock">In stock</span>' : '<span class="oos">Out of stock</span>';
    return '<div class="product-card" id="card-' + p.id + '">' +
      '<a href="product.html?id=' + p.id + '" tabindex="-1">' + thumb(p) + "</a>" +
      '<a class="card-link" href="product.html?id=' + p.id + '">' + esc(p.name) + "</a>" +
      '<div class="meta">' + esc(p.brand) + " · " + esc(category(p.category).name) + "</div>" +
      '<div class="meta"><span class="stars">' + stars(p.rating) + "</span> " + p.rating.toFixed(1) + " (" + p.reviews + ")</div>" +
      '<div class="price">' + fmt(p.price) + "</div>" + stock + "</div>";
  }
  function initCommon() {
    updateCartCount();
    var p = params();
    var box = $("#search-input");
    if (box && p.q && location.pathname.indexOf("search") >= 0) box.value = p.q;
  }

  // ---------- home ----------
  function initHome() {
    initCommon();
    var featured = NW_PRODUCTS.filter(function (p) { return p.featured; });
    $("#featured").innerHTML = featured.map(card).join("");
  }

  // ---------- listing / search ----------
  function matches(p, q) {
    if (!q) return true;
    var hay = (p.name + " " + p.brand + " " + category(p.category).name + " " + p.description + " " +
      p.specs.map(function (s) { return s[1]; }).join(" ")).toLowerCase();
    return q.toLowerCase().split(/\s+/).filter(Boolean).every(function (t) { return hay.indexOf(t) >= 0; });
  }
  function initListing(isSearch) {
    initCommon();
    var p = params();
    var state = {
      q: p.q || "",
      cat: p.cat || "",
      min: p.min || "",
      max: p.max || "",
      instock: p.instock === "1",
      sort: p.sort || "featured"
    };
    var catSel = $("#filter-category");
    catSel.innerHTML = '<option value="">All categories</option>' +
      NW_CATEGORIES.map(function (c) { return '<option value="' + c.id + '">' + esc(c.name) + "</option>"; }).join("");
    catSel.value = state.cat;
    $("#price-min").value = state.min;
    $("#price-max").value = state.max;
    $("#in-stock").checked = state.instock;
    $("#sort").value = state.sort;
    if (isSearch) {
      $("#search-heading").textContent = state.q ? 'Results for \u201c' + state.q + '\u201d' : "Search";
    } else {
      var c = category(state.cat);
      $("#listing-heading").textContent = c ? c.name : "All products";
      document.title = (c ? c.name : "All products") + " \u2013 Northwind Goods";
    }

    function render() {
      var min = parseFloat(state.min), max = parseFloat(state.max);
      var list = NW_PRODUCTS.filter(function (pr) {
        if (!matches(pr, state.q)) return false;
        if (state.cat && pr.category !== state.cat) return false;
        if (!isNaN(min) && pr.price < min) return false;
        if (!isNaN(max) && pr.price > max) return false;
        if (state.instock && pr.stock <= 0) return false;
        return true;
      });
      var idx = {};
      NW_PRODUCTS.forEach(function (pr, i) { idx[pr.id] = i; });
      var cmp = {
        featured: function (a, b) { return (b.featured ? 1 : 0) - (a.featured ? 1 : 0) || idx[a.id] - idx[b.id]; },
        "price-asc": function (a, b) { return a.price - b.price || idx[a.id] - idx[b.id]; },
        "price-desc": function (a, b) { return b.price - a.price || idx[a.id] - idx[b.id]; },
        rating: function (a, b) { return b.rating - a.rating || b.reviews - a.reviews; },
        name: function (a, b) { return a.name < b.name ? -1 : a.name > b.name ? 1 : 0; }
      }[state.sort] || function () { return 0; };
      list.sort(cmp);
      $("#result-count").textContent = list.length + (list.length === 1 ? " product" : " products");
      $("#results").innerHTML = list.length ? list.map(card).join("") : "";
      $("#no-results").style.display = list.length ? "none" : "block";
      var qs = [];
      if (state.q) qs.push("q=" + encodeURIComponent(state.q));
      if (state.cat) qs.push("cat=" + state.cat);
      if (state.min) qs.push("min=" + encodeURIComponent(state.min));
      if (state.max) qs.push("max=" + encodeURIComponent(state.max));
      if (state.instock) qs.push("instock=1");
      if (state.sort && state.sort !== "featured") qs.push("sort=" + state.sort);
      try { history.replaceState(null, "", location.pathname + (qs.length ? "?" + qs.join("&") : "")); } catch (e) { /* ignore */ }
    }
    catSel.addEventListener("change", function () {
      state.cat = catSel.value;
      if (!isSearch) {
        var c = category(state.cat);
        $("#listing-heading").textContent = c ? c.name : "All products";
      }
      render();
    });
    ["#price-min", "#price-max"].forEach(function (sel) {
      var el = $(sel);
      var h = function () { state[sel === "#price-min" ? "min" : "max"] = el.value.trim(); render(); };
      el.addEventListener("input", h);
      el.addEventListener("change", h);
    });
    $("#in-stock").addEventListener("change", function () { state.instock = $("#in-stock").checked; render(); });
    $("#sort").addEventListener("change", function () { state.sort = $("#sort").value; render(); });
    $("#clear-filters").addEventListener("click", function (e) {
      e.preventDefault();
      state.cat = ""; state.min = ""; state.max = ""; state.instock = false; state.sort = "featured";
      catSel.value = ""; $("#price-min").value = ""; $("#price-max").value = ""; $("#in-stock").checked = false; $("#sort").value = "featured";
      render();
    });
    render();
  }

  // ---------- product ----------
  function initProduct() {
    initCommon();
    var p = product(params().id || "");
    if (!p) {
      $("#product").innerHTML = '<div class="empty" id="not-found"><h1>Product not found</h1><p>We couldn\u2019t find that product. <a href="products.html">Browse all products</a>.</p></div>';
      return;
    }
    document.title = p.name + " \u2013 Northwind Goods";
    var c = category(p.category);
    var stockText = p.stock <= 0 ? "Out of stock" : p.stock <= 10 ? "Only " + p.stock + " left in stock" : "In stock (" + p.stock + " available)";
    var opt = "";
    if (p.options) {
      opt = '<div><label for="variant">' + esc(p.options.label) + '</label><select id="variant" name="variant">' +
        p.options.values.map(function (v) { return '<option value="' + esc(v) + '">' + esc(v) + "</option>"; }).join("") + "</select></div>";
    }
    var related = NW_PRODUCTS.filter(function (x) { return x.category === p.category && x.id !== p.id; });
    $("#product").innerHTML =
      '<div class="crumbs" id="breadcrumbs"><a href="index.html">Home</a> / <a href="products.html?cat=' + c.id + '">' + esc(c.name) + "</a> / " + esc(p.name) + "</div>" +
      '<div class="product-page">' + thumb(p, true) +
      "<div>" +
      '<h1 id="product-name">' + esc(p.name) + "</h1>" +
      '<div class="muted">by <span id="product-brand">' + esc(p.brand) + "</span></div>" +
      '<div id="product-rating" style="margin:8px 0"><span class="stars">' + stars(p.rating) + "</span> " + p.rating.toFixed(1) + " out of 5 (" + p.reviews + " reviews)</div>" +
      '<div class="price" id="product-price" style="font-size:26px">' + fmt(p.price) + "</div>" +
      '<div id="stock-status" class="' + (p.stock > 0 ? "instock" : "oos") + '" style="font-size:15px;margin-top:4px">' + stockText + "</div>" +
      '<p id="product-description">' + esc(p.description) + "</p>" +
      '<div class="buy-box">' + opt +
      '<div><label for="qty">Quantity</label><input type="number" id="qty" name="qty" min="1" max="' + Math.max(1, p.stock) + '" value="1"' + (p.stock <= 0 ? " disabled" : "") + "></div>" +
      '<button class="btn" id="add-to-cart" type="button"' + (p.stock <= 0 ? " disabled" : "") + ">" + (p.stock <= 0 ? "Out of stock" : "Add to cart") + "</button>" +
      "</div>" +
      '<div id="cart-message" role="status"></div>' +
      "<h2>Specifications</h2>" +
      '<table class="specs" id="specs"><tbody>' +
      [["Brand", p.brand], ["Category", c.name]].concat(p.specs).map(function (s) {
        return '<tr id="spec-' + slug(s[0]) + '"><th>' + esc(s[0]) + "</th><td>" + esc(s[1]) + "</td></tr>";
      }).join("") + "</tbody></table>" +
      "</div></div>" +
      "<h2>More in " + esc(c.name) + '</h2><div class="grid" id="related">' + related.map(card).join("") + "</div>";

    var btn = $("#add-to-cart");
    btn.addEventListener("click", function () {
      var msg = $("#cart-message");
      var n = parseInt($("#qty").value, 10);
      if (isNaN(n) || n < 1) {
        msg.className = "notice err";
        msg.textContent = "Please enter a quantity of at least 1.";
        return;
      }
      var option = p.options ? $("#variant").value : "";
      var r = addToCart(p.id, option, n);
      if (!r.ok) {
        msg.className = "notice err";
        msg.textContent = "Sorry, only " + p.stock + " available. You can add at most " + Math.max(0, r.max) + " more.";
        return;
      }
      msg.className = "notice ok";
      msg.innerHTML = "Added " + n + " \u00d7 " + esc(p.name) + (option ? " (" + esc(option) + ")" : "") + ' to your cart. <a href="cart.html" id="view-cart">View cart</a>';
    });
  }

  // ---------- cart ----------
  function renderSummary(prefix) {
    var t = totals(getCart(), getShipping(), getPromo());
    $("#" + prefix + "subtotal").textContent = fmt(t.subtotal);
    $("#" + prefix + "discount").textContent = t.discount ? "\u2212" + fmt(t.discount) : fmt(0);
    $("#" + prefix + "shipping-cost").textContent = t.shipping === 0 ? "Free" : fmt(t.shipping);
    $("#" + prefix + "total").textContent = fmt(t.total);
    var dr = $("#" + prefix + "discount-row");
    if (dr) dr.style.display = t.discount ? "flex" : "none";
    return t;
  }
  function initCart() {
    initCommon();
    function renderLines() {
      var cart = getCart();
      var body = $("#cart-items");
      $("#cart-empty").style.display = cart.length ? "none" : "block";
      $("#cart-table").style.display = cart.length ? "table" : "none";
      $("#checkout-btn").classList.toggle("disabled", !cart.length);
      body.innerHTML = cart.map(function (it) {
        var p = product(it.id), lid = lineId(it);
        return '<tr id="line-' + lid + '" class="cart-line">' +
          '<td><a href="product.html?id=' + p.id + '" class="line-name">' + esc(p.name) + "</a>" +
          (it.option ? '<div class="muted line-option">' + esc(p.options.label) + ": " + esc(it.option) + "</div>" : "") + "</td>" +
          '<td class="line-price">' + fmt(p.price) + "</td>" +
          '<td><input type="number" min="0" max="' + p.stock + '" value="' + it.qty + '" id="qty-' + lid + '" class="line-qty" aria-label="Quantity for ' + esc(p.name) + '"></td>' +
          '<td class="line-total" id="total-' + lid + '">' + fmt(p.price * it.qty) + "</td>" +
          '<td><button type="button" class="btn link" id="remove-' + lid + '">Remove</button></td></tr>';
      }).join("");
      cart.forEach(function (it) {
        var lid = lineId(it);
        var inp = document.getElementById("qty-" + lid);
        function apply(final) {
          var n = parseInt(inp.value, 10);
          var c = getCart();
          var p = product(it.id);
          var warn = $("#cart-warning");
          for (var i = 0; i < c.length; i++) {
            if (lineId(c[i]) !== lid) continue;
            if (isNaN(n)) { if (final) inp.value = c[i].qty; return; }
            if (n <= 0) {
              if (final) { c.splice(i, 1); setCart(c); renderLines(); }
              return;
            }
            if (n > p.stock) {
              n = p.stock;
              warn.textContent = "Only " + p.stock + " \u00d7 " + p.name + " available; quantity adjusted.";
              warn.style.display = "block";
              if (final) inp.value = n;
            }
            c[i].qty = n;
            setCart(c);
            document.getElementById("total-" + lid).textContent = fmt(p.price * n);
          }
          renderSummary("");
        }
        inp.addEventListener("input", function () { apply(false); });
        inp.addEventListener("change", function () { apply(true); });
        document.getElementById("remove-" + lid).addEventListener("click", function () {
          var c = getCart().filter(function (x) { return lineId(x) !== lid; });
          setCart(c);
          renderLines();
        });
      });
      renderSummary("");
    }
    var ship = getShipping();
    NW_SHIPPING.forEach(function (m) {
      var r = document.getElementById("ship-" + m.id);
      r.checked = m.id === ship;
      r.addEventListener("change", function () { if (r.checked) { setShipping(m.id); renderSummary(""); } });
    });
    var promo = getPromo();
    if (promo) {
      $("#promo-code").value = promo;
      $("#promo-message").className = "notice ok";
      $("#promo-message").textContent = "Code " + promo + " applied: " + NW_PROMOS[promo].label + ".";
    }
    function applyPromo(e) {
      if (e) e.preventDefault();
      var code = $("#promo-code").value.trim().toUpperCase();
      var m = $("#promo-message");
      if (NW_PROMOS[code]) {
        save("nw_promo", code);
        m.className = "notice ok";
        m.textContent = "Code " + code + " applied: " + NW_PROMOS[code].label + ".";
      } else {
        save("nw_promo", "");
        m.className = "notice err";
        m.textContent = code ? "Sorry, \u201c" + code + "\u201d is not a valid code." : "Please enter a code.";
      }
      renderSummary("");
    }
    $("#promo-form").addEventListener("submit", applyPromo);
    $("#checkout-btn").addEventListener("click", function (e) {
      if (!getCart().length) e.preventDefault();
    });
    renderLines();
  }

  // ---------- checkout ----------
  function initCheckout() {
    initCommon();
    var cart = getCart();
    var sel = $("#country");
    sel.innerHTML = '<option value="">Select a country\u2026</option>' +
      NW_COUNTRIES.map(function (c) { return "<option>" + esc(c) + "</option>"; }).join("");
    $("#summary-items").innerHTML = cart.length ? cart.map(function (it) {
      var p = product(it.id);
      return '<div class="summary-row"><span>' + it.qty + " \u00d7 " + esc(p.name) + (it.option ? " (" + esc(it.option) + ")" : "") + "</span><span>" + fmt(p.price * it.qty) + "</span></div>";
    }).join("") : '<p id="checkout-empty">Your cart is empty. <a href="products.html">Continue shopping</a>.</p>';
    if (!cart.length) $("#place-order").disabled = true;
    var ship = getShipping();
    NW_SHIPPING.forEach(function (m) {
      var r = document.getElementById("ship-" + m.id);
      r.checked = m.id === ship;
      r.addEventListener("change", function () { if (r.checked) { setShipping(m.id); renderSummary("summary-"); } });
    });
    renderSummary("summary-");

    var rules = [
      ["name", function (v) { return v.trim().length >= 2; }, "Please enter your full name."],
      ["email", function (v) { return /^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(v.trim()); }, "Please enter a valid email address."],
      ["address", function (v) { return v.trim().length >= 3; }, "Please enter your street address."],
      ["city", function (v) { return v.trim().length >= 2; }, "Please enter your city."],
      ["postcode", function (v) { return /^[A-Za-z0-9][A-Za-z0-9 \-]{1,9}$/.test(v.trim()); }, "Please enter a valid postcode."],
      ["country", function (v) { return v !== ""; }, "Please select a country."]
    ];
    function validate() {
      var errors = 0;
      rules.forEach(function (r) {
        var el = document.getElementById(r[0]);
        var ok = r[1](el.value);
        el.parentNode.classList.toggle("invalid", !ok);
        document.getElementById("error-" + r[0]).textContent = ok ? "" : r[2];
        if (!ok) errors++;
      });
      var terms = $("#terms").checked;
      $("#error-terms").textContent = terms ? "" : "You must accept the terms and conditions.";
      if (!terms) errors++;
      var box = $("#form-errors");
      if (errors) {
        box.className = "form-errors show notice err";
        box.textContent = "Please correct " + errors + (errors === 1 ? " error" : " errors") + " before placing your order.";
      } else {
        box.className = "form-errors";
        box.textContent = "";
      }
      return errors === 0;
    }
    $("#checkout-form").addEventListener("submit", function (e) {
      e.preventDefault();
      var c = getCart();
      if (!c.length) return;
      if (!validate()) return;
      var shipId = getShipping(), promo = getPromo();
      var t = totals(c, shipId, promo);
      var order = {
        number: orderNumber(c, shipId, promo),
        name: $("#name").value.trim(),
        email: $("#email").value.trim(),
        address: $("#address").value.trim(),
        city: $("#city").value.trim(),
        postcode: $("#postcode").value.trim().toUpperCase(),
        country: $("#country").value,
        phone: $("#phone").value.trim(),
        shipping: t.method.name,
        promo: promo,
        items: c.map(function (it) { var p = product(it.id); return { id: it.id, name: p.name, option: it.option, qty: it.qty, price: p.price }; }),
        subtotal: t.subtotal, discount: t.discount, shippingCost: t.shipping, total: t.total
      };
      save("nw_last_order", order);
      var all = load("nw_orders", []);
      all.push(order);
      save("nw_orders", all);
      save("nw_cart", []);
      save("nw_promo", "");
      location.href = "order.html?n=" + order.number;
    });
  }

  // ---------- order confirmation ----------
  function initOrder() {
    initCommon();
    var o = load("nw_last_order", null);
    var n = params().n;
    if (n) {
      load("nw_orders", []).forEach(function (x) { if (x.number === n) o = x; });
    }
    if (!o) {
      $("#order").innerHTML = '<div class="empty" id="no-order"><h1>No recent order</h1><p>You haven\u2019t placed an order yet. <a href="products.html">Start shopping</a>.</p></div>';
      return;
    }
    $("#order-number").textContent = o.number;
    $("#order-name").textContent = o.name;
    $("#order-email").textContent = o.email;
    $("#order-address").textContent = o.address + ", " + o.city + " " + o.postcode + ", " + o.country;
    $("#order-items").innerHTML = o.items.map(function (it) {
      return '<tr class="order-line">\n<td>' + esc(it.name) + (it.option ? " (" + esc(it.option) + ")" : "") + '</td>\n<td class="order-qty">' + it.qty + "</td>\n<td>" + fmt(it.price) + "</td>\n<td>" + fmt(it.price * it.qty) + "</td>\n</tr>";
    }).join("\n");
    $("#order-subtotal").textContent = fmt(o.subtotal);
    $("#order-discount").textContent = o.discount ? "\u2212" + fmt(o.discount) + " (" + o.promo + ")" : fmt(0);
    $("#order-shipping").textContent = o.shipping + " \u2013 " + (o.shippingCost === 0 ? "Free" : fmt(o.shippingCost));
    $("#order-total").textContent = fmt(o.total);
  }

  return {
    initHome: initHome, initListing: initListing, initProduct: initProduct, initCart: initCart,
    initCheckout: initCheckout, initOrder: initOrder, initCommon: initCommon,
    orderNumber: orderNumber, totals: totals
  };
})();
