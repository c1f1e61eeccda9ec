"""What a verdict's explanation says: TensorFlow's text once, short, and a fix hint
that is true for the case it is printed for. Hand-built outcomes; no TensorFlow."""

import dataclasses

from harness.records import OracleOutcome, Usage, Verdict, error_headline
from harness.report import text
from harness.judge.verdict import judge
from tests.unit.outcomes import RERUN, TF, make_case, ok, raised

# The message TensorFlow 2.21 gives for a Python `if` on a symbolic tensor (framework/tensor.py,
# _disallow_bool_casting and _disallow; seen from `check` on a grad_fn with an `if x > 0`),
# as tf.function reports it: "in user code:" and the frames first, the class and text last.
BOOL_TEXT = ("Using a symbolic `tf.Tensor` as a Python `bool` is not allowed. You can attempt the "
             "following resolutions to the problem: If you are running in Graph mode, use Eager "
             "execution mode or decorate this function with @tf.function. If you are using "
             "AutoGraph, you can try decorating this function with @tf.function.")
IN_USER_CODE = f"in user code:\n\n    File \"mine.py\", line 7, in grad\n        if x > 0:\n\n" \
               f"    OperatorNotAllowedInGraphError: {BOOL_TEXT}\n"
NOT_ALLOWED = ("OperatorNotAllowedInGraphError", "TypeError", "Exception", "BaseException",
               "object")
CUSTOM = Usage(ran=("branchy",))


def judged(*outcomes, oracles=None, order=1):
    case = make_case(order=order)
    return judge(case, case.points[0].label, {o.mode: o for o in outcomes}, tf_version=TF,
                 reference="eager", rerun=RERUN, oracles=oracles)


def bool_error(mode, message, usage=CUSTOM):
    return dataclasses.replace(raised(mode, "OperatorNotAllowedInGraphError", NOT_ALLOWED,
                                      stage="order 1", message=message), usage=usage)


def test_the_headline_of_an_error_is_its_first_sentence_without_the_class_name():
    assert error_headline(IN_USER_CODE, "OperatorNotAllowedInGraphError") == (
        "Using a symbolic `tf.Tensor` as a Python `bool` is not allowed")
    assert error_headline("x" * 300).endswith("...") and len(error_headline("x" * 300)) == 160
    assert error_headline("ValueError: short", "ValueError") == "short"
    assert error_headline("e.g. a short lead. " + "y" * 200) .startswith("e.g. a short lead")


def test_tensorflows_paragraph_is_quoted_once_per_point():
    eager = dataclasses.replace(ok("eager"), usage=CUSTOM)
    r = judged(eager, bool_error("function", IN_USER_CODE), bool_error("graph", BOOL_TEXT))
    assert r.verdict is Verdict.FAIL
    block = text.line(r)
    assert block.count("is not allowed") == 1, block
    assert "OperatorNotAllowedInGraphError: OperatorNotAllowedInGraphError" not in block
    assert "You can attempt" not in block  # the first sentence only; the JSON keeps the whole text
    assert r.outcomes["graph"].error.message == BOOL_TEXT
    # The two modes raise one error: one line says it of both.
    assert ("function and graph raise OperatorNotAllowedInGraphError at order 1, where eager "
            "computed at this point: Using a symbolic `tf.Tensor` as a Python `bool` is not "
            "allowed\n") in block
    assert (
        "- along the ladder eager > function > graph: the results part between eager and function\n"
        in block
    )


def test_a_python_if_inside_a_custom_gradient_gets_the_tf_cond_hint_not_tensorflows_advice():
    eager = dataclasses.replace(ok("eager"), usage=CUSTOM)
    r = judged(eager, bool_error("function", IN_USER_CODE), bool_error("graph", BOOL_TEXT))
    [hint] = [d for d in r.details if d.startswith("hint: ")]
    assert "inside a custom gradient" in hint and "use tf.cond or tf.where" in hint
    assert "decorate it with @tf.function does not help there" in hint
    plain = judged(ok("eager"), bool_error("function", IN_USER_CODE, usage=Usage()),
                   bool_error("graph", BOOL_TEXT, usage=Usage()))
    [hint] = [d for d in plain.details if d.startswith("hint: ")]
    assert "custom gradient" not in hint and "that AutoGraph did not convert" in hint
    # An `if` around a custom gradient: AutoGraph converts it in function mode, only graph raises;
    # the custom gradient ran, but the `if` is not inside it, and the hint does not say it is.
    around = judged(eager, dataclasses.replace(ok("function"), usage=CUSTOM),
                    bool_error("graph", BOOL_TEXT))
    [hint] = [d for d in around.details if d.startswith("hint: ")]
    assert (
        "inside a custom gradient" not in hint and "without AutoGraph (a tf.compat.v1 graph" in hint
    )


def test_a_wrong_number_of_gradients_gets_the_one_per_input_hint():
    message = "custom_gradient function expected to return 1 gradients, but returned 2 instead."
    outcomes = [raised(m, "ValueError", stage="order 1", message=message)
                for m in ("eager", "function", "graph")]
    r = judged(*outcomes)
    assert r.verdict is Verdict.FAIL
    [hint] = [d for d in r.details if d.startswith("hint: ")]
    assert "one gradient per input of the function, in order (it returned 2 for 1 input)" in hint


def test_grad_fn_mishandling_dy_gets_the_linear_in_dy_hint_and_nothing_else_does():
    line = ("grad_fn mishandles its upstream gradient: at order 1 with upstream weights [-0.75] "
            "(the dy passed to grad_fn in place of ones, as a loss other than a plain sum passes), "
            "order 1 gradient wrt x: ...")
    upstream = OracleOutcome(name="upstream", status="differ", orders=(1,), differ=(1,),
                             details=(line,))
    numeric = OracleOutcome(name="numeric", status="match", orders=(0, 1))
    r = judged(*[ok(m) for m in ("eager", "function", "graph")],
               oracles={"numeric": numeric, "upstream": upstream})
    assert r.verdict is Verdict.FAIL and r.reason == line
    assert [d for d in r.details if d.startswith("hint: ")] == [
        "hint: grad_fn must return the upstream gradient dy times the derivative, linear in dy as "
        "the chain rule is: one that returns the derivative alone, sums over dy, or clips or "
        "rescales dy departs from it where a loss passes a dy other than ones"]
    wrong = OracleOutcome(name="numeric", status="differ", orders=(0, 1), differ=(1,),
                          details=("order 1 gradient wrt x: eager=3 numeric=2 abs err 1",))
    r = judged(*[ok(m) for m in ("eager", "function", "graph")], oracles={"numeric": wrong})
    assert r.verdict is Verdict.FAIL and not [d for d in r.details if d.startswith("hint: ")]


def test_an_unconnected_none_where_the_derivative_is_not_zero_gets_its_hint():
    line = "order 1 gradient wrt y: eager=None (unconnected) numeric=1.5 abs err 1.5 rel err 1"
    numeric = OracleOutcome(name="numeric", status="differ", orders=(0, 1), differ=(1,),
                            details=(line,))
    r = judged(*[dataclasses.replace(ok(m), usage=CUSTOM) for m in ("eager", "function", "graph")],
               oracles={"numeric": numeric})
    [hint] = [d for d in r.details if d.startswith("hint: ")]
    assert hint.startswith("hint: grad_fn returned None for y, whose derivative is not zero here")
    # Without a custom gradient there is no grad_fn to blame: the op on the path is.
    plain = judged(*[ok(m) for m in ("eager", "function", "graph")], oracles={"numeric": numeric})
    [hint] = [d for d in plain.details if d.startswith("hint: ")]
    assert (
        "grad_fn" not in hint
        and "an op on its path has no gradient, or tf.stop_gradient cuts it" in hint
    )


def test_a_verdicts_block_shows_a_few_detail_lines_its_hints_and_says_where_the_rest_are():
    eager = dataclasses.replace(ok("eager"), usage=CUSTOM)
    r = judged(eager, bool_error("function", IN_USER_CODE), bool_error("graph", BOOL_TEXT))
    r = dataclasses.replace(r,
                            details=r.details[:1] + tuple(f"detail {i}" for i in range(12))
                            + r.details[1:])
    lines = text.line(r).splitlines()
    # head, reason, details, hint, rerun
    assert len(lines) <= 1 + 1 + text.MAX_DETAILS + 1 + 1, lines
    assert any("more detail lines: the JSON report (--json_out) holds them all" in l for l in lines)
    assert lines[-2].startswith("    - hint: ") and lines[-1].startswith("    rerun: ")
