// A CodeMirror 5 mode for SPARQL 1.1 Query and Update with the stream extensions this endpoint
// reads: CQELS (STREAM … [RANGE …]), RSP-QL (FROM NAMED WINDOW … ON …, WINDOW), C-SPARQL and
// CQELS-QL 2.0 (REGISTER QUERY, FROM STREAM, directional windows, EMIT, LATENESS, SEQ).
// Written for this console; token classes follow CodeMirror's usual names (keyword, variable-2,
// string, number, atom, comment, builtin, meta) so the stock theme colours them.
(function () {
  "use strict";

  function words(list) {
    var set = Object.create(null);
    list.split(/\s+/).forEach(function (w) { if (w) set[w.toUpperCase()] = true; });
    return set;
  }

  var KEYWORDS = words(
    "BASE PREFIX SELECT CONSTRUCT DESCRIBE ASK DISTINCT REDUCED FROM NAMED WHERE GRAPH OPTIONAL UNION " +
    "MINUS FILTER BIND VALUES SERVICE SILENT AS ORDER BY ASC DESC LIMIT OFFSET GROUP HAVING UNDEF NOT " +
    "EXISTS IN INSERT DELETE DATA WITH USING DEFAULT ALL LOAD CLEAR DROP CREATE ADD MOVE COPY INTO TO " +
    "SEPARATOR");
  var STREAM_WORDS = words(
    "STREAM WINDOW ON REGISTER QUERY ISTREAM RSTREAM DSTREAM RANGE SLIDE STEP TUMBLING NOW TRIPLES COUNT " +
    "PAST FUTURE EMIT ON_UPDATE ON_CLOSE EARLY_AND_FINAL LATENESS STATIC DEPTH CACHE SEQ");
  var BUILTINS = words(
    "STR LANG LANGMATCHES DATATYPE BOUND IRI URI BNODE RAND ABS CEIL FLOOR ROUND CONCAT STRLEN UCASE " +
    "LCASE ENCODE_FOR_URI CONTAINS STRSTARTS STRENDS STRBEFORE STRAFTER YEAR MONTH DAY HOURS MINUTES " +
    "SECONDS TIMEZONE TZ NOW UUID STRUUID MD5 SHA1 SHA256 SHA384 SHA512 COALESCE IF STRLANG STRDT " +
    "SAMETERM ISIRI ISURI ISBLANK ISLITERAL ISNUMERIC REGEX SUBSTR REPLACE COUNT SUM MIN MAX AVG SAMPLE " +
    "GROUP_CONCAT MEDIAN TRIPLE SUBJECT PREDICATE OBJECT ISTRIPLE");
  var ATOMS = words("TRUE FALSE A");

  CodeMirror.defineMode("sparql-cqels", function () {
    function tokenBase(stream, state) {
      if (stream.eatSpace()) return null;
      var ch = stream.peek();
      if (ch === "#") { stream.skipToEnd(); return "comment"; }
      if (ch === "<") {
        // An IRI reference (no spaces in it), else the less-than operator.
        if (stream.match(/^<[^<>"{}|^`\\\s]*>/)) return "string-2";
        stream.next();
        return "operator";
      }
      if (ch === '"' || ch === "'") {
        var long = stream.match(ch + ch + ch, false);
        if (long) { stream.match(ch + ch + ch); }
        else { stream.next(); }
        state.tokenize = tokenString(ch, long);
        return state.tokenize(stream, state);
      }
      if (ch === "?" || ch === "$") {
        stream.next();
        if (stream.match(/^[A-Za-z0-9_\u00B7\u00C0-\uFFFF]+/)) return "variable-2";
        return "operator";  // a SEQ quantifier
      }
      if (ch === "@" && stream.match(/^@[A-Za-z]+(-[A-Za-z0-9]+)*/)) return "meta";
      if (stream.match(/^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?(ms|s|m|h|d)?\b/)) return "number";
      if (stream.match(/^_:[A-Za-z0-9_\-.]+/)) return "string-2";
      if (/[{}()\[\],;.]/.test(ch)) { stream.next(); return "bracket"; }
      if (/[=!<>&|+*\/^-]/.test(ch)) { stream.next(); return "operator"; }
      var word = stream.match(/^[A-Za-z_\u00C0-\uFFFF][A-Za-z0-9_\-\u00B7\u00C0-\uFFFF]*(:[A-Za-z0-9_\-.:%\u00C0-\uFFFF]*)?/);
      if (word) {
        var text = word[0];
        if (text.indexOf(":") >= 0) return "string-2";  // a prefixed name
        var upper = text.toUpperCase();
        if (stream.peek() === ":") { stream.next(); stream.match(/^[A-Za-z0-9_\-.%]*/); return "string-2"; }
        if (KEYWORDS[upper]) return "keyword";
        if (STREAM_WORDS[upper]) return "keyword stream-keyword";
        if (BUILTINS[upper]) return "builtin";
        if (ATOMS[upper]) return "atom";
        return null;
      }
      if (ch === ":") { stream.next(); stream.match(/^[A-Za-z0-9_\-.%]*/); return "string-2"; }
      stream.next();
      return null;
    }

    function tokenString(quote, long) {
      return function (stream, state) {
        var escaped = false, ch;
        while ((ch = stream.next()) != null) {
          if (!escaped && ch === quote && (!long || stream.match(quote + quote))) {
            state.tokenize = tokenBase;
            return "string";
          }
          escaped = !escaped && ch === "\\";
        }
        if (!long) state.tokenize = tokenBase;  // a short string ends with its line
        return "string";
      };
    }

    return {
      startState: function () { return { tokenize: tokenBase }; },
      token: function (stream, state) { return state.tokenize(stream, state); },
      lineComment: "#"
    };
  });
  CodeMirror.defineMIME("application/sparql-query", "sparql-cqels");
})();
