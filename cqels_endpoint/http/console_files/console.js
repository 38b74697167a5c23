// The console of cqels-endpoint: one-shot SPARQL, continuous queries with live results and their
// plans, the data (graphs and streams), the sources and sinks. Plain browser JavaScript over the
// server's HTTP API (docs/http.md, "The SPARQL endpoint"); nothing is built or fetched from elsewhere.
(function () {
  "use strict";

  var TOKEN_KEY = "cqels-token";
  var PAGE_SIZE = 50;
  var LIVE_ROWS = 200;
  var XSD = "http://www.w3.org/2001/XMLSchema#";
  var SAMPLE_QUERY = "SELECT ?s ?p ?o\nWHERE { ?s ?p ?o }\nLIMIT 100";
  var SAMPLE_CONTINUOUS =
    "PREFIX ex: <http://example.org/>\n" +
    "SELECT ?sensor (AVG(?t) AS ?avg) (COUNT(*) AS ?n)\n" +
    "FROM STREAM Readings [RANGE 10s]\n" +
    "WHERE { ?sensor ex:temperature ?t }\n" +
    "GROUP BY ?sensor";
  var RESULT_FORMATS = [
    ["JSON", "application/sparql-results+json", "srj"],
    ["XML", "application/sparql-results+xml", "srx"],
    ["CSV", "text/csv", "csv"],
    ["TSV", "text/tab-separated-values", "tsv"]
  ];
  var GRAPH_FORMATS = [
    ["Turtle", "text/turtle", "ttl"],
    ["N-Triples", "application/n-triples", "nt"],
    ["RDF/XML", "application/rdf+xml", "rdf"],
    ["JSON-LD", "application/ld+json", "jsonld"],
    ["N-Quads", "application/n-quads", "nq"],
    ["TriG", "application/trig", "trig"]
  ];
  var UPLOAD_TYPES = {
    ttl: "text/turtle", nt: "application/n-triples", nq: "application/n-quads", trig: "application/trig",
    rdf: "application/rdf+xml", owl: "application/rdf+xml", xml: "application/rdf+xml",
    jsonld: "application/ld+json", json: "application/ld+json", n3: "text/n3"
  };

  var state = {
    settings: { auth_required: false, read_only: false },
    selected: null,   // the continuous query (or instance) shown: its path under /queries
    source: null,     // its EventSource
    liveVars: null,
    emissionTimes: [],
    latencySeries: [],
    lastLatency: null,
    planCounters: {},
    result: null,     // the last one-shot result: {form, vars, rows, page, text, query}
    known: [],
    connectors: { source: [], sink: [] },  // the names listed by the last refresh
    moved: false      // the user picked a view or a query: the demo no longer opens by itself
  };

  function $(id) { return document.getElementById(id); }
  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (key) {
      if (key === "text") node.textContent = attrs[key];
      else if (key === "class") node.className = attrs[key];
      else node.setAttribute(key, attrs[key]);
    });
    (children || []).forEach(function (child) { node.appendChild(child); });
    return node;
  }

  // ------------------------------------------------------------------ HTTP and the token

  function token() { return sessionStorage.getItem(TOKEN_KEY); }
  function canWrite() { return !state.settings.read_only && (!state.settings.auth_required || !!token()); }

  function api(method, path, options) {
    options = options || {};
    var headers = Object.assign({}, options.headers || {});
    if (method !== "GET" && method !== "HEAD" && token()) headers.Authorization = "Bearer " + token();
    return fetch(path, { method: method, headers: headers, body: options.body });
  }

  function errorOf(response) {
    return response.text().then(function (text) {
      try {
        var body = JSON.parse(text);
        return { message: body.error || text, line: body.line, column: body.column };
      } catch (e) {
        return { message: text || response.status + " " + response.statusText };
      }
    });
  }

  function applyAuth() {
    var writable = canWrite();
    document.querySelectorAll(".write").forEach(function (button) {
      if (!writable) button.disabled = true;
      else if (button.id !== "cq-delete") button.disabled = false;
    });
    if (writable && state.selected) $("cq-delete").disabled = false;
    var label = state.settings.read_only ? "read-only server"
      : !state.settings.auth_required ? "no token needed"
      : token() ? "signed in" : "read-only (sign in to write)";
    $("auth-state").textContent = label;
    $("sign-in").hidden = !state.settings.auth_required || !!token();
    $("sign-out").hidden = !state.settings.auth_required || !token();
  }

  // ------------------------------------------------------------------ editors and their errors

  function editor(id, value) {
    var cm = CodeMirror($(id), {
      value: value, mode: "sparql-cqels", lineNumbers: true, indentUnit: 2, matchBrackets: true
    });
    cm.errorMarks = [];
    $(id).cm = cm;  // reachable from the page (the browser tests read it)
    return cm;
  }

  function clearError(cm, box) {
    cm.errorMarks.forEach(function (mark) {
      if (mark.line !== undefined) cm.removeLineClass(mark.line, "background", "cm-error-line");
      else mark.clear();
    });
    cm.errorMarks = [];
    box.hidden = true;
    box.textContent = "";
  }

  function showError(cm, box, error) {
    clearError(cm, box);
    box.hidden = false;
    box.textContent = error.message;
    if (error.line) {
      var line = error.line - 1;
      cm.addLineClass(line, "background", "cm-error-line");
      cm.errorMarks.push({ line: line });
      var column = Math.max(0, (error.column || 1) - 1);
      var text = cm.getLine(line) || "";
      var end = column;
      while (end < text.length && !/\s/.test(text.charAt(end))) end++;
      if (end === column) end = Math.min(text.length, column + 1);
      cm.errorMarks.push(cm.markText({ line: line, ch: column }, { line: line, ch: end }, { className: "cm-error-mark" }));
      cm.setCursor({ line: line, ch: column });
      box.setAttribute("data-line", error.line);
      box.setAttribute("data-column", error.column || "");
    }
  }

  // ------------------------------------------------------------------ terms

  function termText(term) {
    if (!term) return "";
    switch (term.type) {
      case "uri": return "<" + term.value + ">";
      case "bnode": return "_:" + term.value;
      case "triple": return "<< " + termText(term.value.subject) + " " + termText(term.value.predicate) + " " + termText(term.value.object) + " >>";
      default:
        var datatype = term.datatype;
        if (term["xml:lang"]) return JSON.stringify(term.value) + "@" + term["xml:lang"];
        if (!datatype || datatype === XSD + "string") return JSON.stringify(term.value);
        if (datatype === XSD + "integer" || datatype === XSD + "decimal" || datatype === XSD + "boolean") return term.value;
        return JSON.stringify(term.value) + "^^<" + datatype + ">";
    }
  }

  function timeText(ms) {
    // Event time in ms since the epoch, as UTC with milliseconds (the raw number in the title).
    var date = new Date(ms);
    return isNaN(date.getTime()) ? String(ms) : date.toISOString().replace("T", " ").replace("Z", "");
  }

  function countsText(counts) {
    // A map of counts by reason ({malformed: 2, late: 1}) as "malformed 2, late 1".
    return counts ? Object.keys(counts).map(function (k) { return k + " " + counts[k]; }).join(", ") : "";
  }

  // ------------------------------------------------------------------ one-shot SPARQL

  function stripped(text) {
    return text.replace(/<[^<>\s]*>/g, " ").replace(/"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'/g, " ").replace(/#[^\n]*/g, " ");
  }

  function queryForm(text) {
    var found = /\b(SELECT|CONSTRUCT|DESCRIBE|ASK|INSERT|DELETE|LOAD|CLEAR|DROP|CREATE|ADD|MOVE|COPY|WITH)\b/i.exec(stripped(text));
    return found ? found[1].toUpperCase() : "SELECT";
  }
  function isUpdate(form) { return ["SELECT", "CONSTRUCT", "DESCRIBE", "ASK"].indexOf(form) < 0; }

  function runQuery() {
    var cm = $("query-editor").cm, text = cm.getValue(), form = queryForm(text);
    clearError(cm, $("query-error"));
    $("results").innerHTML = "";
    $("pager").hidden = true;
    $("downloads").hidden = true;
    var status = $("query-status");
    status.className = "status";
    status.textContent = "running…";
    var started = performance.now();
    var request;
    if (isUpdate(form)) {
      request = api("POST", "update", { body: text, headers: { "Content-Type": "application/sparql-update" } });
    } else {
      var accept = form === "CONSTRUCT" || form === "DESCRIBE" ? "text/turtle" : "application/sparql-results+json";
      request = api("POST", "query", { body: text, headers: { "Content-Type": "application/sparql-query", Accept: accept } });
    }
    request.then(function (response) {
      var took = Math.round(performance.now() - started) + " ms";
      if (!response.ok) {
        return errorOf(response).then(function (error) {
          status.className = "status bad";
          status.textContent = response.status + " after " + took;
          showError(cm, $("query-error"), error);
        });
      }
      if (isUpdate(form)) {
        status.className = "status ok";
        status.textContent = "update done in " + took;
        return null;
      }
      if (form === "CONSTRUCT" || form === "DESCRIBE") {
        return response.text().then(function (turtle) {
          state.result = { form: form, text: turtle, query: text };
          $("results").appendChild(el("pre", { "class": "graph", id: "graph-result", text: turtle || "(empty graph)" }));
          status.className = "status ok";
          status.textContent = "graph in " + took;
          showDownloads(GRAPH_FORMATS);
        });
      }
      return response.json().then(function (json) {
        status.className = "status ok";
        if (json.boolean !== undefined) {
          state.result = { form: "ASK", query: text };
          $("results").appendChild(el("div", { "class": "boolean", id: "boolean-result", text: String(json.boolean) }));
          status.textContent = "answer in " + took;
        } else {
          state.result = { form: "SELECT", vars: json.head.vars, rows: json.results.bindings, page: 0, query: text };
          status.textContent = json.results.bindings.length + " rows in " + took;
          showPage();
        }
        showDownloads(RESULT_FORMATS);
      });
    }).catch(function (error) {
      status.className = "status bad";
      status.textContent = String(error);
    });
  }

  function showPage() {
    var result = state.result, start = result.page * PAGE_SIZE;
    var rows = result.rows.slice(start, start + PAGE_SIZE);
    var head = el("tr", {}, result.vars.map(function (v) { return el("th", { text: "?" + v }); }));
    var body = rows.map(function (row) {
      return el("tr", {}, result.vars.map(function (v) { return el("td", { text: termText(row[v]) }); }));
    });
    $("results").innerHTML = "";
    $("results").appendChild(el("table", { "class": "grid", id: "result-table" }, [el("thead", {}, [head]), el("tbody", {}, body)]));
    var pages = Math.max(1, Math.ceil(result.rows.length / PAGE_SIZE));
    $("pager").hidden = pages <= 1;
    $("page-label").textContent = "page " + (result.page + 1) + " of " + pages + " (" + result.rows.length + " rows)";
    $("page-previous").disabled = result.page === 0;
    $("page-next").disabled = result.page >= pages - 1;
  }

  function showDownloads(formats) {
    var links = $("download-links");
    links.innerHTML = "";
    formats.forEach(function (format) {
      var button = el("button", { text: format[0], "data-accept": format[1], "class": "download" });
      button.addEventListener("click", function () { download(format[1], format[2]); });
      links.appendChild(button);
    });
    $("downloads").hidden = false;
  }

  function download(accept, extension) {
    api("POST", "query", {
      body: state.result.query, headers: { "Content-Type": "application/sparql-query", Accept: accept }
    }).then(function (response) {
      if (!response.ok) throw new Error(response.status + " " + response.statusText);
      return response.blob();
    }).then(function (blob) {
      var link = el("a", { href: URL.createObjectURL(blob), download: "results." + extension });
      document.body.appendChild(link);
      link.click();
      link.remove();
      $("query-status").textContent = "downloaded results." + extension + " (" + blob.size + " bytes)";
    }).catch(function (error) { $("query-status").textContent = "download failed: " + error.message; });
  }

  // ------------------------------------------------------------------ continuous queries

  function queryPath(name) { return "queries/" + name.split("/").map(encodeURIComponent).join("/"); }

  function refreshList() {
    return api("GET", "queries").then(function (r) { return r.json(); }).then(function (json) {
      state.known = json.queries;
      var body = $("cq-list").querySelector("tbody");
      body.innerHTML = "";
      json.queries.forEach(function (q) {
        var row = el("tr", { "data-name": q.name }, [
          el("td", { text: q.name }), el("td", { text: q.status }), el("td", { text: q.r2s || "" }),
          el("td", { text: q.mode }), el("td", { text: q.evaluations === undefined ? "" : q.evaluations }),
          el("td", { text: q.emissions === undefined ? "" : q.emissions })
        ]);
        if (state.selected === q.name) row.className = "selected";
        row.addEventListener("click", function () { select(q.name); });
        body.appendChild(row);
      });
    }).catch(function () { /* the next refresh tries again */ });
  }

  function newQuery() {
    closeLive();
    state.selected = null;
    $("cq-name").value = "";
    $("cq-r2s").value = "";
    $("cq-mode").value = "incremental";
    $("cq-editor").cm.setValue(SAMPLE_CONTINUOUS);
    $("cq-register").textContent = "Register";
    $("cq-delete").disabled = true;
    $("cq-status").textContent = "";
    $("plan-tree").innerHTML = "";
    $("plan-head").textContent = "";
    $("live-head").textContent = "";
    $("live-rows").querySelector("thead").innerHTML = "";
    $("live-rows").querySelector("tbody").innerHTML = "";
    $("instance-form").hidden = true;
    $("instance-list").querySelector("tbody").innerHTML = "";
    clearError($("cq-editor").cm, $("cq-error"));
    refreshList();
  }

  function select(name) {
    return api("GET", queryPath(name)).then(function (r) { return r.json(); }).then(function (details) {
      state.selected = name;
      $("cq-name").value = name;
      $("cq-r2s").value = details.r2s || "";
      $("cq-mode").value = details.mode || "incremental";
      $("cq-editor").cm.setValue(details.text || "");
      $("cq-register").textContent = "Save";
      clearError($("cq-editor").cm, $("cq-error"));
      $("cq-status").textContent = details.status + (details.error ? ": " + details.error : "");
      applyAuth();
      showInstances(details);
      showPlan(details);
      openLive(name);
      refreshList();
    });
  }

  function register() {
    var cm = $("cq-editor").cm, name = $("cq-name").value.trim(), text = cm.getValue();
    clearError(cm, $("cq-error"));
    if (!name) {
      showError(cm, $("cq-error"), { message: "give the query a name" });
      return Promise.resolve();
    }
    var params = [];
    if ($("cq-r2s").value) params.push("r2s=" + $("cq-r2s").value);
    params.push("mode=" + $("cq-mode").value);
    // Saving the query shown replaces it: the server checks the new text before it stops the old.
    var replacing = state.selected === name;
    if (replacing) params.push("replace=true");
    return api("PUT", queryPath(name) + "?" + params.join("&"), {
      body: text, headers: { "Content-Type": "application/sparql-query" }
    }).then(function (response) {
      if (response.ok) {
        $("cq-status").className = "status ok";
        $("cq-status").textContent = replacing ? "saved and restarted" : "registered";
        return select(name);
      }
      return errorOf(response).then(function (error) {
        showError(cm, $("cq-error"), error);
        $("cq-status").className = "status bad";
        $("cq-status").textContent = response.status + (replacing ? ": the previous text keeps running" : "");
        return refreshList();
      });
    });
  }

  function removeQuery() {
    var name = state.selected;
    if (!name) return Promise.resolve();
    return api("DELETE", queryPath(name)).then(function (response) {
      if (!response.ok) {
        return errorOf(response).then(function (error) { $("cq-status").textContent = error.message; });
      }
      newQuery();
      $("cq-status").textContent = "deleted " + name;
      return null;
    });
  }

  // ------------------------------------------------------------------ live results

  function closeLive() {
    if (state.source) state.source.close();
    state.source = null;
    state.liveVars = null;
    state.emissionTimes = [];
    state.latencySeries = [];
    state.lastLatency = null;
  }

  function openLive(name) {
    closeLive();
    $("live-rows").querySelector("thead").innerHTML = "";
    $("live-rows").querySelector("tbody").innerHTML = "";
    $("live-head").textContent = "waiting for emissions…";
    var source = new EventSource(queryPath(name) + "/results");
    source.addEventListener("emission", function (event) { showEmission(JSON.parse(event.data), event.lastEventId); });
    source.addEventListener("error", function () { $("live-head").textContent = "results stream interrupted; reconnecting…"; });
    state.source = source;
  }

  function liveColumns(emission) {
    if (emission.head) return emission.head.vars.map(function (v) { return "?" + v; });
    if (emission.triples !== undefined) return ["triple"];
    return ["answer"];
  }

  function liveCells(emission) {
    if (emission.results) {
      return emission.results.bindings.map(function (row) {
        return emission.head.vars.map(function (v) { return termText(row[v]); });
      });
    }
    if (emission.triples !== undefined) {
      return emission.triples.split("\n").filter(Boolean).map(function (line) { return [line]; });
    }
    return [[String(emission.boolean)]];
  }

  function showEmission(emission, id) {
    state.emissionTimes.push(Date.now());
    var columns = liveColumns(emission);
    var table = $("live-rows"), body = table.querySelector("tbody");
    if (state.liveVars === null || state.liveVars.join(" ") !== columns.join(" ")) {
      state.liveVars = columns;
      table.querySelector("thead").innerHTML = "";
      table.querySelector("thead").appendChild(el("tr", {}, [el("th", { text: "time" })].concat(columns.map(function (c) { return el("th", { text: c }); }))));
    }
    var phase = emission.anchor !== undefined ? (emission.final ? " final" : " early") + " result of anchor " + emission.anchor : "";
    $("live-head").textContent = "emission " + id + " (" + emission.r2s + phase + ") at " + timeText(emission.time);
    var kind = emission.r2s === "DSTREAM" ? "left" : "entered";
    if (emission.r2s === "RSTREAM") body.innerHTML = "";
    var rows = liveCells(emission).map(function (cells) {
      var when = el("td", { "class": "emission-time", text: timeText(emission.time), title: String(emission.time) });
      return el("tr", { "class": kind, "data-r2s": emission.r2s }, [when].concat(
        cells.map(function (cell) { return el("td", { text: cell }); })));
    });
    rows.reverse().forEach(function (row) { body.insertBefore(row, body.firstChild); });
    while (body.rows.length > LIVE_ROWS) body.deleteRow(body.rows.length - 1);
    setTimeout(function () { rows.forEach(function (row) { if (row.className === "entered") row.className = ""; }); }, 1500);
  }

  function drawChart(canvas, values, unit) {
    var context = canvas.getContext("2d"), width = canvas.width, height = canvas.height;
    context.clearRect(0, 0, width, height);
    var top = Math.max(1, Math.max.apply(null, values.concat([0])));
    context.strokeStyle = "#d9dde5";
    context.beginPath();
    context.moveTo(30, 8); context.lineTo(30, height - 16); context.lineTo(width - 4, height - 16);
    context.stroke();
    context.fillStyle = "#69707d";
    context.font = "10px sans-serif";
    context.fillText(String(Math.round(top * 100) / 100), 2, 14);
    context.fillText("0", 18, height - 16);
    context.fillText("60 s", width - 28, height - 4);
    context.strokeStyle = "#2463c7";
    context.lineWidth = 2;
    context.beginPath();
    values.forEach(function (value, i) {
      var x = 30 + (width - 36) * i / 59, y = height - 16 - (height - 26) * value / top;
      if (i === 0) context.moveTo(x, y); else context.lineTo(x, y);
    });
    context.stroke();
    canvas.setAttribute("data-last", values.length ? String(values[values.length - 1]) : "");
    canvas.setAttribute("data-total", String(values.reduce(function (sum, value) { return sum + value; }, 0)));
    canvas.setAttribute("data-max", String(Math.max.apply(null, values.concat([0]))));
    canvas.setAttribute("data-unit", unit);
  }

  function tickCharts() {
    var now = Date.now();
    state.emissionTimes = state.emissionTimes.filter(function (t) { return now - t < 60000; });
    var rate = [];
    for (var i = 59; i >= 0; i--) {
      rate.push(state.emissionTimes.filter(function (t) { return now - t >= i * 1000 && now - t < (i + 1) * 1000; }).length);
    }
    drawChart($("chart-rate"), rate, "emissions/s");
    if (!state.selected) { drawChart($("chart-latency"), [], "ms"); return; }
    api("GET", queryPath(state.selected)).then(function (r) { return r.ok ? r.json() : null; }).then(function (details) {
      if (!details || !details.emission_latency) return;
      var latency = details.emission_latency, last = state.lastLatency;
      if (last !== null && latency.count > last.count) {
        state.latencySeries.push((latency.sum_ms - last.sum_ms) / (latency.count - last.count));
      } else if (last !== null) {
        state.latencySeries.push(0);
      }
      state.lastLatency = latency;
      state.latencySeries = state.latencySeries.slice(-60);
      drawChart($("chart-latency"), state.latencySeries, "ms");
      if (!$("pane-plan").hidden) showPlan(details);
    });
  }

  // ------------------------------------------------------------------ plans

  function showPlan(details) {
    var tree = $("plan-tree");
    tree.innerHTML = "";
    if (!details.plan) {
      $("plan-head").textContent = details.status === "template" ? "a template: its instances have plans" : "no plan (the query is not running)";
      return;
    }
    $("plan-head").textContent = details.plan.what;
    (details.plan.children || []).forEach(function (node) { tree.appendChild(planNode(node)); });
  }

  function planNode(node) {
    var box = el("div", { "class": "node", "data-id": node.id || "" }, [
      el("span", { "class": "id", text: node.id || "" }), el("span", { "class": "what", text: node.what })
    ]);
    var counters = node.counters || {}, previous = state.planCounters[node.id] || {}, changed = false;
    var list = el("div", { "class": "counters" });
    Object.keys(counters).forEach(function (key) {
      var value = counters[key];
      var text = typeof value === "object" ? JSON.stringify(value) : String(value);
      if (previous[key] !== undefined && previous[key] !== text) changed = true;
      previous[key] = text;
      var counter = el("span", { "class": "counter", "data-counter": key }, [document.createTextNode(key + " "), el("b", { text: text })]);
      list.appendChild(counter);
    });
    state.planCounters[node.id] = previous;
    if (changed) box.className += " changed";
    box.appendChild(list);
    (node.details || []).forEach(function (line) { box.appendChild(el("div", { "class": "detail", text: line })); });
    var item = el("li", {}, [box]);
    if (node.children && node.children.length) {
      item.appendChild(el("ul", {}, node.children.map(planNode)));
    }
    return item;
  }

  // ------------------------------------------------------------------ templates and instances

  function showInstances(details) {
    var form = $("instance-form"), parameters = details.parameters || [];
    form.hidden = parameters.length === 0;
    var holder = $("instance-parameters");
    holder.innerHTML = "";
    parameters.forEach(function (p) {
      holder.appendChild(el("label", {}, [
        document.createTextNode("?" + p + " "),
        el("select", { "data-parameter-kind": p }, [el("option", { value: "uri", text: "IRI" }), el("option", { value: "literal", text: "literal" })]),
        el("input", { "data-parameter": p, size: "36" })
      ]));
    });
    var body = $("instance-list").querySelector("tbody");
    body.innerHTML = "";
    (details.instances || []).forEach(function (instance) {
      var bindings = Object.keys(instance.bindings || {}).map(function (k) { return "?" + k + " = " + termText(instance.bindings[k]); }).join(", ");
      var stop = el("button", { "class": "write", text: "Delete" });
      stop.addEventListener("click", function () {
        api("DELETE", queryPath(instance.query)).then(function () { return select(details.name); });
      });
      var watch = el("button", { text: "Watch" });
      watch.addEventListener("click", function () { openLive(instance.query); });
      body.appendChild(el("tr", {}, [
        el("td", { text: instance.name }), el("td", { text: bindings }), el("td", { text: instance.status }),
        el("td", { text: String(instance.emissions) }), el("td", {}, [watch, stop])
      ]));
    });
    applyAuth();
  }

  function startInstance(event) {
    event.preventDefault();
    var bindings = {};
    document.querySelectorAll("[data-parameter]").forEach(function (input) {
      var kind = document.querySelector("[data-parameter-kind='" + input.getAttribute("data-parameter") + "']").value;
      bindings[input.getAttribute("data-parameter")] = { type: kind, value: input.value };
    });
    var instance = { bindings: bindings };
    if ($("instance-name").value.trim()) instance.name = $("instance-name").value.trim();
    api("POST", queryPath(state.selected) + "/instances", {
      body: JSON.stringify([instance]), headers: { "Content-Type": "application/json" }
    }).then(function (response) {
      if (!response.ok) return errorOf(response).then(function (error) { $("cq-status").textContent = error.message; });
      return select(state.selected);
    });
  }

  // ------------------------------------------------------------------ data

  function refreshGraphs() {
    var sparql = "SELECT ?g (COUNT(*) AS ?n) WHERE { { ?s ?p ?o } UNION { GRAPH ?g { ?s ?p ?o } } } GROUP BY ?g ORDER BY ?g";
    return api("POST", "query", {
      body: sparql, headers: { "Content-Type": "application/sparql-query", Accept: "application/sparql-results+json" }
    }).then(function (r) { return r.json(); }).then(function (json) {
      var body = $("graphs").querySelector("tbody");
      body.innerHTML = "";
      json.results.bindings.forEach(function (row) {
        var graph = row.g ? row.g.value : null;
        var remove = el("button", { "class": "write", text: "Delete" });
        remove.addEventListener("click", function () {
          api("DELETE", "store?" + (graph === null ? "default" : "graph=" + encodeURIComponent(graph))).then(refreshGraphs);
        });
        body.appendChild(el("tr", { "data-graph": graph === null ? "" : graph }, [
          el("td", { text: graph === null ? "(default graph)" : "<" + graph + ">" }), el("td", { text: row.n.value }), el("td", {}, [remove])
        ]));
      });
      applyAuth();
    });
  }

  function upload(event) {
    event.preventDefault();
    var file = $("upload-file").files[0], status = $("upload-status");
    if (!file) { status.textContent = "choose a file"; return; }
    var extension = file.name.split(".").pop().toLowerCase();
    var type = UPLOAD_TYPES[extension] || "text/turtle";
    var graph = $("upload-graph").value.trim();
    var target = "store?" + (graph ? "graph=" + encodeURIComponent(graph) : "default");
    api($("upload-replace").checked ? "PUT" : "POST", target, { body: file, headers: { "Content-Type": type } }).then(function (response) {
      if (!response.ok) return errorOf(response).then(function (error) { status.className = "status bad"; status.textContent = error.message; });
      status.className = "status ok";
      status.textContent = "uploaded " + file.name;
      return refreshGraphs();
    });
  }

  function refreshStreams() {
    return api("GET", "streams").then(function (r) { return r.json(); }).then(function (json) {
      var body = $("streams").querySelector("tbody");
      body.innerHTML = "";
      (json.streams || []).forEach(function (s) {
        var rejected = countsText(s.rejected);
        body.appendChild(el("tr", { "data-stream": s.stream }, [
          el("td", { text: s.stream }), el("td", { text: s.latest === null ? "" : String(s.latest) }),
          el("td", { text: s.watermark === null ? "" : String(s.watermark) }), el("td", { text: String(s.lateness_ms) + " ms" }),
          el("td", { text: String(s.accepted) }), el("td", { text: String(s.late) }), el("td", { text: rejected }),
          el("td", { text: s.rate_per_second.toFixed(2) })
        ]));
      });
    });
  }

  function push(event) {
    event.preventDefault();
    var stream = $("push-stream").value.trim(), status = $("push-status");
    if (!stream) { status.textContent = "name the stream"; return; }
    var path = "streams/" + (stream.indexOf(":") >= 0 ? encodeURIComponent(stream) : stream);
    if ($("push-time").value.trim()) path += "?time=" + encodeURIComponent($("push-time").value.trim());
    api("POST", path, { body: $("push-body").value, headers: { "Content-Type": "text/turtle" } }).then(function (response) {
      if (!response.ok) return errorOf(response).then(function (error) { status.className = "status bad"; status.textContent = error.message; });
      status.className = "status ok";
      status.textContent = "pushed";
      return refreshStreams();
    });
  }

  // ------------------------------------------------------------------ sources and sinks

  // The event-time choice besides settings.connectors.times: the object of a predicate of the event.
  var TIME_PREDICATE = "predicate";

  function connectorPath(role, name) { return role + "s/" + encodeURIComponent(name); }

  function fillSelect(select, values) {
    var kept = select.value;
    select.innerHTML = "";
    values.forEach(function (value) { select.appendChild(el("option", { value: value, text: value })); });
    if (values.indexOf(kept) >= 0) select.value = kept;
  }

  function offerChoices(choices) {
    fillSelect($("source-kind"), choices.source_kinds);
    fillSelect($("source-format"), choices.source_formats);
    fillSelect($("source-time"), choices.times);
    $("source-time").appendChild(el("option", { value: TIME_PREDICATE, text: "a predicate's object" }));
    fillSelect($("sink-kind"), choices.sink_kinds);
    fillSelect($("sink-format"), choices.sink_formats);
    fillSelect($("sink-overflow"), choices.overflows);
    document.querySelectorAll(".connector-form").forEach(showApplicableFields);
  }

  function offerQueries() {
    // Looked for again with the connectors (every 2 s), so that a query registered elsewhere
    // meanwhile is offered; the list is rebuilt only when it changed, or an open list would close.
    return api("GET", "queries").then(function (r) { return r.json(); }).then(function (json) {
      var names = json.queries.map(function (q) { return q.name; }), select = $("sink-query");
      var offered = Array.prototype.map.call(select.options, function (option) { return option.value; });
      if (JSON.stringify(offered) === JSON.stringify(names.length ? names : [""])) return;
      fillSelect(select, names);
      if (!names.length) select.appendChild(el("option", { value: "", text: "(no query registered)" }));
    });
  }

  function showApplicableFields(form) {
    // Fields of one kind (MQTT topics and QoS, a WebSocket token) show for that kind only, the
    // predicate's IRI when the event time comes from one.
    var kind = form.querySelector(".connector-kind").value;
    form.querySelectorAll("[data-kinds]").forEach(function (label) {
      label.hidden = label.getAttribute("data-kinds").split(" ").indexOf(kind) < 0;
    });
    $("source-time-predicate").hidden = $("source-time").value !== TIME_PREDICATE;
  }

  function stateCell(connector) {
    var text = connector.state;
    if (connector.state === "retrying" && connector.retry_in_s !== null) text += ", next try in " + connector.retry_in_s.toFixed(1) + " s";
    var cell = el("td", { "class": "state " + connector.state, "data-state": connector.state }, [el("b", { text: text })]);
    if (connector.reason) cell.appendChild(el("div", { "class": "reason", text: connector.reason }));
    return cell;
  }

  function cells(values) {
    return values.map(function (value) { return el("td", { text: value === null || value === undefined ? "" : String(value) }); });
  }

  function removeButton(role, name) {
    var button = el("button", { "class": "write", text: "Remove" });
    button.addEventListener("click", function () {
      if (!window.confirm("Remove the " + role + " " + name + "? It disconnects and its declaration is forgotten.")) return;
      var status = $("connectors-status");
      api("DELETE", connectorPath(role, name)).then(function (response) {
        if (!response.ok) return errorOf(response).then(function (error) { status.className = "status bad"; status.textContent = error.message; });
        status.className = "status ok";
        status.textContent = "removed the " + role + " " + name;
        return refreshConnectors();
      });
    });
    return button;
  }

  function sourceRow(s) {
    var where = s.spec.address + (s.spec.topics.length ? " · " + s.spec.topics.join(", ") : "");
    return el("tr", { "data-name": s.name }, cells([s.name, s.kind, where, s.stream, s.spec.format]).concat(
      [stateCell(s)], cells([s.received, s.accepted, countsText(s.rejected), s.late, s.lag_ms === null ? "" : s.lag_ms + " ms"]),
      [el("td", {}, [removeButton("source", s.name)])]));
  }

  function sinkRow(s) {
    return el("tr", { "data-name": s.name }, cells([s.name, s.kind, s.spec.address + " · " + s.topic, s.query, s.spec.format]).concat(
      [stateCell(s)], cells([s.published, s.failed, s.dropped, s.buffered]), [el("td", {}, [removeButton("sink", s.name)])]));
  }

  function refreshConnectors() {
    var lists = [["source", sourceRow], ["sink", sinkRow]].map(function (role) {
      return api("GET", role[0] + "s").then(function (r) { return r.json(); }).then(function (json) {
        var body = $(role[0] + "s").querySelector("tbody"), listed = json[role[0] + "s"];
        body.innerHTML = "";
        listed.forEach(function (connector) { body.appendChild(role[1](connector)); });
        state.connectors[role[0]] = listed.map(function (connector) { return connector.name; });
      });
    });
    return Promise.all(lists).then(applyAuth).catch(function () { /* the next refresh tries again */ });
  }

  function declaration(form) {
    // The form as a PUT body: the fields of its kind, optional ones only when given (the server's
    // defaults otherwise); credentials are names of the server's environment variables.
    var role = form.getAttribute("data-role");
    function value(id) { return $(role + "-" + id).value.trim(); }
    var data = { kind: value("kind"), address: value("address") };
    if (role === "source") {
      data.stream = value("stream");
      data.format = value("format");
      data.time = value("time") === TIME_PREDICATE ? value("time-predicate") : value("time");
      if (data.kind === "mqtt") {
        data.topics = value("topics").split("\n").map(function (line) { return line.trim(); }).filter(Boolean);
        data.qos = Number(value("qos"));
      }
      if (data.kind === "websocket" && value("token-env")) data.token_env = value("token-env");
    } else {
      data.topic = value("topic");
      data.query = value("query");
      data.format = value("format");
      data.qos = Number(value("qos"));
      data.buffer = Number(value("buffer"));
      data.overflow = value("overflow");
    }
    if (value("username")) data.username = value("username");
    if (value("password-env")) data.password_env = value("password-env");
    return data;
  }

  function showFormError(form, message) {
    // The server's 400 starts with the field it refuses ("address": …): that input is outlined.
    var box = $(form.getAttribute("data-role") + "-error"), named = /^"(\w+)"/.exec(message || "");
    box.hidden = !message;
    box.textContent = message || "";
    form.querySelectorAll("[data-field]").forEach(function (input) {
      input.classList.toggle("invalid", !!named && input.getAttribute("data-field") === named[1]);
    });
  }

  function addConnector(event) {
    event.preventDefault();
    var form = event.target, role = form.getAttribute("data-role");
    var name = $(role + "-name").value.trim(), status = $(role + "-status");
    showFormError(form, null);
    status.className = "status";
    status.textContent = "";
    if (!name) { showFormError(form, '"name": give the ' + role + " a name"); return Promise.resolve(); }
    // A PUT of a name in use replaces that connector: asked first, as a removal is.
    if (state.connectors[role].indexOf(name) >= 0 &&
        !window.confirm("Replace the " + role + " " + name + "? It disconnects and starts again as declared here.")) {
      return Promise.resolve();
    }
    return api("PUT", connectorPath(role, name), {
      body: JSON.stringify(declaration(form)), headers: { "Content-Type": "application/json" }
    }).then(function (response) {
      if (!response.ok) {
        return errorOf(response).then(function (error) {
          status.className = "status bad";
          status.textContent = String(response.status);
          showFormError(form, error.message);
        });
      }
      status.className = "status ok";
      status.textContent = (response.status === 201 ? "added the " : "replaced the ") + role + " " + name;
      return refreshConnectors();
    });
  }

  // ------------------------------------------------------------------ the demo

  // cqels serve --demo: the console opens on the demo query's live results. Its thread registers
  // it once the server listens (after a Spark cache build, with the Spark cache engine), so it is
  // looked for once a second for a while, unless the user went elsewhere meanwhile.
  var DEMO_TRIES = 120;

  function openDemo(name, tries) {
    if (state.moved) return;
    api("GET", queryPath(name)).then(function (response) {
      if (state.moved) return;
      if (response.ok) {
        showView("view-continuous");
        return select(name);
      }
      if (tries > 1) setTimeout(function () { openDemo(name, tries - 1); }, 1000);
    }).catch(function () { if (tries > 1) setTimeout(function () { openDemo(name, tries - 1); }, 1000); });
  }

  // ------------------------------------------------------------------ wiring

  function showView(id) {
    document.querySelectorAll(".view").forEach(function (view) { view.hidden = view.id !== id; });
    document.querySelectorAll(".tab").forEach(function (tab) { tab.classList.toggle("active", tab.getAttribute("data-view") === id); });
    if (id === "view-continuous") { $("cq-editor").cm.refresh(); refreshList(); }
    if (id === "view-query") $("query-editor").cm.refresh();
    if (id === "view-data") { refreshGraphs(); refreshStreams(); }
    if (id === "view-connectors") { refreshConnectors(); offerQueries(); }
  }

  function showPane(id) {
    document.querySelectorAll(".pane").forEach(function (pane) { pane.hidden = pane.id !== id; });
    document.querySelectorAll(".subtab").forEach(function (tab) { tab.classList.toggle("active", tab.getAttribute("data-pane") === id); });
    if (id === "pane-plan" && state.selected) {
      api("GET", queryPath(state.selected)).then(function (r) { return r.json(); }).then(showPlan);
    }
  }

  function start() {
    var queryEditor = editor("query-editor", SAMPLE_QUERY);
    queryEditor.setOption("extraKeys", { "Ctrl-Enter": runQuery, "Cmd-Enter": runQuery });
    var continuousEditor = editor("cq-editor", SAMPLE_CONTINUOUS);
    continuousEditor.setOption("extraKeys", { "Ctrl-Enter": register, "Cmd-Enter": register });
    document.querySelectorAll(".tab").forEach(function (tab) {
      tab.addEventListener("click", function () { state.moved = true; showView(tab.getAttribute("data-view")); });
    });
    document.querySelectorAll(".subtab").forEach(function (tab) {
      tab.addEventListener("click", function () { showPane(tab.getAttribute("data-pane")); });
    });
    $("run-query").addEventListener("click", runQuery);
    $("page-previous").addEventListener("click", function () { state.result.page--; showPage(); });
    $("page-next").addEventListener("click", function () { state.result.page++; showPage(); });
    $("cq-new").addEventListener("click", newQuery);
    $("cq-register").addEventListener("click", register);
    $("cq-delete").addEventListener("click", removeQuery);
    $("instance-form").addEventListener("submit", startInstance);
    $("graphs-refresh").addEventListener("click", refreshGraphs);
    $("streams-refresh").addEventListener("click", refreshStreams);
    $("upload-form").addEventListener("submit", upload);
    $("push-form").addEventListener("submit", push);
    document.querySelectorAll(".connector-form").forEach(function (form) {
      form.addEventListener("submit", addConnector);
      form.addEventListener("change", function () { showApplicableFields(form); });
    });
    $("sign-in").addEventListener("click", function () {
      var given = window.prompt("Bearer token of this server (kept for this browser tab only)");
      if (given) sessionStorage.setItem(TOKEN_KEY, given.trim());
      applyAuth();
    });
    $("sign-out").addEventListener("click", function () { sessionStorage.removeItem(TOKEN_KEY); applyAuth(); });
    fetch("console/settings.json").then(function (r) { return r.json(); }).then(function (settings) {
      state.settings = settings;
      offerChoices(settings.connectors);
      applyAuth();
      if (settings.demo_query) openDemo(settings.demo_query, DEMO_TRIES);
    });
    setInterval(tickCharts, 1000);
    setInterval(function () { if (!$("view-continuous").hidden) refreshList(); }, 2000);
    setInterval(function () {
      if ($("view-connectors").hidden) return;
      refreshConnectors();
      offerQueries().catch(function () { /* the next refresh tries again */ });
    }, 2000);
    document.body.setAttribute("data-ready", "true");
  }

  start();
})();
