#!/usr/bin/env python3
"""Self-check for the bundled practice sites and bundled tasks (python3 stdlib only).

Usage: python3 tasks/sites/check_sites.py [--browser] [--quiet]

* serves each site (tasks/sites/<name>/) with http.server on a free port, fetches every
  HTML page and checks that every local href/src exists, that no file references an
  external http(s):// resource, that scripts avoid Math.random / Date.now, and that the
  site stays under the size budget;
* validates tasks/bundled/*.jsonl: JSON per line, required fields, ids, split, placeholders,
  rubric structure (check kinds and matchers), action grammar of reference solutions,
  consistency between answer() and answer checks, and that CSS ids used by solutions and
  rubrics exist in the site sources;
* reports the difficulty band of every task (from its fact count) and totals per band.

--browser additionally renders a few URLs per site in headless Chromium (--dump-dom) and
checks that the JavaScript-rendered content appears.
Exit status is 1 if any error was found.
"""
import functools
import html.parser
import http.server
import json
import os
import re
import socket
import subprocess
import sys
import threading
import urllib.error
import urllib.parse
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)  # tasks/
BUNDLED = os.path.join(ROOT, "bundled")
SITES = ["shop", "wiki", "booking"]
SIZE_LIMIT = 300 * 1024
ACTION_RE = re.compile(r"^[a-z]+\(.*\)$")
ACTIONS = {"click", "type", "select", "press", "scroll", "goto", "back", "answer", "stop"}
ID_RE = re.compile(r"^[a-z0-9_.\-]+$")
ALLOWED_EXTERNAL = ("http://www.w3.org/2000/svg", "http://www.w3.org/1999/xlink")

errors = []
warnings = []


def err(msg):
    errors.append(msg)
    print("  ERROR: " + msg)


def warn(msg):
    warnings.append(msg)
    print("  warning: " + msg)


# ------------------------------------------------------------------ serving
class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def serve(directory):
    handler = functools.partial(QuietHandler, directory=directory)
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    return httpd, "http://127.0.0.1:%d" % httpd.server_address[1]


def fetch(url):
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, b""
    except Exception as e:  # noqa: BLE001
        return None, str(e).encode()


class LinkParser(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.refs = []  # (tag, attr, value)
        self.ids = []

    def handle_starttag(self, tag, attrs):
        for k, v in attrs:
            if v is None:
                continue
            if k in ("href", "src", "action", "data", "poster"):
                self.refs.append((tag, k, v))
            if k == "srcset":
                for part in v.split(","):
                    self.refs.append((tag, k, part.strip().split(" ")[0]))
            if k == "id":
                self.ids.append(v)


def site_files(site_dir):
    out = []
    for dirpath, _dirs, files in os.walk(site_dir):
        for f in files:
            out.append(os.path.relpath(os.path.join(dirpath, f), site_dir))
    return sorted(out)


def check_site(name):
    print("\n== site: %s" % name)
    site_dir = os.path.join(HERE, name)
    if not os.path.isdir(site_dir):
        err("%s: missing directory %s" % (name, site_dir))
        return None
    files = site_files(site_dir)
    total = sum(os.path.getsize(os.path.join(site_dir, f)) for f in files)
    print("  %d files, %.1f KB" % (len(files), total / 1024))
    if total > SIZE_LIMIT:
        err("%s: site is %.1f KB, over the %d KB budget" % (name, total / 1024, SIZE_LIMIT // 1024))
    if "index.html" not in files:
        err("%s: no index.html" % name)

    sources = {}
    for f in files:
        if f.endswith((".html", ".css", ".js", ".svg", ".json", ".txt")):
            with open(os.path.join(site_dir, f), encoding="utf-8") as fh:
                sources[f] = fh.read()
    # external references anywhere
    for f, text in sources.items():
        for m in re.finditer(r"(?i)(https?:)?//[a-z0-9][a-z0-9.\-]*\.[a-z]{2,}[^\s\"'<>)]*", text):
            s = m.group(0)
            if s.startswith(ALLOWED_EXTERNAL):
                continue
            if not m.group(1) and f.endswith(".js"):
                # a JS line comment such as "// foo.bar" is not a reference
                line_start = text.rfind("\n", 0, m.start()) + 1
                if text[line_start:m.start()].strip() == "" or text[m.start() - 1] == " ":
                    continue
            if m.group(1) or f.endswith((".html", ".css")):
                err("%s/%s references an external resource: %s" % (name, f, s[:80]))
        for m in re.finditer(r"url\(\s*['\"]?([^'\")]+)", text) if f.endswith((".css", ".html")) else []:
            ref = m.group(1)
            if ref.startswith(("data:", "#", "//")) or re.match(r"^[a-z]+:", ref):
                continue
            if not os.path.exists(os.path.join(site_dir, os.path.dirname(f), ref.split("?")[0])):
                err("%s/%s: url(%s) does not exist" % (name, f, ref))
        if f.endswith(".js") or f.endswith(".html"):
            for bad in ("Math.random", "Date.now", "new Date()", "performance.now"):
                if bad in text:
                    err("%s/%s uses %s (content must be deterministic)" % (name, f, bad))
        if f.endswith(".js"):
            for m in re.finditer(r"[\"']([a-z0-9_\-]+\.html)", text):
                if m.group(1) not in files:
                    err("%s/%s links to missing page %s" % (name, f, m.group(1)))

    httpd, base = serve(site_dir)
    all_ids = set()
    try:
        status, _ = fetch(base + "/")
        if status != 200:
            err("%s: GET / returned %s" % (name, status))
        pages = [f for f in files if f.endswith(".html")]
        for page in pages:
            status, body = fetch(base + "/" + page + "?probe=1")
            if status != 200:
                err("%s: GET /%s?probe=1 returned %s" % (name, page, status))
                continue
            p = LinkParser()
            p.feed(body.decode("utf-8"))
            all_ids.update(p.ids)
            dup = {i for i in p.ids if p.ids.count(i) > 1}
            if dup:
                err("%s/%s: duplicate ids %s" % (name, page, sorted(dup)))
            n_local = 0
            for tag, attr, val in p.refs:
                if val.startswith(("#", "mailto:", "tel:", "data:", "javascript:")):
                    continue
                u = urllib.parse.urlparse(val)
                if u.scheme or u.netloc:
                    err("%s/%s: <%s %s=%r> points outside the site" % (name, page, tag, attr, val))
                    continue
                path = urllib.parse.unquote(u.path)
                if not path:
                    continue
                target = os.path.normpath(os.path.join(os.path.dirname(page), path.lstrip("/") if path.startswith("/") else path))
                if path.startswith("/"):
                    target = os.path.normpath(path.lstrip("/")) or "index.html"
                if target.endswith("/") or os.path.isdir(os.path.join(site_dir, target)):
                    target = os.path.join(target, "index.html")
                n_local += 1
                st, _ = fetch(base + "/" + target.replace(os.sep, "/"))
                if st != 200:
                    err("%s/%s: <%s %s=%r> -> %s (HTTP %s)" % (name, page, tag, attr, val, target, st))
            print("  ok  %-18s %3d local references" % (page, n_local))
    finally:
        httpd.shutdown()
    return {"files": files, "sources": sources, "ids": all_ids}


# ------------------------------------------------------------------ browser (optional)
BROWSER_PROBES = {
    "shop": [("product.html?id=blue-ceramic-mug", 'id="product-name">Blue Ceramic Mug<'),
             ("search.html?q=mug", 'id="card-blue-ceramic-mug"'),
             ("products.html?cat=kitchen", 'id="card-cast-iron-skillet"'),
             ("index.html", 'id="card-merino-wool-blanket"')],
    "wiki": [("article.html?id=aster-bridge", 'id="article-title">Aster Bridge<'),
             ("search.html?q=lens", 'class="result-title"'),
             ("categories.html", 'id="cat-cities"'),
             ("index.html", 'id="featured-title"')],
    "booking": [("results.html?from=LHR&to=LIS&depart=2026-05-15&pax=1&cabin=economy", 'class="flight"'),
                ("passenger.html?from=LIS&to=MAD&depart=2026-08-20&pax=1&cabin=economy&out=NV109", 'id="pax-name-1"'),
                ("index.html?from=LHR&to=CDG", 'value="LHR"')],
}


def browser_checks():
    exe = None
    for c in ("/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"):
        if os.path.exists(c):
            exe = c
            break
    if not exe:
        warn("--browser: no Chromium found, skipped")
        return
    print("\n== browser probes (%s)" % exe)
    for name, probes in BROWSER_PROBES.items():
        httpd, base = serve(os.path.join(HERE, name))
        try:
            for path, needle in probes:
                try:
                    out = subprocess.run([exe, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", base + "/" + path],
                                         capture_output=True, timeout=60).stdout.decode("utf-8", "replace")
                except subprocess.TimeoutExpired:
                    err("%s: browser timed out on %s" % (name, path))
                    continue
                if needle in out:
                    print("  ok  %s/%s" % (name, path))
                else:
                    err("%s: rendered %s lacks %r" % (name, path, needle))
        finally:
            httpd.shutdown()


# ------------------------------------------------------------------ tasks
def band(n):
    return "easy" if n <= 3 else ("medium" if n <= 6 else "hard")


def check_text_match(where, m):
    if not isinstance(m, dict):
        err(where + ": text match must be an object")
        return
    keys = [k for k in ("equals", "contains", "regex") if k in m]
    if len(keys) != 1:
        err(where + ": text match needs exactly one of equals/contains/regex, got %s" % sorted(m))
        return
    if keys[0] == "regex":
        try:
            re.compile(m["regex"])
        except re.error as e:
            err(where + ": bad regex %r (%s)" % (m["regex"], e))
    extra = set(m) - {"equals", "contains", "regex", "case_sensitive"}
    if extra:
        err(where + ": unknown text match fields %s" % sorted(extra))


def check_check(where, c):
    t = c.get("type")
    if t == "url":
        keys = [k for k in ("exact", "prefix", "contains", "regex") if k in c]
        if len(keys) != 1:
            err(where + ": url check needs exactly one of exact/prefix/contains/regex")
        if c.get("scope", "final") not in ("final", "any"):
            err(where + ": url scope must be final or any")
        if "regex" in c:
            try:
                re.compile(c["regex"])
            except re.error as e:
                err(where + ": bad regex (%s)" % e)
    elif t == "page_text":
        keys = [k for k in ("contains", "regex") if k in c]
        if len(keys) != 1:
            err(where + ": page_text check needs exactly one of contains/regex")
    elif t == "element":
        if not isinstance(c.get("selector"), str) or not c["selector"]:
            err(where + ": element check needs a selector")
        keys = [k for k in ("exists", "checked", "value", "text") if k in c]
        if len(keys) != 1:
            err(where + ": element check needs exactly one of exists/checked/value/text")
        elif keys[0] in ("exists", "checked"):
            if not isinstance(c[keys[0]], bool):
                err(where + ": %s must be a boolean" % keys[0])
        else:
            check_text_match(where, c[keys[0]])
    elif t == "answer":
        keys = [k for k in ("equals", "contains", "regex", "any_of", "number") if k in c]
        if len(keys) != 1:
            err(where + ": answer check needs exactly one of equals/contains/regex/any_of/number")
        if "any_of" in c and not (isinstance(c["any_of"], list) and c["any_of"]):
            err(where + ": any_of must be a non-empty list")
        if "number" in c and not isinstance(c["number"], (int, float)):
            err(where + ": number must be numeric")
        if "regex" in c:
            try:
                re.compile(c["regex"])
            except re.error as e:
                err(where + ": bad regex (%s)" % e)
    else:
        err(where + ": unknown check type %r" % t)


def css_args(line):
    return re.findall(r'css="((?:[^"\\]|\\.)*)"', line)


def id_known(ident, site_info):
    if ident in site_info["ids"]:
        return True
    blob = "\n".join(site_info["sources"].values())
    if re.search(r"id=[\"']" + re.escape(ident) + r"[\"']", blob) or ('"' + ident + '"') in blob:
        return True
    # dynamically built ids such as "line-" + lid: accept when a prefix ending in '-' is present
    parts = ident.split("-")
    for i in range(len(parts) - 1, 0, -1):
        prefix = "-".join(parts[:i]) + "-"
        if ('"' + prefix) in blob or ("'" + prefix) in blob:
            return True
    return False


def check_tasks(site_infos):
    print("\n== bundled tasks")
    totals = {"easy": 0, "medium": 0, "hard": 0}
    per_site = {}
    seen_ids = set()
    files = sorted(f for f in os.listdir(BUNDLED) if f.endswith(".jsonl")) if os.path.isdir(BUNDLED) else []
    if not files:
        err("no tasks/bundled/*.jsonl files")
    for fname in files:
        path = os.path.join(BUNDLED, fname)
        site_name = fname[:-len(".jsonl")]
        counts = {"easy": 0, "medium": 0, "hard": 0}
        per_site[site_name] = counts
        print("\n-- %s" % fname)
        with open(path, encoding="utf-8") as fh:
            lines = fh.read().split("\n")
        for ln, line in enumerate(lines, 1):
            if not line.strip():
                continue
            where = "%s:%d" % (fname, ln)
            try:
                t = json.loads(line)
            except json.JSONDecodeError as e:
                err("%s: invalid JSON (%s)" % (where, e))
                continue
            if not isinstance(t, dict):
                err(where + ": not an object")
                continue
            tid = t.get("id", "?")
            where = "%s:%d (%s)" % (fname, ln, tid)
            for k in ("id", "site", "instruction", "start_url", "rubric", "tags", "split", "max_steps", "reference_solution"):
                if k not in t:
                    err(where + ": missing field %r" % k)
            known = {"id", "site", "instruction", "start_url", "tags", "split", "difficulty", "max_steps", "rubric",
                     "reference_solution", "reference_answer"}
            for k in t:
                if k not in known:
                    err(where + ": unknown field %r" % k)
            if "difficulty" in t:
                err(where + ": bundled tasks must not set difficulty (it is derived from the rubric)")
            if not isinstance(tid, str) or not ID_RE.match(tid):
                err(where + ": bad id")
            elif tid in seen_ids:
                err(where + ": duplicate id")
            seen_ids.add(tid)
            if isinstance(tid, str) and not tid.startswith(site_name + "-"):
                err(where + ": id should start with %r" % (site_name + "-"))
            if t.get("site") != site_name:
                err(where + ": site %r does not match file %s" % (t.get("site"), fname))
            want_split = "test" if site_name == "wiki" else "train"
            if t.get("split") != want_split:
                err(where + ": split should be %r" % want_split)
            if not isinstance(t.get("instruction"), str) or len(t.get("instruction", "")) < 10:
                err(where + ": instruction missing or too short")
            if not isinstance(t.get("tags"), list) or not all(isinstance(x, str) for x in t.get("tags", [])):
                err(where + ": tags must be a list of strings")
            for ph in re.findall(r"\{\{(.*?)\}\}", line):
                if ph not in SITES:
                    err(where + ": unknown placeholder {{%s}}" % ph)
            start = str(t.get("start_url", ""))
            if not (start.startswith("{{" + site_name + "}}") or re.match(r"^https?://", start)):
                err(where + ": start_url should start with {{%s}} or http(s)://" % site_name)
            # rubric
            rubric = t.get("rubric", {})
            nfacts = 0
            has_answer_check = False
            selectors = []
            groups = rubric.get("groups") if isinstance(rubric, dict) else None
            if not isinstance(groups, list) or not groups:
                err(where + ": rubric.groups must be a non-empty list")
                groups = []
            gids = set()
            for g in groups:
                gw = "%s group %s" % (where, g.get("id"))
                if g.get("id") in gids:
                    err(gw + ": duplicate group id")
                gids.add(g.get("id"))
                facts = g.get("facts")
                if not isinstance(facts, list) or not facts:
                    err(gw + ": facts must be a non-empty list")
                    continue
                fids = set()
                for f in facts:
                    fw = "%s fact %s" % (gw, f.get("id"))
                    nfacts += 1
                    if f.get("id") in fids:
                        err(fw + ": duplicate fact id")
                    fids.add(f.get("id"))
                    if not f.get("description"):
                        warn(fw + ": no description")
                    w = f.get("weight", 1)
                    if not isinstance(w, (int, float)) or w <= 0:
                        err(fw + ": weight must be positive")
                    c = f.get("check")
                    if not isinstance(c, dict):
                        err(fw + ": missing check")
                        continue
                    check_check(fw, c)
                    if c.get("type") == "answer":
                        has_answer_check = True
                    if c.get("type") == "element":
                        selectors.append(c.get("selector", ""))
            # reference solution
            sol = t.get("reference_solution", [])
            if not isinstance(sol, list) or not sol:
                err(where + ": reference_solution must be a non-empty list")
                sol = []
            for i, a in enumerate(sol):
                if not isinstance(a, str) or not ACTION_RE.match(a):
                    err("%s: solution step %d %r does not match the action grammar" % (where, i + 1, a))
                    continue
                name = a.split("(", 1)[0]
                if name not in ACTIONS:
                    err("%s: solution step %d uses unknown action %r" % (where, i + 1, name))
                if name in ("click", "type", "select") and "css=" not in a:
                    err("%s: solution step %d must target css=\"...\" (element numbers change)" % (where, i + 1))
                if name in ("answer", "stop") and i != len(sol) - 1:
                    err("%s: %s() must be the last step" % (where, name))
                selectors.extend(css_args(a))
            if sol:
                last = sol[-1].split("(", 1)[0]
                if has_answer_check and last != "answer":
                    err(where + ": rubric has an answer check but the solution does not end with answer(...)")
                if not has_answer_check and last != "stop":
                    err(where + ": rubric has no answer check, so the solution should end with stop()")
            ms = t.get("max_steps")
            if not isinstance(ms, int) or ms < 8 or ms < len(sol):
                err(where + ": max_steps should be an integer >= max(8, solution length)")
            # selector ids exist in the site sources
            info = site_infos.get(site_name)
            if info:
                for s in selectors:
                    for ident in re.findall(r"#([A-Za-z][\w\-]*)", s.replace("\\", "")):
                        if not id_known(ident, info):
                            warn("%s: selector id #%s not found in %s sources" % (where, ident, site_name))
            b = band(nfacts)
            counts[b] += 1
            totals[b] += 1
            print("  %-34s %2d facts  %-6s  %2d steps  max_steps=%s" % (tid, nfacts, b, len(sol), ms))
        print("  %s: %d tasks (easy %d, medium %d, hard %d)" % (site_name, sum(counts.values()), counts["easy"], counts["medium"], counts["hard"]))
    return per_site, totals


def main():
    quiet_browser = "--browser" not in sys.argv
    site_infos = {}
    for s in SITES:
        info = check_site(s)
        if info:
            site_infos[s] = info
    if not quiet_browser:
        browser_checks()
    per_site, totals = check_tasks(site_infos)
    print("\n== summary")
    for s, c in per_site.items():
        print("  %-8s %2d tasks  easy %2d  medium %2d  hard %2d" % (s, sum(c.values()), c["easy"], c["medium"], c["hard"]))
    print("  %-8s %2d tasks  easy %2d  medium %2d  hard %2d" % ("total", sum(totals.values()), totals["easy"], totals["medium"], totals["hard"]))
    targets = {"easy": 12, "medium": 12, "hard": 8}
    for b, n in targets.items():
        if totals[b] < n:
            err("only %d %s tasks (want at least %d)" % (totals[b], b, n))
    for s, c in per_site.items():
        if sum(c.values()) < 12:
            err("%s has only %d tasks (want at least 12)" % (s, sum(c.values())))
    print("  %d error(s), %d warning(s)" % (len(errors), len(warnings)))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
