// Runs one RSP-QL query on rsp-js 1.3.5 over events read as JSON lines; see benchmarks/rspjs.py.
//
//   node driver.mjs --query q.rq --events events.jsonl [--static static.jsonl] --out reports.jsonl
//
// Input lines: {"stream": iri, "time": ms, "triples": [[s, p, o], ...]} with terms in N-Triples
// syntax; the static file holds {"triples": [...]}. Output: one line per window rsp-js reported,
// {"open": ms, "close": ms, "rows": [{var: N-Triples term}, ...]} with rows sorted, and on stdout one
// JSON object: triples fed, the wall seconds of each run, windows reported. `--warm-up N` first
// runs the query on a separate engine over the first N events, unmeasured; `--repeat R` measures R
// runs, each on a fresh engine.
//
// rsp-js hands each binding to its "RStream" listener with timestamps that do not name the window
// (`window.t0` advances by one slide per binding), and evaluates each window asynchronously after
// the synchronous `add` that closed it. So the driver wraps the engine's R2R `execute` to learn which
// window instance each evaluation belongs to and when its binding stream ends. The clock stops when
// the last triple has been added and every evaluation it started has ended.
import { createRequire } from "node:module";
import { mkdtempSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { performance } from "node:perf_hooks";

const require = createRequire(import.meta.url);
const { RSPEngine } = require("rsp-js");
const { Parser } = require("n3");

const args = Object.fromEntries(
  process.argv.slice(2).reduce((pairs, arg, i, all) => (arg.startsWith("--") ? [...pairs, [arg.slice(2), all[i + 1]]] : pairs), []),
);
// Paths are resolved before the driver moves to its scratch directory.
for (const name of ["query", "events", "static", "out"]) if (args[name]) args[name] = resolve(args[name]);

function readLines(path) {
  return readFileSync(path, "utf-8").split("\n").filter((line) => line.trim()).map((line) => JSON.parse(line));
}

const parser = new Parser({ format: "N-Triples" });
function quadOf([s, p, o]) {
  return parser.parse(`${s} ${p} ${o} .`)[0];
}

function termText(term) {
  if (term.termType === "NamedNode") return `<${term.value}>`;
  if (term.termType === "BlankNode") return `_:${term.value}`;
  const lexical = JSON.stringify(term.value);
  if (term.language) return `${lexical}@${term.language}`;
  if (term.datatype && term.datatype.value !== "http://www.w3.org/2001/XMLSchema#string") return `${lexical}^^<${term.datatype.value}>`;
  return lexical;
}

// rsp-js logs every added triple (console.debug), every window it closes (console.log) and every
// Logger call (console.log); that output is diagnostics, not query work, so it is dropped, and its
// file log goes to a scratch directory instead of the working tree.
const quiet = () => {};
console.debug = quiet;
console.log = quiet;
console.info = quiet;
const scratch = mkdtempSync(join(tmpdir(), "rspjs-"));
mkdirSync(join(scratch, "logs"));
process.chdir(scratch);

const query = readFileSync(args.query, "utf-8");
const toEvents = (lines) => lines.map((event) => ({ stream: event.stream, time: event.time, quads: event.triples.map(quadOf) }));
const lines = readLines(args.events);
const events = toEvents(lines);
const statics = args.static ? readLines(args.static).flatMap((line) => line.triples.map(quadOf)) : [];

async function run(events) {
  const engine = new RSPEngine(query);
  for (const quad of statics) engine.addStaticData(quad);
  const reports = [];
  const pending = [];
  const r2r = engine.r2r;
  const execute = r2r.execute.bind(r2r);
  r2r.execute = (container) => {
    // Called synchronously from the window's emit, before the closed window is evicted.
    let instance = null;
    for (const window of engine.windows) {
      for (const [candidate, content] of window.active_windows) {
        if (content === container) instance = candidate;
      }
    }
    const report = { open: instance.open, close: instance.close, bindings: [] };
    reports.push(report);
    const result = execute(container);
    pending.push(
      result.then(
        (stream) =>
          new Promise((resolve, reject) => {
            stream.on("data", (binding) => report.bindings.push(binding));
            stream.on("end", resolve);
            stream.on("error", reject);
          }),
      ),
    );
    return result;
  };
  engine.register();
  const streams = new Map();
  for (const event of events) {
    if (!streams.has(event.stream)) streams.set(event.stream, engine.getStream(event.stream));
  }
  const started = performance.now();
  for (const event of events) {
    const stream = streams.get(event.stream);
    for (const quad of event.quads) stream.add(quad, event.time);
  }
  await Promise.all(pending);
  return { reports, seconds: (performance.now() - started) / 1000 };
}

// The warm-up loads Comunica's modules and lets V8 compile the hot paths; its quads are copies,
// since rsp-js moves each added quad into the window's graph.
const warmUp = Number(args["warm-up"] ?? 0);
if (warmUp > 0) await run(toEvents(lines.slice(0, warmUp)));
// Each measured run gets fresh quads; the reports written are the last run's.
const repeat = Number(args.repeat ?? 1);
const times = [];
let reports = null;
let triples = 0;
for (const event of events) triples += event.quads.length;
for (let i = 0; i < repeat; i++) {
  const result = await run(i === 0 ? events : toEvents(lines));
  times.push(result.seconds);
  reports = result.reports;
}

const output = reports.map((report) => {
  const rows = report.bindings.map((binding) => {
    const row = {};
    for (const [variable, term] of binding) row[variable.value] = termText(term);
    return row;
  });
  const keyed = rows.map((row) => [JSON.stringify(Object.entries(row).sort()), row]);
  keyed.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  return JSON.stringify({ open: report.open, close: report.close, rows: keyed.map(([, row]) => row) });
});
writeFileSync(args.out, output.join("\n") + (output.length ? "\n" : ""));
process.stdout.write(JSON.stringify({ triples, seconds: times, windows: reports.length, node: process.version }) + "\n");
