/* The pages of a pyterrier-nuggets report (docs/report.md). Data files are scripts in data/ that call
   PNReport.receive(kind, key, data): they load from file:// where fetch() of local files is refused, and only when a
   page needs them. Every text of the data (answers, nuggets, criteria, judges' replies) goes into the page as text
   (textContent, text nodes), never as HTML. */
"use strict";

var PNReport = (function () {
  var data = {index: null, measure: {}, topic: {}, arena: {}, judges: {}, answers: {}};
  var waiting = {};

  function receive(kind, key, value) {
    if (kind === "index") {
      data.index = value;
      start();
      return;
    }
    data[kind][key] = value;
    var done = waiting[kind + "\u0000" + key];
    if (done) {
      delete waiting[kind + "\u0000" + key];
      done.forEach(function (f) { f(value); });
    }
  }

  /* Load data/FILE (a script calling receive(kind, key, ...)) once; call then(value) when it is there. */
  function load(kind, key, file, then) {
    if (Object.prototype.hasOwnProperty.call(data[kind], key)) {
      then(data[kind][key]);
      return;
    }
    var id = kind + "\u0000" + key;
    if (waiting[id]) {
      waiting[id].push(then);
      return;
    }
    waiting[id] = [then];
    var script = document.createElement("script");
    script.src = "data/" + file;
    script.onerror = function () {
      delete waiting[id];
      show(document.getElementById("main"), el("p", {"class": "error"}, "data/" + file + " could not be loaded: " +
        "keep the report's folder together (the pages, assets/, data/)."));
    };
    document.head.appendChild(script);
  }

  /* An element: attributes set as attributes, children appended (strings as text nodes, never parsed). */
  function el(tag, attrs) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (name) {
      if (attrs[name] !== null && attrs[name] !== undefined && attrs[name] !== false) {
        node.setAttribute(name, attrs[name]);
      }
    });
    for (var i = 2; i < arguments.length; i++) {
      append(node, arguments[i]);
    }
    return node;
  }

  function append(node, child) {
    if (child === null || child === undefined || child === false) {
      return;
    }
    if (Array.isArray(child)) {
      child.forEach(function (c) { append(node, c); });
    } else if (typeof child === "string" || typeof child === "number") {
      node.appendChild(document.createTextNode(String(child)));
    } else {
      node.appendChild(child);
    }
  }

  function show(container, content) {
    while (container.firstChild) {
      container.removeChild(container.firstChild);
    }
    append(container, content);
  }

  /* A table in a region that scrolls sideways when the page is narrower than the table (never the page itself). */
  function scroller(label, content) {
    return el("div", {"class": "scroll", role: "region", "aria-label": label, tabindex: "0"}, content);
  }

  function params() {
    var out = {};
    location.hash.replace(/^#/, "").split("&").forEach(function (part) {
      var at = part.indexOf("=");
      if (at > 0) {
        out[decodeURIComponent(part.slice(0, at))] = decodeURIComponent(part.slice(at + 1));
      }
    });
    return out;
  }

  function hash(values) {
    return "#" + Object.keys(values).filter(function (k) { return values[k]; }).map(function (k) {
      return encodeURIComponent(k) + "=" + encodeURIComponent(values[k]);
    }).join("&");
  }

  function topicLink(topic, system, compare) {
    return "topic.html" + hash({topic: topic, system: system, compare: compare});
  }

  function fmt(measure, value) {
    if (value === null || value === undefined) {
      return "n/a";
    }
    return measure === "AnswerWords" ? value.toFixed(1) : value.toFixed(4);
  }

  function options(select, values, labels, chosen) {
    show(select, values.map(function (v, i) {
      return el("option", {value: v, selected: v === chosen ? "selected" : null}, labels ? labels[i] : v);
    }));
  }

  function typing(event) {
    var t = event.target;
    return t && (t.tagName === "INPUT" || t.tagName === "SELECT" || t.tagName === "TEXTAREA");
  }

  /* A long system name cut in the middle (its start and its end kept: names often differ only at the end); the page
     gives the whole name as the cell's title. */
  function shortName(name) {
    return name.length <= 34 ? name : name.slice(0, 16) + "…" + name.slice(-16);
  }

  function measureInfo(name) {
    return data.index.measures.filter(function (m) { return m.name === name; })[0] || null;
  }

  function unanswered(s, i) {
    var list = data.index.unanswered[String(s)];
    return !!list && list.indexOf(i) >= 0;
  }

  function start() {
    var page = document.body.getAttribute("data-page");
    if (page === "overview") {
      overview();
    } else if (page === "topic") {
      topicPage();
    } else if (page === "arena") {
      load("arena", "", "arena.js", arenaPage);
    } else if (page === "judges") {
      load("judges", "", "judges.js", judgesPage);
    }
  }

  // ------------------------------------------------------------------------------------------ overview

  function overview() {
    var index = data.index;
    sortableBoard();
    var measure = document.getElementById("measure");
    var a = document.getElementById("system-a");
    var b = document.getElementById("system-b");
    var filter = document.getElementById("filter");
    var sort = document.getElementById("sort");
    searchForm();
    if (!index.measures.length) {
      document.getElementById("controls").hidden = true;
      document.getElementById("heatmap-hint").hidden = true;
      document.getElementById("difficulty").hidden = true;
      renderTopics(null, null);
      return;
    }
    var names = index.measures.map(function (m) { return m.name; });
    function fromHash() {
      var p = params();
      options(measure, names, null, names.indexOf(p.measure) >= 0 ? p.measure : (index.default_measure || names[0]));
      Array.prototype.forEach.call(measure.options, function (o) {
        o.title = (measureInfo(o.value) || {}).definition || "";
      });
      options(a, index.systems, null, index.systems.indexOf(p.a) >= 0 ? p.a : index.systems[0]);
      var second = index.systems.indexOf(p.b) >= 0 ? p.b : (index.systems[1] || index.systems[0]);
      options(b, index.systems, null, second);
      if (p.sort) {
        sort.value = p.sort;
      }
      if (p.filter !== undefined) {
        filter.value = p.filter;
      }
      refresh();
      if (p.measure) {
        document.getElementById("topics").scrollIntoView();
      }
    }
    function refresh() {
      var m = index.measures[names.indexOf(measure.value)];
      load("measure", m.name, m.file, function (values) {
        renderHeatmap(m.name, values);
        renderTopics(m.name, values);
        renderDifficulty(m.name, values);
      });
    }
    [measure, a, b, sort].forEach(function (s) { s.addEventListener("change", refresh); });
    filter.addEventListener("input", refresh);
    window.addEventListener("hashchange", fromHash);
    fromHash();
  }

  function sortableBoard() {
    var table = document.getElementById("leaderboard");
    if (!table) {
      return;
    }
    var body = table.tBodies[0];
    Array.prototype.forEach.call(table.querySelectorAll("button.sort"), function (button) {
      button.addEventListener("click", function () {
        var column = Number(button.getAttribute("data-column"));
        var descending = button.getAttribute("aria-sort") !== "descending";
        Array.prototype.forEach.call(table.querySelectorAll("th"), function (th) { th.removeAttribute("aria-sort"); });
        button.parentNode.setAttribute("aria-sort", descending ? "descending" : "ascending");
        button.setAttribute("aria-sort", descending ? "descending" : "ascending");
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (x, y) {
          var u = x.cells[column].getAttribute("data-value");
          var v = y.cells[column].getAttribute("data-value");
          if (column === 0) {
            return descending ? u.localeCompare(v) : v.localeCompare(u);
          }
          var p = u === "" ? -Infinity : Number(u);
          var q = v === "" ? -Infinity : Number(v);
          return descending ? q - p : p - q;
        });
        rows.forEach(function (r) { body.appendChild(r); });
      });
    });
  }

  /* The colour of a value on this measure's own range (lightest: its lowest value, darkest: its highest), so that a
     measure whose values lie in 0-0.2 is not almost white on a 0-1 scale; the caption states the range. */
  function scale(values) {
    var lo = values.range ? values.range[0] : 0;
    var hi = values.range ? values.range[1] : 1;
    var colour = function (v) {
      var t = hi > lo ? (v - lo) / (hi - lo) : 0.5;
      var light = Math.round(96 - 66 * t);
      return "hsl(212, 70%, " + light + "%)";
    };
    colour.low = lo;
    colour.high = hi;
    return colour;
  }

  function visibleTopics() {
    var text = document.getElementById("filter").value.trim().toLowerCase();
    return data.index.topics.map(function (t, i) { return i; }).filter(function (i) {
      var t = data.index.topics[i];
      return !text || t.id.toLowerCase().indexOf(text) >= 0 || t.query.toLowerCase().indexOf(text) >= 0;
    });
  }

  function order(topics, values) {
    var index = data.index;
    var ai = index.systems.indexOf(document.getElementById("system-a").value);
    var bi = index.systems.indexOf(document.getElementById("system-b").value);
    var how = document.getElementById("sort").value;
    var key = function (i) {
      var x = values ? values.values[ai][i] : null;
      var y = values ? values.values[bi][i] : null;
      if (how === "a") { return x; }
      if (how === "b") { return y; }
      if (how === "diff") { return x === null || y === null ? null : y - x; }
      if (how === "absdiff") { return x === null || y === null ? null : Math.abs(y - x); }
      return null;
    };
    if (how === "topic") {
      return topics;
    }
    return topics.slice().sort(function (i, j) {
      var u = key(i);
      var v = key(j);
      if (u === null && v === null) { return i - j; }
      if (u === null) { return 1; }
      if (v === null) { return -1; }
      return v - u || i - j;
    });
  }

  function renderHeatmap(measure, values) {
    var index = data.index;
    var topics = order(visibleTopics(), values);
    var colour = scale(values);
    var head = el("tr", {}, el("th", {scope: "col", "class": "corner"}, "system \\ topic"), topics.map(function (i) {
      return el("th", {scope: "col", title: index.topics[i].id + ": " + index.topics[i].query, "class": "topic-head"},
        el("span", {}, index.topics[i].id));
    }));
    var rows = index.systems.map(function (system, s) {
      return el("tr", {}, el("th", {scope: "row", "class": "system-name", title: system}, shortName(system)),
        topics.map(function (i, k) {
          var v = values.values[s][i];
          var missed = unanswered(s, i);
          var what = v === null ? "no score" : fmt(measure, v);
          var label = system + ", topic " + index.topics[i].id + ": " + measure + " " + what +
            (missed ? ", not answered (" + (v === null ? "no score" : "counts " + fmt(measure, v)) + ")" : "");
          return el("td", {}, el("a", {
            "class": "cell" + (v === null ? " missing" : "") + (missed ? " unanswered" : ""),
            href: topicLink(index.topics[i].id, system),
            "aria-label": label, title: label, tabindex: s === 0 && k === 0 ? "0" : "-1",
            "data-row": String(s), "data-col": String(k), "data-value": v === null ? "" : String(v),
            style: v === null ? null : "background:" + colour(v)}));
        }));
    });
    var key = el("p", {"class": "heatmap-key", id: "heatmap-key"}, measure + ": colour from ", el("span", {"class": "swatch", style: "background:" +
      colour(colour.low)}), " " + fmt(measure, colour.low) + " (lightest) to ", el("span", {"class": "swatch",
      style: "background:" + colour(colour.high)}), " " + fmt(measure, colour.high) + " (darkest), this measure's " +
      "range over every system and topic; ", el("span", {"class": "swatch missing"}), " hatched: no score; ",
      el("span", {"class": "swatch unanswered"}), " ×: the system did not answer the topic.");
    var table = el("table", {"class": "heatmap", role: "grid", "aria-label": measure + " per system and topic",
      "aria-describedby": "heatmap-key"}, el("thead", {}, head), el("tbody", {}, rows));
    table.addEventListener("keydown", gridKeys);
    show(document.getElementById("heatmap-key-box"), key);
    show(document.getElementById("heatmap"), topics.length ? table : el("p", {}, "No topic matches the filter."));
  }

  function gridKeys(event) {
    var cell = event.target;
    if (!cell.classList || !cell.classList.contains("cell")) {
      return;
    }
    var row = Number(cell.getAttribute("data-row"));
    var col = Number(cell.getAttribute("data-col"));
    var moves = {ArrowRight: [0, 1], ArrowLeft: [0, -1], ArrowDown: [1, 0], ArrowUp: [-1, 0]};
    var target = null;
    if (moves[event.key]) {
      target = [row + moves[event.key][0], col + moves[event.key][1]];
    } else if (event.key === "Home") {
      target = [row, 0];
    } else if (event.key === "End") {
      target = [row, 1e9];
    }
    if (!target) {
      return;
    }
    var table = cell.closest("table");
    var cells = table.querySelectorAll('a.cell[data-row="' + Math.max(0, target[0]) + '"]');
    if (!cells.length) {
      return;
    }
    var next = cells[Math.min(Math.max(0, target[1]), cells.length - 1)];
    event.preventDefault();
    cell.setAttribute("tabindex", "-1");
    next.setAttribute("tabindex", "0");
    next.focus();
  }

  function renderTopics(measure, values) {
    var index = data.index;
    var table = document.getElementById("topic-table");
    var topics = measure ? order(visibleTopics(), values) : data.index.topics.map(function (t, i) { return i; });
    var a = measure ? document.getElementById("system-a").value : null;
    var b = measure ? document.getElementById("system-b").value : null;
    var ai = index.systems.indexOf(a);
    var bi = index.systems.indexOf(b);
    var head = el("tr", {}, el("th", {scope: "col"}, "#"), el("th", {scope: "col"}, "topic"),
      el("th", {scope: "col"}, "query"),
      measure ? [el("th", {scope: "col"}, "A: " + a), el("th", {scope: "col"}, "B: " + b),
        el("th", {scope: "col"}, "B − A")] : el("th", {scope: "col"}, "open"));
    function value(s, name, i) {
      var v = values.values[s][i];
      var missed = unanswered(s, i);
      return el("a", {"class": "num", href: topicLink(index.topics[i].id, name), "data-value": v === null ? "" : String(v),
        title: missed ? name + " did not answer this topic" : null},
        fmt(measure, v) + (missed ? " ×" : ""));
    }
    var rows = topics.map(function (i) {
      var t = index.topics[i];
      var cells = [el("td", {}, String(i + 1)), el("th", {scope: "row"}, t.id), el("td", {"class": "query"}, t.query)];
      if (measure) {
        var x = values.values[ai][i];
        var y = values.values[bi][i];
        var diff = x === null || y === null ? null : y - x;
        cells.push(el("td", {}, value(ai, a, i)), el("td", {}, value(bi, b, i)));
        cells.push(el("td", {}, el("a", {"class": "num", href: topicLink(t.id, a, b)},
          diff === null ? "n/a" : (diff > 0 ? "+" : "") + fmt(measure, diff))));
      } else {
        cells.push(el("td", {}, el("a", {href: topicLink(t.id, index.systems[0])}, "open")));
      }
      return el("tr", {}, cells);
    });
    show(table, [el("caption", {}, measure ? measure + " per topic: A, B and their difference (B − A opens " +
      "the two side by side); × the system did not answer the topic" : "Topics"), el("thead", {}, head),
      el("tbody", {}, rows)]);
  }

  /* Topic difficulty: per topic the mean over the systems with a value, their spread, and the topics where every
     system fails (its best value is the worst the measure has: 0, or for a lower-is-better measure its highest). */
  function renderDifficulty(measure, values) {
    var index = data.index;
    var box = document.getElementById("difficulty-body");
    var info = measureInfo(measure);
    if (!info.better) {
      show(box, el("p", {"class": "note"}, measure + " has no better direction: no topic is harder than another by " +
        "it. Choose another measure."));
      return;
    }
    var lower = info.better === "lower";
    var rows = index.topics.map(function (t, i) {
      var vs = values.values.map(function (row) { return row[i]; }).filter(function (v) { return v !== null; });
      if (!vs.length) {
        return null;
      }
      var mean = vs.reduce(function (x, y) { return x + y; }, 0) / vs.length;
      var sd = Math.sqrt(vs.reduce(function (x, y) { return x + (y - mean) * (y - mean); }, 0) / vs.length);
      var min = Math.min.apply(null, vs);
      var max = Math.max.apply(null, vs);
      var failed = lower ? min > 0 && min === max : max === 0;
      return {i: i, mean: mean, sd: sd, min: min, max: max, n: vs.length, failed: failed};
    }).filter(function (r) { return r; });
    rows.sort(function (x, y) { return (lower ? y.mean - x.mean : x.mean - y.mean) || x.i - y.i; });
    var lo = values.range ? values.range[0] : 0;
    var hi = values.range ? values.range[1] : 1;
    var span = hi > lo ? hi - lo : 1;
    var failed = rows.filter(function (r) { return r.failed; });
    var body = rows.map(function (r, k) {
      var t = index.topics[r.i];
      var bar = el("div", {"class": "spread", "aria-hidden": "true"},
        el("span", {"class": "range", style: "left:" + (100 * (r.min - lo) / span) + "%;width:" +
          Math.max(1, 100 * (r.max - r.min) / span) + "%"}),
        el("span", {"class": "mean", style: "left:" + (100 * (r.mean - lo) / span) + "%"}));
      return el("tr", {"class": r.failed ? "failed" : null}, el("td", {}, String(k + 1)),
        el("th", {scope: "row"}, el("a", {href: topicLink(t.id, index.systems[0])}, t.id)),
        el("td", {"class": "query"}, t.query), el("td", {"class": "num"}, fmt(measure, r.mean)),
        el("td", {"class": "num"}, fmt(measure, r.min) + " – " + fmt(measure, r.max)),
        el("td", {"class": "num"}, fmt(measure, r.sd)), el("td", {}, bar),
        el("td", {}, r.failed ? "every system fails" : ""));
    });
    show(box, [el("p", {}, failed.length ? failed.length + " topic(s) where every system fails by " + measure + " (" +
      (lower ? "no system below its worst value" : "no system above 0") + "): " +
      failed.slice(0, 12).map(function (r) { return index.topics[r.i].id; }).join(", ") +
      (failed.length > 12 ? ", ..." : "") + "." : "No topic where every system fails by " + measure + "."),
      scroller("topic difficulty", el("table", {"class": "difficulty"}, el("caption", {}, "Topics by " + measure +
        ", hardest first: the mean over the systems with a value, the lowest and highest, the standard deviation"),
        el("thead", {}, el("tr", {}, ["#", "topic", "query", "mean", "lowest – highest", "sd", "spread", ""].map(
          function (h) { return el("th", {scope: "col"}, h); }))), el("tbody", {}, body)))]);
  }

  /* The search of the answers' texts: each system's answers load when searched (data/answers-S.js). */
  function searchForm() {
    var form = document.getElementById("search-form");
    if (!form) {
      return;
    }
    var index = data.index;
    var which = document.getElementById("search-system");
    options(which, [""].concat(index.answers), ["every system"].concat(index.answers), "");
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      var text = document.getElementById("search-text").value.trim();
      var out = document.getElementById("search-results");
      if (!text) {
        show(out, el("p", {"class": "note"}, "Type a word or phrase of the answers."));
        return;
      }
      var systems = which.value ? [which.value] : index.answers.slice();
      var found = [];
      var needle = text.toLowerCase();
      show(out, el("p", {"class": "note"}, "Searching " + systems.length + " system(s)' answers…"));
      (function next(k) {
        if (k >= systems.length) {
          showResults(out, text, found);
          return;
        }
        var file = "answers-" + ("00" + index.systems.indexOf(systems[k])).slice(-3) + ".js";
        load("answers", systems[k], file, function (answers) {
          answers.answers.forEach(function (pair) {
            var at = pair[1].toLowerCase().indexOf(needle);
            if (at >= 0) {
              found.push([answers.system, pair[0], pair[1], at]);
            }
          });
          next(k + 1);
        });
      }(0));
    });
  }

  function showResults(out, text, found) {
    var shown = found.slice(0, 200);
    show(out, [el("p", {}, found.length + " answer(s) contain “" + text + "”" + (found.length > shown.length ?
      "; the first " + shown.length + " are listed" : "") + "."),
      el("ol", {"class": "results"}, shown.map(function (r) {
        var from = Math.max(0, r[3] - 60);
        var to = Math.min(r[2].length, r[3] + text.length + 60);
        return el("li", {}, el("a", {href: topicLink(r[1], r[0])}, r[0] + " on " + r[1]), ": ",
          from > 0 ? "…" : "", r[2].slice(from, r[3]), el("mark", {}, r[2].slice(r[3], r[3] + text.length)),
          r[2].slice(r[3] + text.length, to), to < r[2].length ? "…" : "");
      }))]);
  }

  // ---------------------------------------------------------------------------------------- drill-down

  /* Citation support: a colour-blind-safe palette whose three grades differ in lightness by 3:1 or more, and a
     glyph and a word in every marker, so that no state is told by colour alone. */
  var SUPPORT = {full: "full support", partial: "partial support", none: "no support",
    unjudged: "unjudged (missing or failed)", unknown: "no support judgment in the files"};
  var GLYPH = {full: "✓", partial: "◐", none: "✗", unjudged: "?", unknown: "–"};
  var ASSIGNMENT = {support: "supported", partial_support: "partially supported", not_support: "not supported"};
  var MARK = {support: "✓", partial_support: "½", not_support: "✗"};
  var VERDICT = {satisfied: "satisfied", partially_satisfied: "partially satisfied", not_satisfied: "not satisfied"};
  var VALUE = {satisfied: 1, partially_satisfied: 0.5, not_satisfied: 0};

  function topicPage() {
    var index = data.index;
    var topic = document.getElementById("topic");
    var system = document.getElementById("system");
    var compare = document.getElementById("compare");
    options(topic, index.topics.map(function (t) { return t.id; }),
      index.topics.map(function (t, i) { return (i + 1) + ". " + t.id; }), null);
    function go() {
      location.hash = hash({topic: topic.value, system: system.value, compare: compare.value});
    }
    [topic, system, compare].forEach(function (s) { s.addEventListener("change", go); });
    function render() {
      var p = params();
      var i = Math.max(0, index.topics.map(function (t) { return t.id; }).indexOf(p.topic));
      var t = index.topics[i];
      topic.value = t.id;
      options(system, index.systems, null, index.systems.indexOf(p.system) >= 0 ? p.system : index.systems[0]);
      options(compare, [""].concat(index.systems), ["(none)"].concat(index.systems), p.compare || "");
      var prev = index.topics[(i + index.topics.length - 1) % index.topics.length];
      var next = index.topics[(i + 1) % index.topics.length];
      document.getElementById("prev").setAttribute("href", topicLink(prev.id, system.value, compare.value));
      document.getElementById("next").setAttribute("href", topicLink(next.id, system.value, compare.value));
      load("topic", t.id, t.file, function (value) {
        renderTopic(value, system.value, compare.value);
      });
    }
    window.addEventListener("hashchange", render);
    document.addEventListener("keydown", function (event) {
      if (typing(event) || event.altKey || event.ctrlKey || event.metaKey) {
        return;
      }
      if (event.key === "n" || event.key === "p") {
        location.href = document.getElementById(event.key === "n" ? "next" : "prev").getAttribute("href");
      }
    });
    render();
  }

  function renderTopic(topic, system, compare) {
    var systems = [system].concat(compare && compare !== system ? [compare] : []);
    var head = el("div", {"class": "topic-head"}, el("h2", {id: "topic-title"}, "Topic " + topic.id),
      topic.query ? el("p", {"class": "query"}, topic.query) : null, turn(topic.turn));
    var panels = el("div", {"class": systems.length > 1 ? "panels two" : "panels"}, systems.map(function (s, k) {
      return panel(topic, s, k);
    }));
    show(document.getElementById("topic-body"), [head, matrix(topic, systems), panels, battles(topic, systems)]);
    document.title = "Topic " + topic.id + " · " + systems.join(" vs ") + " · " + data.index.title;
  }

  function turn(info) {
    if (!info) {
      return null;
    }
    return el("p", {"class": "turn"}, "iKAT turn: depth " + info.depth + ", " +
      (info.personal ? "personal (a PTKB statement is relevant)" : "not personal"));
  }

  function section(title, content) {
    return el("section", {"class": "part"}, el("h4", {}, title), content);
  }

  /* The topic's nuggets (vital first) or rubric criteria against every system: what each got, and what none got. */
  function matrix(topic, chosen) {
    var index = data.index;
    var systems = index.systems.filter(function (s) { return topic.systems[s]; });
    var parts = [];
    function systemHeads(list) {  // the column heads of a matrix's systems, the chosen ones marked
      return list.map(function (s) {
        return el("th", {scope: "col", "class": "sys" + (chosen.indexOf(s) >= 0 ? " chosen" : ""), title: s},
          el("span", {}, s));
      });
    }
    var nuggetSystems = systems.filter(function (s) { return topic.systems[s].assignment || topic.systems[s].unanswered; });
    if (topic.nuggets.length && nuggetSystems.length) {
      var rank = {vital: 0, okay: 1};
      var nuggets = topic.nuggets.map(function (n, i) { return [n, i]; }).sort(function (x, y) {
        var u = rank[x[0].importance] === undefined ? 2 : rank[x[0].importance];
        var v = rank[y[0].importance] === undefined ? 2 : rank[y[0].importance];
        return u - v || x[1] - y[1];
      });
      var rows = nuggets.map(function (pair) {
        var n = pair[0];
        var got = 0;
        var cells = nuggetSystems.map(function (s) {
          var d = topic.systems[s];
          var label = d.assignment ? d.assignment[n.id] : null;
          if (label === "support" || label === "partial_support") {
            got += 1;
          }
          var what = label ? ASSIGNMENT[label] || label : d.unanswered ? "not answered" : "no assignment";
          return el("td", {"class": "m assign-" + (label || "none")}, el("a", {href: topicLink(topic.id, s),
            title: s + ": " + what, "aria-label": s + ": " + what}, label ? MARK[label] || "?" : d.unanswered ? "×" : "·"));
        });
        return el("tr", {"class": got ? null : "nobody"}, el("th", {scope: "row", "class": "item"},
          el("span", {"class": "imp imp-" + n.importance}, n.importance || "not scored"), " ", n.text),
          cells, el("td", {"class": "got"}, got ? got + " of " + nuggetSystems.length : "no system"));
      });
      parts.push(scroller("nuggets against every system", el("table", {"class": "matrix nuggets-matrix"},
        el("caption", {}, "Nuggets (vital first) against every system: ✓ supported, ½ partially, ✗ not, × not " +
          "answered; a row no system got is marked"),
        el("thead", {}, el("tr", {}, el("th", {scope: "col"}, "nugget"), systemHeads(nuggetSystems),
          el("th", {scope: "col"}, "systems"))), el("tbody", {}, rows))));
    }
    var rubricSystems = systems.filter(function (s) { return topic.systems[s].verdicts || topic.systems[s].unanswered; });
    if (topic.rubric.length && rubricSystems.length) {
      var criteria = topic.rubric.map(function (c, i) { return [c, i]; }).sort(function (x, y) {
        return (y[0].weight > 0) - (x[0].weight > 0) || Math.abs(y[0].weight) - Math.abs(x[0].weight) || x[1] - y[1];
      });
      var crows = criteria.map(function (pair) {
        var c = pair[0];
        var cells = rubricSystems.map(function (s) {
          var d = topic.systems[s];
          var v = d.verdicts ? d.verdicts[pair[1]] : null;
          var p = points(c.weight, v);
          return el("td", {"class": "m effect-" + p.effect}, el("a", {href: topicLink(topic.id, s),
            title: s + ": " + (v ? VERDICT[v] : d.unanswered ? "not answered" : "no verdict") + ", " + p.text},
            v ? p.short : d.unanswered ? "×" : "·"));
        });
        return el("tr", {}, el("th", {scope: "row", "class": "item"}, c.weight < 0 ? el("span",
          {"class": "flaw"}, "flaw") : null, " ", c.text, " (", (c.weight > 0 ? "+" : "") + c.weight, ")"), cells);
      });
      parts.push(scroller("rubric criteria against every system", el("table", {"class": "matrix rubric-matrix"},
        el("caption", {}, "Rubric criteria against every system: the points each gained (+) or lost (−); a flaw " +
          "(negative weight) present loses its weight"),
        el("thead", {}, el("tr", {}, el("th", {scope: "col"}, "criterion (weight)"), systemHeads(rubricSystems))),
        el("tbody", {}, crows))));
    }
    if (!parts.length) {
      return null;
    }
    return el("details", {"class": "all-systems", open: "open"}, el("summary", {}, "All systems on this topic"), parts);
  }

  /* What a rubric criterion did to the score: w x v (satisfied 1, partially 0.5, not 0), by its effect. */
  function points(weight, verdict) {
    if (!verdict) {
      return {effect: "none", text: "no points", short: "·"};
    }
    var v = VALUE[verdict];
    var got = weight * v;
    var text = (got > 0 ? "+" : got < 0 ? "−" : "") + Math.abs(got) + (weight > 0 ? " of " + weight : "");
    if (weight < 0) {
      return got < 0 ? {effect: "lost", text: text + " (flaw present)", short: "−" + Math.abs(got)} :
        {effect: "avoided", text: "0 (flaw absent)", short: "0"};
    }
    return got > 0 ? {effect: got === weight ? "gained" : "partly", text: text, short: "+" + got} :
      {effect: "missed", text: text, short: "0"};
  }

  function panel(topic, system, k) {
    var d = topic.systems[system] || {};
    var parts = [el("h3", {"class": "system"}, system)];
    if (!topic.systems[system]) {
      parts.push(el("p", {"class": "note"}, "The folders hold nothing of " + system + " on this topic."));
    }
    if (d.unanswered) {
      parts.push(el("p", {"class": "note unanswered"}, system + " did not answer this topic: its nugget and rubric " +
        "scores count 0 here (trec_eval's rule; none with trec-rag --unanswered omit), and it has no support or " +
        "length score."));
    }
    if (d.missing) {
      parts.push(el("p", {"class": "note warn"}, "The folder lacks " + d.missing.join("; ") +
        ": what those files hold is not shown here."));
    }
    parts.push(scores(d.scores, system));
    if (d.answer) { parts.push(section("Answer", answer(d, topic, k))); }
    if (d.ikat) { parts.push(section("Response and gold nuggets (iKAT)", ikat(d.ikat))); }
    if (topic.nuggets.length) { parts.push(section("Nuggets", nuggets(topic, d))); }
    if (topic.sub_narratives.length) {
      parts.push(section("Sub-narratives (covered by a supported vital nugget)", subNarratives(topic, d.sub_narratives)));
    }
    if (topic.rubric.length) { parts.push(section("Rubric", rubric(topic.rubric, d))); }
    if (d.retrieved || (d.answer && d.answer.sentences.length)) { parts.push(section("Segments", segments(topic, d, k))); }
    return el("article", {"class": "panel", "aria-label": system}, parts);
  }

  function scores(values, system) {
    if (!values) {
      return el("p", {"class": "note"}, "No score of this system on this topic in the scores file.");
    }
    return el("dl", {"class": "scores"}, Object.keys(values).map(function (m) {
      var info = measureInfo(m);
      return el("div", {}, el("dt", {title: info ? info.definition : null}, m), el("dd", {}, el("a", {
        "class": "num", href: "index.html" + hash({measure: m, a: system}), "data-measure": m,
        "data-value": values[m] === null ? "" : String(values[m]), title: "all topics of " + system + " by " + m},
      fmt(m, values[m]))));
    }));
  }

  function segmentId(topic, k, docno) {
    return "seg-" + k + "-" + Object.keys(topic.segments).indexOf(docno);
  }

  /* An answer, each citation a short marker [n] (its reference's number) with the support glyph; the marker opens
     the cited segment's text in place, under its sentence. */
  function answer(d, topic, k) {
    var a = d.answer;
    if (!a.sentences.length) {
      return [el("p", {"class": "note"}, "The folder has the answer's text only (no sentences or citations); give " +
        "its answer file with --answers to see them."), el("p", {"class": "answer-text"}, a.text)];
    }
    return el("div", {"class": "answer"}, a.sentences.map(function (s, j) {
      var uncited = !s.citations.length && a.judged ?
        el("span", {"class": "cite support-uncited", title: "no citation: counts as not supported"}, "uncited") : null;
      var box = el("div", {"class": "cited", hidden: "hidden"});
      var markers = s.citations.map(function (c, n) {
        var label = c.support === null ? "unknown" : c.support;
        var other = d.support_b ? d.support_b[j + ":" + n] : undefined;
        var differs = other !== undefined && other !== label;
        var what = SUPPORT[label] + (other !== undefined ? "; second judge: " + SUPPORT[other] : "");
        var marker = el("button", {type: "button", "class": "cite support-" + label + (differs ? " differs" : ""),
          title: "[" + c.n + "] " + c.docno + ": " + what, "aria-expanded": "false",
          "aria-label": "citation [" + c.n + "], " + c.docno + ", " + what + ": show the cited text",
          "data-support": label, "data-docno": c.docno}, "[" + c.n + "]", el("span", {"class": "glyph",
          "aria-hidden": "true"}, GLYPH[label]), differs ? el("span", {"class": "glyph", "aria-hidden": "true"}, "≠") : null);
        marker.addEventListener("click", function () {
          var open = marker.getAttribute("aria-expanded") === "true";
          Array.prototype.forEach.call(marker.parentNode.querySelectorAll("button.cite"), function (b) {
            b.setAttribute("aria-expanded", "false");
          });
          if (open) {
            box.hidden = true;
            return;
          }
          marker.setAttribute("aria-expanded", "true");
          var seg = topic.segments[c.docno] || {};
          show(box, [el("p", {"class": "cited-head"}, "[" + c.n + "] " + c.docno + " — " + SUPPORT[label] +
            (other !== undefined ? " (second judge: " + SUPPORT[other] + ")" : "") +
            (seg.grade === null || seg.grade === undefined ? "" : "; relevance grade " + seg.grade) + " ",
            el("a", {href: "#" + segmentId(topic, k, c.docno)}, "in the segments")),
            el("p", {}, seg.text === null || seg.text === undefined ? "The segment's text was not given " +
              "(--collection, --dataset or --docs)." : seg.text)]);
          box.hidden = false;
        });
        return marker;
      });
      return el("div", {"class": "sentence-wrap"}, el("p", {"class": "sentence", "data-sentence": String(j)}, s.text,
        " ", uncited, markers), box);
    }));
  }

  function nuggets(topic, d) {
    var assignment = d.assignment;
    var second = d.assignment_b;
    var rows = topic.nuggets.map(function (n) {
      var label = assignment ? assignment[n.id] : null;
      var other = second ? second[n.id] : undefined;
      var text = label ? ASSIGNMENT[label] || label : d.unanswered ? "not answered" :
        assignment ? "not assigned" : "no assignment in the files";
      return el("tr", {"class": other !== undefined && other !== label ? "differs" : null}, el("td", {}, n.id),
        el("td", {}, el("span", {"class": "imp imp-" + n.importance}, n.importance || "not scored")),
        el("td", {"class": "text"}, n.text),
        el("td", {"class": label ? "assign-" + label : "assign-none"}, label ? MARK[label] + " " : "", text),
        replied(d) ? el("td", {"class": "reply-cell"}, label ? judgeReply(d, "assignment", n.id) : null) : null,
        second ? el("td", {"class": other ? "assign-" + other : "assign-none"},
          other ? MARK[other] + " " + (ASSIGNMENT[other] || other) : "no label",
          other !== undefined && other !== label ? el("strong", {"class": "disagree"}, " ≠") : null) : null,
        topic.sub_narratives.length ? el("td", {}, n.sub_narrative === null ? "" : topic.sub_narratives[n.sub_narrative]) : null);
    });
    return [scroller("nuggets", el("table", {"class": "nuggets"}, el("thead", {}, el("tr", {}, el("th", {}, "id"),
      el("th", {}, "importance"), el("th", {}, "nugget"), el("th", {}, "assignment"),
      replied(d) ? el("th", {}, "judge's reply") : null, second ? el("th", {}, "second judge") : null,
      topic.sub_narratives.length ? el("th", {}, "sub-narrative") : null)), el("tbody", {}, rows))),
      repliesNotRecorded(d)];
  }

  function replied(d) {
    return Boolean(d.replies && d.replies.recorded);
  }

  /* The judge's reply a verdict was parsed from (RUN.replies.jsonl), expandable in place beside it: the text as the
     LLM gave it (its thinking taken out), and the items that one reply judged (a batch). */
  function judgeReply(d, step, key) {
    var r = d.replies;
    if (!replied(d) || r[step][key] === undefined) {
      return "no reply recorded";
    }
    var reply = r.replies[r[step][key]];
    var what = step === "assignment" ? " nugget(s): " : " criteria: ";
    return el("details", {"class": "judge-reply", "data-step": step},
      el("summary", {}, "reply", el("span", {"class": "visually-hidden"}, " of the judge on " + key)),
      el("p", {"class": "hint"}, "This one reply judged " + reply.items.length + what + reply.items.join(", ") + "."),
      el("pre", {"class": "reply"}, reply.text));
  }

  function repliesNotRecorded(d) {
    return d.replies && !d.replies.recorded ? el("p", {"class": "note replies-missing"}, "The judges' replies are " +
      "not recorded in this folder (trec-rag keeps them in RUN.replies.jsonl; a folder written before, by another " +
      "command, or of labels judged elsewhere has none): the verdicts are shown without them.") : null;
  }

  function subNarratives(topic, credit) {
    return el("ul", {"class": "subs"}, topic.sub_narratives.map(function (name, k) {
      var c = credit ? credit[k] : null;
      var what = c === null ? "no assignment" : c === 1 ? "covered (a vital nugget supported)" :
        c === 0.5 ? "partly covered (a vital nugget partially supported)" : "not covered";
      return el("li", {"class": c === 1 ? "covered" : c === 0.5 ? "partly" : "uncovered"}, name + ": " + what);
    }));
  }

  /* The rubric: each criterion's axis, weight (a negative weight is a flaw), the verdict, and the points it gained or
     lost (w x v), coloured by its effect on the score, not by the verdict; the sum over the positive weights is the
     rubric score (ternary). */
  function rubric(criteria, d) {
    var verdicts = d.verdicts;
    var gained = 0;
    var possible = 0;
    var rows = criteria.map(function (c, i) {
      var v = verdicts ? verdicts[i] : null;
      var p = points(c.weight, v);
      if (c.weight > 0) { possible += c.weight; }
      if (v) { gained += c.weight * VALUE[v]; }
      return el("tr", {"class": "effect-" + p.effect}, el("td", {"class": "text"}, c.text), el("td", {}, c.axis || ""),
        el("td", {}, c.weight < 0 ? el("span", {"class": "flaw"}, "flaw") : null, " " + String(c.weight)),
        el("td", {}, c.tier || ""),
        el("td", {"class": v ? "verdict-" + v : ""}, v ? VERDICT[v] : d.unanswered ? "not answered" :
          "no verdict in the files"),
        replied(d) ? el("td", {"class": "reply-cell"}, v ? judgeReply(d, "rubric", String(i)) : null) : null,
        el("td", {"class": "points"}, v ? p.text : ""));
    });
    var total = verdicts && possible ? el("p", {"class": "hint"}, "Points: " + gained + " of " + possible +
      " (the positive weights) = " + (gained / possible).toFixed(4) + ", the rubric score with partial credit.") : null;
    return [scroller("rubric", el("table", {"class": "rubric"}, el("thead", {}, el("tr", {}, el("th", {}, "criterion"),
      el("th", {}, "axis"), el("th", {}, "weight"), el("th", {}, "tier"), el("th", {}, "verdict"),
      replied(d) ? el("th", {}, "judge's reply") : null,
      el("th", {}, "points"))), el("tbody", {}, rows))), total, verdicts ? repliesNotRecorded(d) : null];
  }

  function segments(topic, d, k) {
    var listed = {};
    var rows = [];
    function row(docno, rank, score) {
      var seg = topic.segments[docno] || {};
      listed[docno] = true;
      return el("tr", {id: segmentId(topic, k, docno)}, el("td", {}, rank === null ? "cited" : String(rank)),
        el("td", {}, docno), el("td", {}, score === null || score === undefined ? "" : String(score)),
        el("td", {"class": "grade"}, seg.grade === null || seg.grade === undefined ? "not judged" : String(seg.grade)),
        el("td", {"class": "segment-text text"}, seg.text === null || seg.text === undefined ?
          el("span", {"class": "note"}, "text not given (--collection, --dataset or --docs)") : seg.text));
    }
    (d.retrieved || []).forEach(function (r) { rows.push(row(r[0], r[1], r[2])); });
    ((d.answer || {}).sentences || []).forEach(function (s) {
      s.citations.forEach(function (c) { if (!listed[c.docno]) { rows.push(row(c.docno, null, null)); } });
    });
    return scroller("segments", el("table", {"class": "segments"}, el("thead", {}, el("tr", {}, el("th", {}, "rank"),
      el("th", {}, "segment"), el("th", {}, "score"), el("th", {}, "relevance"), el("th", {}, "text"))),
      el("tbody", {}, rows)));
  }

  function ikat(m) {
    function decisions(list, title) {
      if (!list.length) {
        return null;
      }
      return el("table", {"class": "decisions"}, el("caption", {}, title), el("thead", {}, el("tr", {},
        el("th", {}, "nugget"), el("th", {}, "matched"), el("th", {}, "matcher score"))),
        el("tbody", {}, list.map(function (x) {
          return el("tr", {"class": x.matched ? "matched" : "unmatched"}, el("td", {}, (x.id ? x.id + ": " : "") + x.text),
            el("td", {}, x.matched ? "✓ yes" : "✗ no"), el("td", {}, x.score === null ? "" : x.score.toFixed(3)));
        })));
    }
    return [el("p", {"class": "answer-text"}, m.response),
      decisions(m.ntr, "Gold nuggets in the response (NtR: Recall_NtR)"),
      decisions(m.ntn_recall, "Gold nuggets entailed by an extracted nugget (NtN: Recall_NtN)"),
      decisions(m.ntn_precision, "Extracted nuggets entailing a gold nugget (NtN: Precision_NtN)")];
  }

  function answerText(topic, system) {
    var d = topic.systems[system] || {};
    if (d.answer) {
      return d.answer.sentences.length ? d.answer.sentences.map(function (s) { return s.text; }).join(" ") : d.answer.text;
    }
    return d.ikat ? d.ikat.response : "(the answer is not in the folders; give its file with --answers)";
  }

  /* A battle's outcome; judged in both orders, whether the orders agreed (the same system both times) or disagreed
     (a tie). */
  function outcome(b) {
    if (b.verdict === null) {
      return "failed: " + (b.error || "no verdict") + " (counts nowhere)";
    }
    var result = b.winner ? b.winner + " preferred" : "tie";
    if (b.verdicts.length === 2) {
      return result + (b.agree ? " — both orders agree" : " — the two orders disagreed, so a tie");
    }
    return result + " (verdict " + b.verdict + ")";
  }

  function orders(b) {
    if (b.verdicts.length !== 2) {
      return "";
    }
    function said(v, first, second) {
      return v === "A" ? first : v === "B" ? second : "a tie";
    }
    return "; first order (A = " + b.a + ", B = " + b.b + "): " + said(b.verdicts[0], b.a, b.b) +
      ", second order (A = " + b.b + ", B = " + b.a + "): " + said(b.verdicts[1], b.b, b.a) +
      (b.agree ? " — the same both times" : " — they disagree");
  }

  function battles(topic, systems) {
    if (!topic.battles.length) {
      return null;
    }
    var mine = topic.battles.filter(function (b) { return systems.indexOf(b.a) >= 0 || systems.indexOf(b.b) >= 0; });
    var rest = topic.battles.length - mine.length;
    return el("section", {"class": "battles"}, el("h3", {}, "Arena battles on this topic"),
      el("p", {"class": "hint"}, mine.length + " of the topic's " + topic.battles.length + " battles involve " +
        systems.join(" or ") + (rest ? "; choose another system to see the others" : "") + "."),
      mine.map(function (b) {
        return el("details", {"class": "battle"}, el("summary", {}, "A: " + b.a + " vs B: " + b.b + " — " + outcome(b)),
          el("p", {"class": "judge"}, "Judge: " + (b.judge || "not recorded") + orders(b)),
          b.raw.length ? el("pre", {"class": "reply"}, b.raw.join("\n\n— the other order —\n\n")) :
            el("p", {"class": "note"}, "No reply recorded (a baseline judge or a verdict given by a person)."),
          el("div", {"class": "panels two"}, el("div", {}, el("h4", {}, "A: " + b.a), el("p", {}, answerText(topic, b.a))),
            el("div", {}, el("h4", {}, "B: " + b.b), el("p", {}, answerText(topic, b.b)))));
      }));
  }

  // -------------------------------------------------------------------------------------------- arena

  function arenaPage(arena) {
    var body = document.getElementById("arena-body");
    var parts = [el("p", {}, arena.battles + " battles" + (arena.failed ? " (" + arena.failed + " failed, counted " +
      "nowhere)" : "") + "; judge: " + arena.judge + ".")];
    if (arena.ratings.length) {
      var scores = arena.ratings.map(function (r) { return r.score; });
      var bounds = arena.ratings.map(function (r) {
        return r.low === null ? null : [r.low === "-inf" ? -Infinity : r.low, r.high === "+inf" ? Infinity : r.high];
      });
      var finite = scores.concat([].concat.apply([], bounds.filter(function (b) { return b; }))).filter(function (v) {
        return v !== null && isFinite(v);
      });
      var lo = Math.min.apply(null, finite);
      var hi = Math.max.apply(null, finite);
      var span = hi > lo ? hi - lo : 1;
      parts.push(el("h2", {id: "ratings"}, "Ratings"), scroller("ratings", el("table", {"class": "ratings"},
        el("caption", {}, "Bradley–Terry ratings (mean 1000, 400 per base-10 log-odds) with their intervals"),
        el("thead", {}, el("tr", {}, ["#", "system", "rating", "interval", "won–lost–tied", "battles", ""].map(
          function (h) { return el("th", {scope: "col"}, h); }))),
        el("tbody", {}, arena.ratings.map(function (r, k) {
          var b = bounds[k];
          var left = b ? Math.max(0, (Math.max(b[0], lo) - lo) / span) : null;
          var right = b ? Math.min(1, (Math.min(b[1], hi) - lo) / span) : null;
          return el("tr", {}, el("td", {}, String(k + 1)), el("th", {scope: "row"}, r.system),
            el("td", {"class": "num"}, r.score === null ? "n/a" : r.score.toFixed(0)), el("td", {"class": "num"},
              r.interval || "none"), el("td", {"class": "num"}, r.wins + "–" + r.losses + "–" + r.ties),
            el("td", {"class": "num"}, String(r.judgments)),
            el("td", {}, el("div", {"class": "spread", "aria-hidden": "true"}, b ? el("span", {"class": "range",
              style: "left:" + 100 * left + "%;width:" + Math.max(0.5, 100 * (right - left)) + "%"}) : null,
              el("span", {"class": "mean", style: "left:" + 100 * (r.score - lo) / span + "%"}))));
        })))));
    }
    if (arena.bias) {
      parts.push(el("h2", {id: "bias"}, "Position bias"), el("p", {}, arena.bias.text),
        arena.bias.caveat ? el("p", {"class": "note warn"}, arena.bias.caveat) : null);
    }
    if (arena.systems.length > 1 && arena.matrix.some(function (row) { return row.some(function (c) { return c; }); })) {
      parts.push(el("h2", {id: "win-rates"}, "Win rates"), scroller("win rates", el("table", {"class": "winrates"},
        el("caption", {}, "How often the row's system was preferred to the column's (a tie half each way), and " +
          "its wins–losses–ties; darker: more often"),
        el("thead", {}, el("tr", {}, el("th", {scope: "col", "class": "corner"}, "row vs column"),
          arena.systems.map(function (s) { return el("th", {scope: "col", "class": "sys", title: s}, el("span", {}, s)); }))),
        el("tbody", {}, arena.systems.map(function (a, i) {
          return el("tr", {}, el("th", {scope: "row", "class": "system-name"}, a), arena.matrix[i].map(function (c, j) {
            if (!c) {
              return el("td", {"class": "none"}, i === j ? "" : "–");
            }
            var light = Math.round(96 - 60 * (c.rate === null ? 0.5 : c.rate));
            return el("td", {"class": "rate", style: "background:hsl(212,70%," + light + "%);color:" +
              (light < 60 ? "#fff" : "#1b1f24"), title: a + " vs " + arena.systems[j] + ": " + c.wins + " won, " +
              c.losses + " lost, " + c.ties + " tied"}, c.rate === null ? "n/a" : c.rate.toFixed(2),
              el("small", {}, " " + c.wins + "–" + c.losses + "–" + c.ties));
          }));
        })))));
    }
    var select = el("select", {id: "lost-system"});
    var list = el("div", {id: "lost-list"});
    parts.push(el("h2", {id: "lost"}, "Lost battles"), el("form", {"class": "controls", onsubmit: "return false"},
      el("label", {}, "System ", select)), list);
    show(body, parts);
    options(select, arena.systems, null, arena.systems[0]);
    function renderLost() {
      var s = select.value;
      var losses = arena.lost[s] || [];
      show(list, losses.length ? [el("p", {}, s + " lost " + losses.length + " battle(s); each opens the topic with the " +
        "two answers side by side."), el("ul", {"class": "losses"}, losses.map(function (l) {
        var name = function (i) { return arena.systems[i]; };
        return el("li", {}, el("a", {href: topicLink(l[0], s, name(l[1]))}, "topic " + l[0] + ": " + name(l[1]) +
          " preferred"), " (A: " + name(l[2]) + ", B: " + name(l[3]) + (l[4] === null ? "" : l[4] ?
          "; both orders agree" : "; orders disagree") + ")");
      }))] : el("p", {}, s + " lost no battle."));
    }
    select.addEventListener("change", renderLost);
    renderLost();
  }

  // ------------------------------------------------------------------------------------------- judges

  function judgesPage(j) {
    var body = document.getElementById("judges-body");
    var parts = [el("p", {}, "A: " + j.a + ". B: " + j.b + ". Items both judged are compared; an item only one " +
      "judged is counted, not compared.")];
    j.kinds.forEach(function (k) {
      parts.push(el("h2", {}, k.kind === "assignment" ? "Nugget assignment" : "Citation support"),
        el("p", {}, k.items + " items both judged: exact agreement " + (k.exact === null ? "n/a" : (100 * k.exact).toFixed(1) +
          "%") + ", Cohen's κ " + (k.kappa === null ? "n/a" : k.kappa.toFixed(3)) + "; " + k.only_a + " judged by A only, " +
          k.only_b + " by B only."),
        scroller("confusion", el("table", {"class": "confusion"}, el("caption", {}, "Rows: A's label; columns: B's " +
          "label; the diagonal is agreement"), el("thead", {}, el("tr", {}, el("th", {scope: "col"}, "A \\ B"),
          k.labels.map(function (l) { return el("th", {scope: "col"}, l); }))),
          el("tbody", {}, k.labels.map(function (l, r) {
            return el("tr", {}, el("th", {scope: "row"}, l), k.confusion[r].map(function (n, c) {
              return el("td", {"class": r === c ? "num agree" : n ? "num disagree" : "num"}, String(n));
            }));
          })))));
    });
    var rows = [];
    j.topics.forEach(function (t) {
      Object.keys(t.systems).forEach(function (s) {
        var c = t.systems[s];
        var any = c.assignment[1] + c.support[1];
        rows.push(el("tr", {"class": any ? "differs" : null}, el("th", {scope: "row"}, t.id), el("td", {}, s),
          el("td", {"class": "num"}, c.assignment[0] ? c.assignment[1] + " of " + c.assignment[0] : "–"),
          el("td", {"class": "num"}, c.support[0] ? c.support[1] + " of " + c.support[0] : "–"),
          el("td", {}, el("a", {href: topicLink(t.id, s)}, any ? "open: the disagreements are marked ≠" : "open"))));
      });
    });
    parts.push(el("h2", {}, "Per topic and system"), scroller("disagreements", el("table", {"class": "topics"},
      el("caption", {}, "Disagreements per (topic, system): of the items both judged"),
      el("thead", {}, el("tr", {}, ["topic", "system", "assignments differing", "support labels differing", ""].map(
        function (h) { return el("th", {scope: "col"}, h); }))), el("tbody", {}, rows))));
    show(body, parts);
  }

  return {receive: receive};
}());
