"""Known failures of the W3C SPARQL suites: test IRI → the reason. Add entries, do not rewrite."""

KNOWN_FAILURES: dict[str, str] = {}

# --------------------------------------------------------------------------- query evaluation over HTTP
# (tests/test_w3c_eval_http.py). Every one of these fails the same way when the query runs on a bare
# pyoxigraph.Store, without the endpoint: they are properties of pyoxigraph 0.5, not of our code.

_R2 = "http://www.w3.org/2001/sw/DataAccess/tests/data-r2/"
_S11 = "http://www.w3.org/2009/sparql/docs/tests/data-sparql11/"

# pyoxigraph.Store keeps xsd numeric, boolean and date literals as values, so a stored literal comes
# back in canonical form and integer subtypes come back as xsd:integer: "01"^^xsd:integer is "1",
# "1.0e0"^^xsd:double is "1", "0"^^xsd:boolean is "false", "-3"^^xsd:negativeInteger is
# "-3"^^xsd:integer. The expected results keep the data's lexical forms (and simple entailment
# keeps "01" and "1" apart).
_STORED = "pyoxigraph.Store canonicalises stored literals"
# pyoxigraph writes a computed xsd:double/xsd:float in plain decimal notation ("32100", "0.4") and an
# integral xsd:decimal without a fraction ("2"); the tests expect XSD canonical forms ("3.21E4", "2.0").
_COMPUTED = "pyoxigraph's lexical form for computed numbers"
# pyoxigraph evaluates GRAPH ?g { P } by binding ?g outside P, so ?g is already bound inside P
# (Oxigraph lists these as "Our scoping of variables introduced by GRAPH is wrong").
_GRAPH_SCOPE = "pyoxigraph binds the GRAPH variable inside the graph pattern"

KNOWN_FAILURES.update(
    {
        _S11 + "aggregates/manifest#agg-min-01": f'{_STORED}: MIN gives the stored "1.0"^^xsd:decimal as "1"',
        _S11 + "aggregates/manifest#agg-min-02": f'{_STORED}: MIN gives the stored "1.0"^^xsd:decimal as "1"',
        _S11 + "aggregates/manifest#agg-max-01": f'{_STORED}: MAX gives the stored "3.0E4"^^xsd:double as "30000"',
        _S11 + "aggregates/manifest#agg-max-02": f'{_STORED}: MAX gives the stored "3.0E4"^^xsd:double as "30000"',
        _S11 + "aggregates/manifest#agg-min-distinct": f'{_STORED}: MIN gives "1.0"^^xsd:decimal as "1", '
        '"1.0E2"^^xsd:double as "100"',
        _S11 + "aggregates/manifest#agg-max-distinct": f'{_STORED}: MAX gives "2.0E3"^^xsd:double as "2000"',
        _S11 + "aggregates/manifest#agg-sum-02": f'{_COMPUTED}: SUM is "32100"^^xsd:double, expected "3.21E4"',
        _S11 + "aggregates/manifest#agg-avg-02": f'{_COMPUTED}: AVG is "0.2"^^xsd:double and "2"^^xsd:decimal, '
        'expected "2.0E-1" and "2.0"',
        _S11 + "aggregates/manifest#agg-err-02": f'{_COMPUTED}: AVG is "2.5"^^xsd:double and "2"^^xsd:decimal, '
        'expected "2.5E0" and "2.0"',
        _S11 + "aggregates/manifest#agg-groupconcat-04": "pyoxigraph's GROUP_CONCAT keeps the common language tag "
        '("1 2"@en), so it is not = to the simple literal "1 2" the test compares it with',
        _S11 + "aggregates/manifest#agg-groupconcat-06": "pyoxigraph's GROUP_CONCAT keeps the language tag of its "
        'single element ("1"@en), so it is not = to the simple literal "1"',
        _S11 + "aggregates/manifest#agg-empty-group-count-graph": f"{_GRAPH_SCOPE}: GRAPH ?g {{ SELECT "
        "(COUNT(*) AS ?c) … }} gives one solution without ?g instead of one per graph",
        _S11 + "bindings/manifest#graph": f"{_GRAPH_SCOPE}: VALUES (?g ?t) {{ (UNDEF \"foo\") }} inside GRAPH ?g "
        "leaves ?g unbound instead of taking each graph name",
        _S11 + "negation/manifest#graph-minus": f"{_GRAPH_SCOPE}: MINUS inside GRAPH ?g removes every solution",
        _R2 + "graph/manifest#graph-variable-scope": f"{_GRAPH_SCOPE}: FILTER(BOUND(?g)) inside GRAPH ?g is true",
        _R2 + "graph/manifest#graph-optional": f"{_GRAPH_SCOPE}: OPTIONAL {{ ?s ?p ?g }} inside GRAPH ?g joins "
        "on the graph name",
        _S11 + "cast/manifest#cast-bool": f'{_STORED}: ?v echoes "0"^^xsd:boolean as "false", "0.0"^^xsd:decimal '
        'as "0", "0E1"^^xsd:double as "0"',
        _S11 + "cast/manifest#cast-int": f'{_STORED}: ?v echoes "0"^^xsd:boolean as "false", "1.0"^^xsd:decimal '
        'as "1"',
        _S11 + "cast/manifest#cast-string": f'{_STORED}: ?v echoes "0"^^xsd:boolean as "false", so does '
        'xsd:string(?v); "0.0"^^xsd:decimal as "0"',
        _S11 + "cast/manifest#cast-float": f'{_COMPUTED}: xsd:float("-10.2E3") is "-10200", expected "-1.02E4" '
        f"(and {_STORED})",
        _S11 + "cast/manifest#cast-double": f'{_COMPUTED}: xsd:double("-10.2E3") is "-10200", expected "-1.02E4" '
        f"(and {_STORED})",
        _S11 + "cast/manifest#cast-decimal": f'{_COMPUTED}: xsd:decimal("13") is "13", expected "13.0" '
        f"(and {_STORED})",
        _S11 + "functions/manifest#plus-1-corrected": f'{_STORED}: "1.0"^^xsd:decimal comes back as "1", and '
        'the sum as "3", expected "3.0"',
        _S11 + "functions/manifest#plus-2-corrected": f'{_STORED}: "1.0"^^xsd:decimal comes back as "1", and '
        'the sum as "3", expected "3.0"',
        _S11 + "functions/manifest#coalesce01": f'{_COMPUTED}: ?o/?x is "0"^^xsd:decimal and "2"^^xsd:decimal, '
        'expected "0.0" and "2.0"',
        _S11 + "functions/manifest#bnode01": "pyoxigraph's BNODE(str) gives the same blank node for the same "
        "string in every solution (_:BAZ); SPARQL scopes it to one solution, so there is no consistent "
        "renaming of the blank nodes onto the expected ones",
        _S11 + "property-path/manifest#zero_or_more_set_start": "pyoxigraph's ?s :p* <o> with <o> not in the "
        "graph finds nothing; the zero-length path binds ?s to <o> (Oxigraph lists it as a known bug)",
        _S11 + "property-path/manifest#zero_or_more_set_end": "pyoxigraph's <s> :p* ?o with <s> not in the "
        "graph finds nothing; the zero-length path binds ?o to <s> (Oxigraph lists it as a known bug)",
        _S11 + "property-path/manifest#zero_or_one_set_start": "pyoxigraph's ?s :p? <o> with <o> not in the "
        "graph finds nothing; the zero-length path binds ?s to <o> (Oxigraph lists it as a known bug)",
        _S11 + "property-path/manifest#zero_or_one_set_end": "pyoxigraph's <s> :p? ?o with <s> not in the "
        "graph finds nothing; the zero-length path binds ?o to <s> (Oxigraph lists it as a known bug)",
        _S11 + "csv-tsv-res/manifest#csv03": f'{_STORED}: "1.0e6"^^xsd:double is written 1000000, expected 1.0E6',
        _S11 + "csv-tsv-res/manifest#tsv03": f'{_STORED}: "1.0e6"^^xsd:double comes back as "1000000" and '
        '"-3"^^xsd:negativeInteger as "-3"^^xsd:integer',
        _R2 + "open-world/manifest#open-eq-01": f'{_STORED}: the pattern\'s "001"^^xsd:integer matches the '
        'graph\'s "1" and "01", which simple entailment keeps apart',
        _R2 + "open-world/manifest#open-eq-03": f'{_STORED}: "01"^^xsd:integer comes back as "1"',
        _R2 + "open-world/manifest#open-eq-04": f'{_STORED}: "02"^^xsd:integer comes back as "2"',
        _R2 + "open-world/manifest#date-2": 'pyoxigraph compares xsd:date with XSD 1.1 rules (an implicit '
        'timezone), so "2006-08-23Z" != "2006-08-23" holds; the test expects an error (no timezone, not '
        'comparable) and fewer solutions. Oxigraph lists it: "We use XSD 1.1 equality on dates"',
        _R2 + "open-world/manifest#date-3": f'{_STORED}: "2006-08-23+00:00"^^xsd:date comes back as "2006-08-23Z"',
        _R2 + "expr-builtin/manifest#dawg-str-1": f'{_STORED}: STR of the stored "01"^^xsd:integer is "1", '
        'of "1.0e0"^^xsd:double "1"',
        _R2 + "expr-builtin/manifest#dawg-str-2": f'{_STORED}: STR of the stored "01"^^xsd:integer is "1", '
        'so the FILTER on "01" finds nothing',
        _R2 + "expr-builtin/manifest#dawg-datatype-1": f'{_STORED}: "1.0e0"^^xsd:double and "1.0"^^xsd:double '
        'come back as "1"',
        _R2 + "expr-builtin/manifest#sameTerm-simple": f'{_STORED}: "1.0"^^xsd:double and "1.0e0"^^xsd:double '
        "become one term, so sameTerm matches across them",
        _R2 + "expr-builtin/manifest#sameTerm-eq": f'{_STORED}: "1.0"^^xsd:double and "1.0e0"^^xsd:double '
        "become one term, so sameTerm matches across them",
        _R2 + "expr-builtin/manifest#sameTerm-not-eq": f'{_STORED}: "1.0"^^xsd:double and "1.0e0"^^xsd:double '
        "become one term, so !sameTerm drops pairs of them",
        _R2 + "expr-builtin/manifest#case-insensitive-booleans": "pyoxigraph's SPARQL parser rejects the "
        "keywords TRUE and False (SPARQL keywords are case-insensitive); our parser accepts them",
        _R2 + "expr-equals/manifest#eq-2-1": f'{_STORED}: "01"^^xsd:integer, "1.0e0"^^xsd:double … come back '
        'as "1"',
        _R2 + "expr-equals/manifest#eq-2-2": f'{_STORED}: "01"^^xsd:integer, "1.0e0"^^xsd:double … come back '
        'as "1"',
        _R2 + "expr-equals/manifest#eq-graph-1": f'{_STORED}: the pattern\'s "1"^^xsd:integer also matches the '
        'stored "01"',
        _R2 + "expr-equals/manifest#eq-graph-2": f'{_STORED}: the pattern\'s "1.0e0"^^xsd:double also matches '
        'the stored "1.0" and "1"',
        _R2 + "distinct/manifest#no-distinct-1": f'{_STORED}: "01"^^xsd:integer, "1.0e0"^^xsd:double, '
        '"1.3e0"^^xsd:float … come back canonical',
        _R2 + "distinct/manifest#distinct-1": f'{_STORED}: "01" and "1" (and other spellings of one number) '
        "become one term, so DISTINCT keeps fewer solutions",
        _R2 + "distinct/manifest#no-distinct-9": f'{_STORED}: "01"^^xsd:integer, "1.0e0"^^xsd:double, '
        '"1.3e0"^^xsd:float … come back canonical',
        _R2 + "distinct/manifest#distinct-9": f'{_STORED}: "01" and "1" (and other spellings of one number) '
        "become one term, so DISTINCT keeps fewer solutions",
        _R2 + "sort/manifest#dawg-sort-7": f'{_STORED}: "23.0"^^xsd:float comes back as "23"',
    }
)

# --------------------------------------------------------------------------- Graph Store Protocol
# (tests/test_w3c_graph_store.py, the deprecated prose manifest http-rdf-update/manifest.ttl).
_GSP = "http://www.w3.org/2009/sparql/docs/tests/data-sparql11/http-rdf-update/manifest#"
KNOWN_FAILURES.update(
    {
        _GSP + "get_of_post__existing_graph": (
            "the deprecated prose expects person/1 as it was before both the PUT of put__graph_already_in_store "
            '(v:fn "Jane Doe") and the POST it follows (foaf:name "Jane Doe"), while the next test, '
            "get_of_post__multipart_formdata, expects both in the same graph; the replacement tests "
            "post_get_post_get_direct/_indirect check the same POST and pass"
        ),
    }
)

# --------------------------------------------------------------------------- the continuous path
# (tests/test_continuous_w3c.py: the query reads its default graph as FROM STREAM <…> [ALL], the data
# pushed as one event, evaluated by the incremental engine). Keyed apart from KNOWN_FAILURES: the
# stream path keeps lexical forms exactly (no pyoxigraph.Store in between), so it passes tests the
# HTTP path fails, and its failures are its own.
CONTINUOUS_KNOWN_FAILURES: dict[str, str] = {}

# runtime.expressions computes numbers, dates and BNODE() the way pyoxigraph does, on purpose: the
# incremental engine must agree with the recompute oracle, which is pyoxigraph.
_AS_OXIGRAPH = "runtime.expressions follows pyoxigraph (the oracle of incremental == recompute)"
# The suites contradict themselves on the lexical form of a computed number, so no writing rule passes
# them all (issue 15 checked XSD canonical forms for computed values only, data terms unchanged):
# agg-sum-02 wants SUM of doubles as "3.21E4", agg-sum-distinct "2100" (the same SUM over the same kind
# of data); coalesce01 wants 2 / 1 = "2.0"^^xsd:decimal, sparql10 expr-ops divide-numbers-cast
# 3 / 3 = "1"^^xsd:decimal; plus-1-corrected wants "1.0" + 2 = "3.0", add-numbers-cast "3"^^xsd:decimal
# + 3 = "6"; agg-avg-02 wants "2.0"^^xsd:decimal, ceil01/floor01/round01 and seconds "3"/"1". Canonical
# forms pass the 5 tests below and fail 12 that pass now (ceil01, floor01, round01, seconds,
# agg-sum-distinct, agg-avg-distinct and the six expr-ops *-numbers-cast/unplus-2/unminus-2), which
# expect pyoxigraph's forms, as this engine writes them.
_CONTRADICTED = "the suites expect other forms for the same operation elsewhere (see above)"
CONTINUOUS_KNOWN_FAILURES.update(
    {
        # These three contradict themselves within one test: no rule writes all their expected forms.
        _S11 + "cast/manifest#cast-float": f'{_AS_OXIGRAPH}: xsd:float("-10.2E3") is "-10200", expected "-1.02E4", '
        'while the same test expects xsd:float("1E0") as "1E0", xsd:float("1") as "1" and xsd:float(1) as "1.0"',
        _S11 + "cast/manifest#cast-double": f'{_AS_OXIGRAPH}: xsd:double("-10.2E3") is "-10200", expected "-1.02E4", '
        'while the same test expects xsd:double("1E0") as "1E0", xsd:double("1") as "1" and xsd:double(1) as "1.0"',
        _S11 + "cast/manifest#cast-decimal": f'{_AS_OXIGRAPH}: xsd:decimal("13") is "13", expected "13.0", while '
        'the same test expects xsd:decimal(0) as "0" but xsd:decimal(1) as "1.0"',
        _S11 + "functions/manifest#plus-1-corrected": f'{_AS_OXIGRAPH}: "1.0"^^xsd:decimal + 2 is "3", '
        f'expected "3.0"; {_CONTRADICTED}',
        _R2 + "open-world/manifest#date-2": f"{_AS_OXIGRAPH}: xsd:date compares with XSD 1.1 rules (an implicit "
        'timezone), so "2006-08-23Z" != "2006-08-23" holds where the test expects an error',
        _S11 + "functions/manifest#bnode01": "each SELECT expression is its own BIND operator, so BNODE(?s1) and "
        "BNODE(?s2) of one solution do not share blank nodes for equal strings as SPARQL scopes them",
    }
)

# Exposed once DISTINCT/REDUCED, UNION and OPTIONAL ran incrementally (issue 5, F2).
CONTINUOUS_KNOWN_FAILURES.update(
    {
        _S11 + "functions/manifest#coalesce01": f'{_AS_OXIGRAPH}: 2 / 1 on integers is "2"^^xsd:decimal, '
        f'expected "2.0"; {_CONTRADICTED}',
    }
)

# Exposed once GROUP BY / aggregates ran incrementally (issue 5, F1).
CONTINUOUS_KNOWN_FAILURES.update(
    {
        _S11 + "aggregates/manifest#agg-sum-02": f'{_AS_OXIGRAPH}: SUM of doubles is "32100"^^xsd:double, '
        f'expected "3.21E4"; {_CONTRADICTED}',
        _S11 + "aggregates/manifest#agg-avg-02": f'{_AS_OXIGRAPH}: AVG is "0.2"^^xsd:double and "2"^^xsd:decimal, '
        f'expected "2.0E-1" and "2.0"; {_CONTRADICTED}',
        _S11 + "aggregates/manifest#agg-err-02": f'{_AS_OXIGRAPH}: AVG is "2.5"^^xsd:double and "2"^^xsd:decimal, '
        f'expected "2.5E0" and "2.0"; {_CONTRADICTED}',
        _S11 + "aggregates/manifest#agg-min-02": 'MIN returns the data term "2E-1"^^xsd:double in the form the '
        'Store gives it, "0.2" (see below); the expected result writes it in canonical form "2.0E-1"',
    }
)

# Exposed once the incremental mode keyed terms by the forms pyoxigraph's Store gives them, as the
# static store and the recompute oracle do (runtime/canonical.py): the one-shot path fails these the
# same way, for the same reason (KNOWN_FAILURES above).
CONTINUOUS_KNOWN_FAILURES.update(
    {
        iri: KNOWN_FAILURES[iri]
        for iri in (
            *(_S11 + "aggregates/manifest#" + name for name in ("agg-min-01", "agg-max-01", "agg-max-02", "agg-max-distinct", "agg-min-distinct")),
            *(_S11 + "cast/manifest#" + name for name in ("cast-bool", "cast-int", "cast-string")),
            _S11 + "functions/manifest#plus-2-corrected",
            *(_R2 + "open-world/manifest#" + name for name in ("open-eq-01", "open-eq-03", "open-eq-04", "date-3")),
            *(_R2 + "expr-builtin/manifest#" + name for name in ("dawg-str-1", "dawg-str-2", "dawg-datatype-1")),
            *(_R2 + "expr-builtin/manifest#" + name for name in ("sameTerm-simple", "sameTerm-eq", "sameTerm-not-eq")),
            *(_R2 + "expr-equals/manifest#" + name for name in ("eq-2-1", "eq-2-2", "eq-graph-1", "eq-graph-2")),
            *(_R2 + "distinct/manifest#" + name for name in ("no-distinct-1", "distinct-1", "no-distinct-9", "distinct-9")),
            _R2 + "sort/manifest#dawg-sort-7",
        )
    }
)

# --------------------------------------------------------------------------- the recompute oracle
# Regression scenarios (tests/regressions/*/NAME.json, by NAME) where incremental != recompute
# because pyoxigraph, the recompute oracle, is wrong: replayed as strict xfails.
ORACLE_DEVIATIONS: dict[str, str] = {
    "fefa8d1ddd4c": "pyoxigraph answers a path whose two ends are already bound (here ?a !(:v) ?a after "
    "?a :p* ?b binds ?a) with one solution, as an existence test, but counts one per matching triple when "
    "an end is free (?a !(:v) ?a alone, or first in the group, gives 2 over :e0 :p :e0 . :e0 :q :e0): "
    "its answer depends on the order of the join. The path window counts per triple either way.",
}
