"""How a session's files become one record per function (harness.record.merging): the points
replayed are a function of the calls the suite made, not of which process made them. Pure logic:
recordings written here as the recorder writes them, no TensorFlow."""

import itertools

from harness.record import merging


def point(test, number, value, node=None, fingerprint=""):
    made = {"context": "eager", "node": node or f"tests/test_{test}.py::t", "rank": [test, number],
            "args": [{"array": f"values/{test}-{number}.npy", "dtype": "float32", "shape": [],
                      "sha1": f"sha-{value}"}], "kwargs": {}, "variables": []}
    made["digest"] = merging.digest_of(made, fingerprint)
    return made


def record(points, fingerprint="f0", captured=(), **extra):
    return dict({"module": "mylib.ops", "qualname": "wrong_above", "file": "mylib/ops.py",
                 "line": 7, "site": "4:abc", "fingerprint": fingerprint,
                 "captured": [list(c) for c in captured], "calls": len(points),
                 "importable": True, "points": points}, **extra)


def process(calls, tests, k=3):
    """What one process keeps running `tests` of a suite whose calls are `calls` (test -> the
    values it calls the function with, in order): the K distinct calls of lowest rank."""
    seen = {}
    for test in sorted(tests):
        for number, value in enumerate(calls[test], 1):
            made = point(test, number, value)
            if made["digest"] not in seen:
                seen[made["digest"]] = made
    return sorted(seen.values(), key=merging.order_of)[:k]


def session(*processes, k=3):
    return {"sessions": [{"limits": {"points": k}} for _ in processes],
            "functions": [record(p) for p in processes]}


def values(merged):
    [only] = merged
    return [p["args"][0]["sha1"] for p in only["points"]]


CALLS = {0: [0.5, 1.0], 1: [0.5, 3.0, 1.5], 2: [2.5], 3: [1.0, 0.25]}


def test_serial_and_every_split_of_the_tests_between_two_workers_keep_the_same_points():
    serial = values(merging.merged(session(process(CALLS, CALLS))))
    # The failing call (3.0, in the second test) is kept, and the repeated 0.5 is one point.
    assert serial == ["sha-0.5", "sha-1.0", "sha-3.0"]
    for size in range(1, len(CALLS)):
        for first in itertools.combinations(CALLS, size):
            second = [t for t in CALLS if t not in first]
            for files in ((first, second), (second, first)):  # and in either file order
                merged = merging.merged(session(*(process(CALLS, t) for t in files)))
                assert values(merged) == serial, files


def test_the_same_call_in_two_processes_is_one_point_named_by_the_test_that_made_it_first():
    # Under --dist loadfile, test 0's worker and test 1's each kept x=0.5: merged, it is one point,
    # and the test it names is the first in the collection, as in a serial run.
    merged = merging.merged(session(process(CALLS, [1]), process(CALLS, [0])))
    kept = merged[0]["points"]
    assert [p["args"][0]["sha1"] for p in kept] == ["sha-0.5", "sha-1.0", "sha-3.0"]
    assert kept[0]["node"] == "tests/test_0.py::t"
    assert merged[0]["calls"] == 5  # both processes' calls are counted


def test_a_factory_s_closures_over_other_values_are_one_function_each_point_saying_its_own():
    low = record([point(0, 1, 1.0, fingerprint="a")], fingerprint="a",
                 captured=[("threshold", "0.79")], importable=False)
    high = record([point(1, 1, 1.0, fingerprint="b")], fingerprint="b",
                  captured=[("threshold", "0.12")], importable=False)
    [merged] = merging.merged({"sessions": [{"limits": {"points": 3}}], "functions": [high, low]})
    assert merged["variants"] == 2 and merged["captured"] == []
    # The same argument under two closures: two calls, two points, in rank order.
    assert [p["captured"] for p in merged["points"]] == ["threshold=0.79", "threshold=0.12"]


def test_two_definitions_of_one_name_stay_two_functions():
    one = record([point(0, 1, 1.0)])
    other = dict(record([point(0, 1, 1.0)]), site="30:def")  # a second lambda on the line
    assert len(merging.merged({"sessions": [{}], "functions": [one, other]})) == 2


def test_a_digest_is_the_values_not_the_file_a_process_stored_them_in():
    a, b = point(0, 1, 2.0), point(5, 2, 2.0, node="elsewhere")
    b["args"][0]["array"] = "values/999-0.npy"
    assert merging.digest_of(a) == merging.digest_of(b)
    assert merging.digest_of(a) != merging.digest_of(a, fingerprint="another closure")
    assert merging.digest_of(a) != merging.digest_of(point(0, 1, 2.5))


def test_calls_with_values_rank_before_calls_seen_only_while_tracing():
    traced = point(0, 1, 1.0)
    traced["args"] = [{"spec": {"dtype": "float32", "shape": [2]}}]
    traced["digest"] = merging.digest_of(traced)
    valued = [point(4, n, v) for n, v in enumerate((1.0, 2.0, 3.0), 1)]
    kept = merging.merged({"sessions": [{"limits": {"points": 3}}],
                           "functions": [record([traced] + valued)]})[0]["points"]
    assert kept == valued
