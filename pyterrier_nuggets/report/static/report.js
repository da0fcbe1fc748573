/* The pages of a pyterrier-nuggets report (docs/report.md). Data files are scripts in data/ that call
   PNReport.receive(kind, key, data): they load from file:// where fetch() of local files is refused, and only when a
   page needs them. Every text of the data (answers, nuggets, criteria, judges' replies) goes into the page as text
   (textContent, text nodes), never as HTML. */
"use strict";

var PNReport = (function () {
  var data = {index: null, measure: {}, topic: {}};
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
        "keep the report's folder together (index.html, topic.html, assets/, data/)."));
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

  function start() {
    var page = document.body.getAttribute("data-page");
    if (page === "overview") {
      overview();
    } else if (page === "topic") {
      topicPage();
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
    if (!index.measures.length) {
      document.getElementById("controls").hidden = true;
      document.getElementById("heatmap-hint").hidden = true;
      renderTopics(null, null);
      return;
    }
    var names = index.measures.map(function (m) { return m.name; });
    function fromHash() {
      var p = params();
      options(measure, names, null, names.indexOf(p.measure) >= 0 ? p.measure : (index.default_measure || names[0]));
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

  function scale(values) {
    var all = [];
    values.forEach(function (row) { row.forEach(function (v) { if (v !== null) { all.push(v); } }); });
    var lo = Math.min.apply(null, all.length ? all : [0]);
    var hi = Math.max.apply(null, all.length ? all : [1]);
    if (lo >= 0 && hi <= 1) {
      lo = 0;
      hi = 1;
    }
    var colour = function (v) {
      var t = hi > lo ? (v - lo) / (hi - lo) : 0.5;
      var light = Math.round(96 - 62 * t);
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
    var colour = scale(values.values);
    var head = el("tr", {}, el("th", {scope: "col"}, "system \\ topic"), topics.map(function (i) {
      return el("th", {scope: "col", title: index.topics[i].id + ": " + index.topics[i].query, "class": "topic-head"},
        String(i + 1));
    }));
    var rows = index.systems.map(function (system, s) {
      return el("tr", {}, el("th", {scope: "row"}, system), topics.map(function (i, k) {
        var v = values.values[s][i];
        var label = system + ", topic " + index.topics[i].id + ": " + measure + " " + fmt(measure, v);
        return el("td", {}, el("a", {
          "class": "cell" + (v === null ? " missing" : ""), href: topicLink(index.topics[i].id, system),
          "aria-label": label, title: label, tabindex: s === 0 && k === 0 ? "0" : "-1",
          "data-row": String(s), "data-col": String(k), "data-value": v === null ? "" : String(v),
          style: v === null ? null : "background:" + colour(v)}));
      }));
    });
    var key = el("caption", {}, measure + ": lightest ", el("span", {"class": "swatch", style: "background:" +
      colour(colour.low)}), " " + fmt(measure, colour.low) + ", darkest ", el("span", {"class": "swatch",
      style: "background:" + colour(colour.high)}), " " + fmt(measure, colour.high) + ", hatched: no score");
    var table = el("table", {"class": "heatmap", role: "grid", "aria-label": measure + " per system and topic"},
      key, el("thead", {}, head), el("tbody", {}, rows));
    table.addEventListener("keydown", gridKeys);
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
    var rows = topics.map(function (i) {
      var t = index.topics[i];
      var cells = [el("td", {}, String(i + 1)), el("th", {scope: "row"}, t.id), el("td", {"class": "query"}, t.query)];
      if (measure) {
        var x = values.values[ai][i];
        var y = values.values[bi][i];
        var diff = x === null || y === null ? null : y - x;
        cells.push(el("td", {}, el("a", {"class": "num", href: topicLink(t.id, a), "data-value": x === null ? "" : String(x)},
          fmt(measure, x))));
        cells.push(el("td", {}, el("a", {"class": "num", href: topicLink(t.id, b), "data-value": y === null ? "" : String(y)},
          fmt(measure, y))));
        cells.push(el("td", {}, el("a", {"class": "num", href: topicLink(t.id, a, b)},
          diff === null ? "n/a" : (diff > 0 ? "+" : "") + fmt(measure, diff))));
      } else {
        cells.push(el("td", {}, el("a", {href: topicLink(t.id, index.systems[0])}, "open")));
      }
      return el("tr", {}, cells);
    });
    show(table, [el("caption", {}, measure ? measure + " per topic: A, B and their difference (B − A opens " +
      "the two side by side)" : "Topics"), el("thead", {}, head), el("tbody", {}, rows)]);
  }

  // ---------------------------------------------------------------------------------------- drill-down

  var SUPPORT = {full: "full support", partial: "partial support", none: "no support",
    unjudged: "unjudged (missing or failed)"};
  var ASSIGNMENT = {support: "supported", partial_support: "partially supported", not_support: "not supported"};
  var VERDICT = {satisfied: "satisfied", partially_satisfied: "partially satisfied", not_satisfied: "not satisfied"};

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
    show(document.getElementById("topic-body"), [head, panels, battles(topic, systems)]);
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

  function panel(topic, system, k) {
    var d = topic.systems[system] || {};
    var parts = [el("h3", {"class": "system"}, system)];
    if (!topic.systems[system]) {
      parts.push(el("p", {"class": "note"}, "The folders hold nothing of " + system + " on this topic."));
    }
    if (d.missing) {
      parts.push(el("p", {"class": "note warn"}, "The folder lacks " + d.missing.join("; ") +
        ": what those files hold is not shown here."));
    }
    parts.push(scores(d.scores, system));
    if (d.answer) { parts.push(section("Answer", answer(d.answer, topic, k))); }
    if (d.ikat) { parts.push(section("Response and gold nuggets (iKAT)", ikat(d.ikat))); }
    if (topic.nuggets.length) { parts.push(section("Nuggets", nuggets(topic, d.assignment))); }
    if (topic.sub_narratives.length) {
      parts.push(section("Sub-narratives (covered by a supported vital nugget)", subNarratives(topic, d.sub_narratives)));
    }
    if (topic.rubric.length) { parts.push(section("Rubric", rubric(topic.rubric, d.verdicts))); }
    if (d.retrieved || (d.answer && d.answer.sentences.length)) { parts.push(section("Segments", segments(topic, d, k))); }
    return el("article", {"class": "panel", "aria-label": system}, parts);
  }

  function scores(values, system) {
    if (!values) {
      return el("p", {"class": "note"}, "No score of this system on this topic in the scores file.");
    }
    return el("dl", {"class": "scores"}, Object.keys(values).map(function (m) {
      return el("div", {}, el("dt", {}, m), el("dd", {}, el("a", {
        "class": "num", href: "index.html" + hash({measure: m, a: system}), "data-measure": m,
        "data-value": values[m] === null ? "" : String(values[m]), title: "all topics of " + system + " by " + m},
      fmt(m, values[m]))));
    }));
  }

  function segmentId(topic, k, docno) {
    return "seg-" + k + "-" + Object.keys(topic.segments).indexOf(docno);
  }

  function answer(a, topic, k) {
    if (!a.sentences.length) {
      return [el("p", {"class": "note"}, "The folder has the answer's text only (no sentences or citations); give " +
        "its answer file with --answers to see them."), el("p", {"class": "answer-text"}, a.text)];
    }
    return el("div", {"class": "answer"}, a.sentences.map(function (s, j) {
      var uncited = !s.citations.length && a.judged ?
        el("span", {"class": "cite support-uncited", title: "no citation: counts as not supported"}, "uncited") : null;
      return el("p", {"class": "sentence", "data-sentence": String(j)}, s.text, " ", uncited, s.citations.map(function (c, n) {
        var label = c.support === null ? "unknown" : c.support;
        var what = c.support === null ? "no support judgment in the files" : SUPPORT[c.support];
        return el("a", {"class": "cite support-" + label, href: "#" + segmentId(topic, k, c.docno),
          title: c.docno + ": " + what, "aria-label": "citation " + (n + 1) + ", " + c.docno + ", " + what,
          "data-support": label}, "[" + c.docno + "]");
      }));
    }));
  }

  function nuggets(topic, assignment) {
    var rows = topic.nuggets.map(function (n) {
      var label = assignment ? assignment[n.id] : null;
      return el("tr", {}, el("td", {}, n.id), el("td", {}, el("span", {"class": "imp imp-" + n.importance},
        n.importance || "not scored")), el("td", {}, n.text),
        el("td", {"class": label ? "assign-" + label : "assign-none"},
          label ? ASSIGNMENT[label] || label : (assignment ? "not assigned" : "no assignment in the files")),
        topic.sub_narratives.length ? el("td", {}, n.sub_narrative === null ? "" : topic.sub_narratives[n.sub_narrative]) : null);
    });
    return el("table", {"class": "nuggets"}, el("thead", {}, el("tr", {}, el("th", {}, "id"), el("th", {}, "importance"),
      el("th", {}, "nugget"), el("th", {}, "assignment"), topic.sub_narratives.length ? el("th", {}, "sub-narrative") : null)),
      el("tbody", {}, rows));
  }

  function subNarratives(topic, credit) {
    return el("ul", {"class": "subs"}, topic.sub_narratives.map(function (name, k) {
      var c = credit ? credit[k] : null;
      var what = c === null ? "no assignment" : c === 1 ? "covered (a vital nugget supported)" :
        c === 0.5 ? "partly covered (a vital nugget partially supported)" : "not covered";
      return el("li", {"class": c === 1 ? "covered" : c === 0.5 ? "partly" : "uncovered"}, name + ": " + what);
    }));
  }

  function rubric(criteria, verdicts) {
    return el("table", {"class": "rubric"}, el("thead", {}, el("tr", {}, el("th", {}, "criterion"), el("th", {}, "weight"),
      el("th", {}, "tier"), el("th", {}, "verdict"))), el("tbody", {}, criteria.map(function (c, i) {
      var v = verdicts ? verdicts[i] : null;
      return el("tr", {}, el("td", {}, c.text), el("td", {}, String(c.weight)), el("td", {}, c.tier || ""),
        el("td", {"class": v ? "verdict-" + v : ""}, v ? VERDICT[v] : "no verdict in the files"));
    })));
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
        el("td", {"class": "segment-text"}, seg.text === null || seg.text === undefined ?
          el("span", {"class": "note"}, "text not given (--collection, --dataset or --docs)") : seg.text));
    }
    (d.retrieved || []).forEach(function (r) { rows.push(row(r[0], r[1], r[2])); });
    ((d.answer || {}).sentences || []).forEach(function (s) {
      s.citations.forEach(function (c) { if (!listed[c.docno]) { rows.push(row(c.docno, null, null)); } });
    });
    return el("table", {"class": "segments"}, el("thead", {}, el("tr", {}, el("th", {}, "rank"), el("th", {}, "segment"),
      el("th", {}, "score"), el("th", {}, "relevance"), el("th", {}, "text"))), el("tbody", {}, rows));
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
            el("td", {}, x.matched ? "yes" : "no"), el("td", {}, x.score === null ? "" : x.score.toFixed(3)));
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
        var outcome = b.verdict === null ? "failed: " + (b.error || "no verdict") + " (counts nowhere)" :
          b.winner ? b.winner + " preferred (verdict " + b.verdict + ")" : "tie";
        return el("details", {"class": "battle"}, el("summary", {}, "A: " + b.a + " vs B: " + b.b + " — " + outcome),
          el("p", {"class": "judge"}, "Judge: " + (b.judge || "not recorded") +
            (b.verdicts.length === 2 ? "; both orders: " + b.verdicts.join(" then ") : "")),
          b.raw.length ? el("pre", {"class": "reply"}, b.raw.join("\n\n— the other order —\n\n")) :
            el("p", {"class": "note"}, "No reply recorded (a baseline judge or a verdict given by a person)."),
          el("div", {"class": "panels two"}, el("div", {}, el("h4", {}, "A: " + b.a), el("p", {}, answerText(topic, b.a))),
            el("div", {}, el("h4", {}, "B: " + b.b), el("p", {}, answerText(topic, b.b)))));
      }));
  }

  return {receive: receive};
}());
