// Openpedia front-end: renders articles, search results and indexes from data.js.
var OP = (function () {
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
  var byId = {};
  OP_ARTICLES.forEach(function (a) { byId[a.id] = a; });
  function catName(id) {
    for (var i = 0; i < OP_CATEGORIES.length; i++) if (OP_CATEGORIES[i].id === id) return OP_CATEGORIES[i].name;
    return id;
  }
  function links(html) {
    return html.replace(/\[\[([a-z0-9\-]+)(?:\|([^\]]+))?\]\]/g, function (_, id, text) {
      var a = byId[id];
      return '<a href="article.html?id=' + id + '"' + (a ? "" : ' class="new"') + ">" + (text || (a ? a.title : id)) + "</a>";
    });
  }
  function plain(html) {
    return html.replace(/\[\[[a-z0-9\-]+\|([^\]]+)\]\]/g, "$1").replace(/\[\[([a-z0-9\-]+)\]\]/g, function (_, id) { return byId[id] ? byId[id].title : id; })
      .replace(/<[^>]+>/g, "").replace(/&amp;/g, "&");
  }
  function slug(s) { return s.toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-|-$/g, ""); }
  function fullText(a) {
    return plain(a.lead + " " + a.infobox.map(function (r) { return r[0] + " " + r[1]; }).join(" ") + " " +
      a.sections.map(function (s) { return s[0] + " " + s[1]; }).join(" "));
  }

  function initCommon() {
    var p = params();
    if (p.q !== undefined && $("#search-input")) $("#search-input").value = p.q;
  }

  function initHome() {
    initCommon();
    var f = byId[OP_FEATURED];
    $("#featured").innerHTML = '<h3 id="featured-title"><a href="article.html?id=' + f.id + '">' + esc(f.title) + "</a></h3><p>" + links(f.lead) +
      ' (<a href="article.html?id=' + f.id + '" id="featured-more">Full article&hellip;</a>)</p>';
    $("#dyk").innerHTML = OP_DID_YOU_KNOW.map(function (t) { return "<li>" + links(t) + "</li>"; }).join("");
    $("#article-count").textContent = String(OP_ARTICLES.length);
    $("#portal").innerHTML = OP_CATEGORIES.map(function (c) {
      var n = OP_ARTICLES.filter(function (a) { return a.cats.indexOf(c.id) >= 0; }).length;
      return '<li><a href="categories.html#cat-' + c.id + '">' + esc(c.name) + "</a> (" + n + ")</li>";
    }).join("");
  }

  function initArticle() {
    initCommon();
    var id = params().id || "";
    var a = byId[id];
    if (!a) {
      document.title = "Article not found \u2013 Openpedia";
      $("#content").innerHTML = '<h1 id="article-title">Article not found</h1><p id="not-found">Openpedia does not have an article with this exact name. You can <a href="search.html?q=' +
        encodeURIComponent(id.replace(/-/g, " ")) + '">search for it</a> or browse the <a href="categories.html">index</a>.</p>';
      return;
    }
    document.title = a.title + " \u2013 Openpedia";
    var toc = a.sections.map(function (s, i) { return '<li><a href="#' + slug(s[0]) + '">' + (i + 1) + " " + esc(s[0]) + "</a></li>"; }).join("");
    var box = '<table class="infobox" id="infobox"><caption>' + esc(a.title) + "</caption><tbody>" +
      a.infobox.map(function (r) { return '<tr id="info-' + slug(r[0]) + '"><th scope="row">' + esc(r[0]) + "</th><td>" + links(r[1]) + "</td></tr>"; }).join("") +
      "</tbody></table>";
    var body = a.sections.map(function (s) { return '<h2 id="' + slug(s[0]) + '">' + esc(s[0]) + "</h2><p>" + links(s[1]) + "</p>"; }).join("");
    var linked = {};
    var all = a.lead + a.sections.map(function (s) { return s[1]; }).join(" ");
    all.replace(/\[\[([a-z0-9\-]+)/g, function (_, x) { if (x !== a.id) linked[x] = 1; return _; });
    var backlinks = OP_ARTICLES.filter(function (b) {
      return b.id !== a.id && (b.lead + b.sections.map(function (s) { return s[1]; }).join(" ") + b.infobox.map(function (r) { return r[1]; }).join(" ")).indexOf("[[" + a.id) >= 0;
    });
    $("#content").innerHTML =
      '<h1 id="article-title">' + esc(a.title) + "</h1>" +
      '<div class="tagline">From Openpedia, the free encyclopedia of Caldria</div>' +
      '<div id="article-body">' + box + '<p id="lead">' + links(a.lead) + "</p>" +
      '<div class="toc" id="toc"><strong>Contents</strong><ol>' + toc + '<li><a href="#what-links-here">' + (a.sections.length + 1) + " What links here</a></li></ol></div>" +
      body +
      '<h2 id="what-links-here">What links here</h2><ul id="backlinks">' +
      backlinks.map(function (b) { return '<li><a href="article.html?id=' + b.id + '">' + esc(b.title) + "</a></li>"; }).join("") + "</ul>" +
      "</div>" +
      '<div class="catlinks" id="article-categories">Categories: ' +
      a.cats.map(function (c) { return '<a href="categories.html#cat-' + c + '">' + esc(catName(c)) + "</a>"; }).join(" | ") + "</div>";
  }

  function initSearch() {
    initCommon();
    var q = (params().q || "").trim();
    $("#search-page-input").value = q;
    if (!q) {
      $("#result-count").textContent = "Enter a search term.";
      return;
    }
    document.title = q + " \u2013 Search \u2013 Openpedia";
    var terms = q.toLowerCase().split(/\s+/).filter(Boolean);
    var exact = null;
    var results = [];
    OP_ARTICLES.forEach(function (a, idx) {
      if (a.title.toLowerCase() === q.toLowerCase()) exact = a;
      var title = a.title.toLowerCase();
      var text = fullText(a);
      var low = text.toLowerCase();
      var ok = terms.every(function (t) { return title.indexOf(t) >= 0 || low.indexOf(t) >= 0; });
      if (!ok) return;
      var score = 0;
      terms.forEach(function (t) {
        if (title.indexOf(t) >= 0) score += 10;
        var n = low.split(t).length - 1;
        score += Math.min(n, 5);
      });
      var prose = plain(a.lead + " " + a.sections.map(function (s) { return s[1]; }).join(" "));
      var pos = -1;
      terms.forEach(function (t) { var p2 = prose.toLowerCase().indexOf(t); if (pos < 0 && p2 >= 0) pos = p2; });
      var start = Math.max(0, pos - 60);
      if (start > 0) { var sp = prose.indexOf(" ", start); if (sp > 0 && sp < pos) start = sp + 1; }
      var snip = (start > 0 ? "\u2026" : "") + prose.slice(start, start + 180) + (start + 180 < prose.length ? "\u2026" : "");
      var hl = esc(snip);
      terms.forEach(function (t) {
        hl = hl.replace(new RegExp("(" + t.replace(/[.*+?^${}()|[\]\\]/g, "\\$&") + ")", "ig"), "<b>$1</b>");
      });
      results.push({ a: a, score: score, idx: idx, snip: hl, words: text.split(/\s+/).length });
    });
    results.sort(function (x, y) { return y.score - x.score || x.idx - y.idx; });
    if (exact) {
      $("#exact-match").innerHTML = 'There is a page named \u201c<a href="article.html?id=' + exact.id + '" id="exact-link">' + esc(exact.title) + "</a>\u201d on Openpedia.";
      $("#exact-match").style.display = "block";
    }
    $("#result-count").textContent = results.length ? "Showing " + results.length + (results.length === 1 ? " result" : " results") + " for \u201c" + q + "\u201d" : "";
    $("#no-results").style.display = results.length ? "none" : "block";
    $("#results").innerHTML = results.map(function (r, i) {
      return '<li class="result" id="result-' + (i + 1) + '"><a class="result-title" href="article.html?id=' + r.a.id + '">' + esc(r.a.title) + '</a><div class="snippet">' + r.snip +
        '</div><div class="result-meta">' + r.words + " words \u00b7 " + r.a.cats.map(catName).join(", ") + "</div></li>";
    }).join("");
  }

  function initCategories() {
    initCommon();
    $("#category-list").innerHTML = OP_CATEGORIES.map(function (c) {
      var arts = OP_ARTICLES.filter(function (a) { return a.cats.indexOf(c.id) >= 0; })
        .sort(function (x, y) { return x.title < y.title ? -1 : 1; });
      return '<section class="category" id="cat-' + c.id + '"><h2>' + esc(c.name) + ' <span class="count">(' + arts.length + ")</span></h2><ul>" +
        arts.map(function (a) { return '<li><a href="article.html?id=' + a.id + '">' + esc(a.title) + "</a></li>"; }).join("") + "</ul></section>";
    }).join("");
    var sorted = OP_ARTICLES.slice().sort(function (x, y) { return x.title < y.title ? -1 : 1; });
    $("#all-articles").innerHTML = sorted.map(function (a) { return '<li><a href="article.html?id=' + a.id + '">' + esc(a.title) + "</a></li>"; }).join("");
    if (location.hash) {
      var el = document.getElementById(location.hash.slice(1));
      if (el) el.scrollIntoView();
    }
  }

  return { initHome: initHome, initArticle: initArticle, initSearch: initSearch, initCategories: initCategories, initCommon: initCommon };
})();
