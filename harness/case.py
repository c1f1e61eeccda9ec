"""The public case API: what a case is, and the rules that make one valid.

A case is plain data plus a Python callable. Nothing here imports TensorFlow,
so a case file can be loaded, validated and listed in milliseconds.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
from typing import Any, Callable, Mapping, Optional, Sequence

import numpy as np

from harness import mode_names, oracle_names
from harness.domain import Domain
from harness.criteria.tolerance import Tol, ToleranceOverride
from harness.versions import VersionRange, parse_range

__all__ = [
    "Case",
    "CaseError",
    "Domain",
    "Expectation",
    "Point",
    "VALUES_DIFFER",
    "BAD_GRADIENT",
    "GRADIENT_UNUSED",
    "SURROGATE",
    "ORACLES",
]

# Expectation outcomes that are not exception classes.
VALUES_DIFFER = "values differ"
BAD_GRADIENT = "bad gradient"  # a gradient whose shape or dtype is not its input's
GRADIENT_UNUSED = "gradient unused"  # the custom gradient function was never called
# The custom gradient is a surrogate where the forward is locally constant (a straight-through
# estimator's): declared on the numeric (or upstream) oracle, its direction and linearity are
# still checked.
SURROGATE = "surrogate"
_OUTCOMES = (VALUES_DIFFER, BAD_GRADIENT, GRADIENT_UNUSED, SURROGATE)

# The independent answers a case's agreed values are checked against (harness.oracle_names). An
# expectation may name them where it names modes, with outcome VALUES_DIFFER.
ORACLES = oracle_names.ORACLES

_ID = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
_INTENDED = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*"
                       r":[A-Za-z_][A-Za-z0-9_]*$")
_EXCEPTION_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class CaseError(ValueError):
    """A case definition is invalid; the message names the case and the field."""


def _fail(case_id: str, field: str, message: str) -> CaseError:
    return CaseError(f"case {case_id!r}: field {field!r}: {message}")


def _is_differentiable(dtype: np.dtype) -> bool:
    # bfloat16 comes from ml_dtypes and is not a numpy.floating subclass.
    return dtype.kind in "fc" or dtype.name == "bfloat16"


def _format_value(value: np.ndarray) -> str:
    # str() of a NumPy scalar is its shortest round-trip text: "0.1", not "0.10000000149011612".
    if value.ndim == 0:
        return str(value[()])
    if value.size <= 4:
        return "[" + ",".join(_format_value(np.asarray(v)) for v in value) + "]"
    return f"{value.dtype.name}[{','.join(map(str, value.shape))}]"


def point_label(names: Sequence[str], values: Sequence[np.ndarray]) -> str:
    """A point's label, "x=1.0,y=[1.0,2.0]": the same in the main process and in a worker."""
    return ",".join(f"{n}={_format_value(np.asarray(v))}" for n, v in zip(names, values))


@dataclasses.dataclass(frozen=True)
class Point:
    """One input point: a NumPy value per positional argument, with a stable label."""

    names: tuple[str, ...]
    values: tuple[np.ndarray, ...]
    label: str

    @property
    def signature(self) -> tuple[tuple[str, tuple[int, ...]], ...]:
        """Dtypes and shapes: points with equal signatures share one trace and one graph."""
        return tuple((v.dtype.name, v.shape) for v in self.values)


@dataclasses.dataclass(frozen=True)
class Expectation:
    """A declared, explained deviation from "all modes agree and match the oracles".

    Attributes:
      modes: the modes that deviate, or oracles ("numeric", "reference",
        "analytic") that the agreed values do not match.
      outcome: what they do instead: an exception class name (matched against
        the class and its bases, so "TypeError" covers its subclasses),
        VALUES_DIFFER (they return values that differ from the yardstick mode's;
        for an oracle: the agreed values differ from it), BAD_GRADIENT (a
        gradient's shape or dtype is not its input's), GRADIENT_UNUSED (the
        mode never called the custom gradient function: its gradient came from
        somewhere else, usually ordinary autodiff of the function's body), or,
        on the numeric oracle, SURROGATE (where the forward is locally constant
        the custom gradient is a surrogate on purpose, a straight-through
        estimator's: its direction and linearity in dy are still checked, and
        a surrogate pointing the wrong way still fails).
      reason: why TensorFlow behaves so; shown with the verdict. Required.
      tf_versions: the TensorFlow releases where this was seen, e.g. ">=2.16";
        None for all.
      points: labels of the points it applies to; empty for all.
      orders: for VALUES_DIFFER, the derivative orders where the values
        differ (e.g. (2,) for a deliberately approximate second derivative);
        a difference at any other order is still a failure. Empty for all.
      intended: for SURROGATE, the intended surrogate as "module:function":
        called with the function's arguments (tensors) and `dy=` (the upstream
        gradient, a list where the function has several outputs), it returns
        the gradient of each differentiated argument; the custom gradient is
        compared with it at dy = 1 and with the upstream weights, at the
        case's tolerance.
    """

    modes: Sequence[str]
    outcome: str
    reason: str
    tf_versions: Optional[str] = None
    points: Sequence[str] = ()
    orders: Sequence[int] = ()
    intended: Optional[str] = None

    def __post_init__(self):
        object.__setattr__(self,
                           "modes", (self.modes,) if isinstance(self.modes, str)
                           else tuple(self.modes))
        object.__setattr__(self, "points", tuple(self.points))
        object.__setattr__(self, "orders", tuple(self.orders))

    @property
    def version_range(self) -> Optional[VersionRange]:
        return parse_range(self.tf_versions) if self.tf_versions else None

    def applies(self, tf_version: str, point_label: str) -> bool:
        """True when this expectation covers `point_label` on `tf_version`."""
        if self.points and point_label not in self.points:
            return False
        rng = self.version_range
        return rng is None or rng.contains(tf_version)

    def describe(self) -> str:
        what = self.outcome if self.outcome in _OUTCOMES else f"raises {self.outcome}"
        if self.orders:
            what += f" at order {', '.join(map(str, self.orders))}"
        versions = f" on TF {self.tf_versions}" if self.tf_versions else ""
        return f"{'/'.join(self.modes)} {what}{versions}: {self.reason}"


@dataclasses.dataclass(frozen=True)
class Case:
    """One named, self-contained custom-gradient check.

    Give exactly one of `fn` and `build`.

    Attributes:
      id: a stable dotted name such as "seeds.log1pexp2".
      points: the input points: mappings from argument name to a NumPy value
        (np.float32(1.0), np.array([...], np.float64)); the names are the
        function's positional arguments, bound by name: the values are passed
        in the function's order, whatever order a point gives them in.
      fn: the function under test, called with one tensor per argument.
      build: a zero-argument callable returning the function under test. It is
        called once per mode inside that mode's graph or context, so variables
        and Keras layers are created where they belong.
      order: the highest derivative order, 1 or more. Order k is the gradient
        of the sum of the order k-1 gradients with respect to the same inputs.
      wrt: names of the arguments to differentiate; default: every floating or
        complex argument.
      tolerance: a Tol for every dtype, or a mapping from dtype name to Tol,
        merged over the default table.
      expectations: declared deviations, each with its reason.
      source: where the case comes from: a seed file name, "tf.custom_gradient
        docstring", or an issue URL.
      description: one line saying what the case shows.
      tf_versions: run only on these TensorFlow releases (e.g. ">=2.16");
        the case is skipped, with the reason, elsewhere.
      wrt_variables: also differentiate with respect to every trainable
        floating or complex variable that `build` creates (in creation order,
        reported as var0, var1, ...; Keras's integer step counters are not
        differentiable and are left out). Create the variables, or build the Keras layers, inside
        `build`.
      reference: the reference oracle: a plain implementation of the same
        function, without the custom gradient, whose ordinary autodiff results
        are compared with the agreed ones, order by order. Like the case: a
        function of the point arguments when the case has `fn`, a builder
        creating the same variables with the same values when it has `build`.
      analytic: the analytic oracle: a function of the point's NumPy values
        returning {order: values} in closed form, where values is one array per
        output (order 0) or per differentiated source (order >= 1), or a single
        array when there is one; orders left out are not checked.
      kinks: point labels (or "*" for every point) mapped to why the function
        cannot be checked by finite differences there (not smooth: a clip
        bound, a straight-through estimator's step; or not a function of its
        inputs: a random shuffle): the numeric and upstream oracles do not
        check those points.
      skip_modes: mode names mapped to why the mode does not apply to this
        case (e.g. "saved_model": "reads a Python counter a SavedModel cannot
        hold"); the mode is reported as skipped with that reason.
      oracle_tolerance: overrides the numeric oracle's table
        (tolerance.NUMERIC_TOLERANCES) like `tolerance` overrides the modes'.
      symmetric: names of arguments that are symmetric matrices (in their last
        two axes): the numeric oracle moves them along symmetric directions
        only, as a function of a symmetric matrix (one that reads one triangle,
        as tf.linalg.cholesky does) is only defined there.
      domains: argument names mapped to the Domain that explore draws their
        values from (harness.explore.search); an argument without one keeps its value
        at the first point. An argument not in `wrt` may have one too: it is
        drawn, and not differentiated. A case without domains is not explored.
      notes: point labels mapped to one line said with that point's result
        (a replayed recording names the test that made the call); a label the
        case does not have (left out when it was narrowed) is dropped.
      drawn: labels of points whose values were drawn, not given (a replayed
        call seen only while tracing): where the forward is NaN or infinite at
        every element in every mode, the draw fell outside the function's
        domain, and the point is skipped saying so instead of judged.
      builders: point labels mapped to a builder of their own, which replaces `build` when the
        case runs at that point alone (each of a replayed recording's points is a job of its
        own): a layer's custom gradient closes over the layer as it was at that call, its
        config and weights, so each point is made from its own copy of it.
    """

    id: str
    points: Sequence[Mapping[str, Any]]
    fn: Optional[Callable[..., Any]] = None
    build: Optional[Callable[[], Callable[..., Any]]] = None
    order: int = 1
    wrt: Optional[Sequence[str]] = None
    tolerance: ToleranceOverride = None
    expectations: Sequence[Expectation] = ()
    source: str = ""
    description: str = ""
    tf_versions: Optional[str] = None
    wrt_variables: bool = False
    reference: Optional[Callable[..., Any]] = None
    analytic: Optional[Callable[..., Mapping[int, Any]]] = None
    kinks: Mapping[str, str] = dataclasses.field(default_factory=dict)
    skip_modes: Mapping[str, str] = dataclasses.field(default_factory=dict)
    oracle_tolerance: ToleranceOverride = None
    symmetric: Sequence[str] = ()
    domains: Mapping[str, Domain] = dataclasses.field(default_factory=dict)
    notes: Mapping[str, str] = dataclasses.field(default_factory=dict)
    drawn: Sequence[str] = ()
    builders: Mapping[str, Callable[[], Callable[..., Any]]] = dataclasses.field(
        default_factory=dict)
    # Whether `wrt` was given (None: found from `wrt` when the case is made; a narrowed copy keeps
    # it): a None gradient of an argument the case did not name is the function saying it has none
    # (RunOptions.strict_none).
    wrt_named: Optional[bool] = dataclasses.field(default=None, repr=False, compare=False)

    def __post_init__(self):
        if not isinstance(self.id, str) or not _ID.match(self.id):
            raise CaseError(
                f"case {self.id!r}: field 'id': use dotted identifiers such as 'seeds.log1pexp2'"
            )
        object.__setattr__(self, "points", self._validate_points())
        object.__setattr__(self, "expectations", tuple(self.expectations))
        self._validate_callable()
        self._validate_order()
        if self.wrt_named is None:
            object.__setattr__(self, "wrt_named", self.wrt is not None)
        object.__setattr__(self, "wrt", self._validate_wrt())
        self._validate_tolerance("tolerance", self.tolerance)
        self._validate_tolerance("oracle_tolerance", self.oracle_tolerance)
        self._validate_oracles()
        object.__setattr__(self, "symmetric", self._validate_symmetric())
        self._validate_domains()
        self._validate_expectations()
        if not self.description or not self.description.strip():
            raise _fail(self.id, "description", "say in one line what the case shows")
        if not self.source or not self.source.strip():
            raise _fail(self.id, "source", "name a seed file, a docstring or an issue URL")
        if self.tf_versions is not None:
            self._parse_versions("tf_versions", self.tf_versions)

    # -- validation, one field at a time -------------------------------------------------

    def _validate_points(self) -> tuple[Point, ...]:
        if isinstance(self.points, Mapping) or not self.points:
            raise _fail(self.id, "points", "give a non-empty list of {argument name: NumPy value}")
        if all(isinstance(p, Point) for p in self.points):
            # A case narrowed to some of its points keeps their labels.
            if len({p.names for p in self.points}) != 1:
                raise _fail(self.id, "points", "every point must have the same arguments")
            return tuple(self.points)
        points = []
        names = None
        parameters = self._positional_parameters()
        for index, raw in enumerate(self.points):
            if not isinstance(raw, Mapping) or not raw:
                raise _fail(self.id, "points",
                            f"point {index} is {raw!r}; give {{name: NumPy value}}")
            these = (tuple(raw) if parameters is None
                     else self._in_call_order(index, tuple(raw), *parameters))
            if names is not None and these != names:
                raise _fail(self.id, "points",
                            f"point {index} has arguments {these}, point 0 has {names}")
            names = these
            values = []
            for name in names:
                value = raw[name]
                if not isinstance(value, (np.ndarray, np.generic)):
                    raise _fail(
                        self.id, "points",
                        f"point {index} argument {name!r} is {type(value).__name__} {value!r}; "
                        "give a NumPy value with its dtype, e.g. np.float32(1.0)",
                    )
                values.append(np.asarray(value))
            label = point_label(names, values)
            points.append(Point(names=names, values=tuple(values), label=label))
        labels = [p.label for p in points]
        duplicates = sorted({l for l in labels if labels.count(l) > 1})
        if duplicates:
            raise _fail(self.id, "points", f"two points share the label {duplicates[0]!r}")
        return tuple(points)

    def _positional_parameters(self) -> Optional[tuple[tuple[str, ...], bool]]:
        """fn's positional parameter names, and whether it takes *args; None when the
        names are the points' own: a builder's function, or a signature that cannot be read."""
        if self.fn is None or self.build is not None or not callable(self.fn):
            return None
        try:
            parameters = inspect.signature(self.fn).parameters.values()
        except (TypeError, ValueError):
            return None
        named = tuple(p.name for p in parameters
                      if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))
        return named, any(p.kind is p.VAR_POSITIONAL for p in parameters)

    def _in_call_order(self, index: int, given: tuple[str, ...], named: tuple[str, ...],
                       star: bool) -> tuple[str, ...]:
        """A point's argument names in fn's positional order (the extra ones *args takes last, as
        given; all of them as given when *args takes every one)."""
        extra = tuple(n for n in given if n not in named)
        if extra and not star:
            raise _fail(self.id, "points",
                        f"point {index} names {extra[0]!r}, which is not an argument of 'fn'; "
                                           f"its arguments: {', '.join(named) or 'none'}")
        ordered = tuple(n for n in named if n in given)
        if not ordered:
            return given
        if ordered != named[:len(ordered)] or extra and len(ordered) < len(named):
            missing = next(n for n in named if n not in given)
            raise _fail(self.id, "points",
                        f"point {index} leaves out argument {missing!r} but gives a later one; "
                                           "the values are passed positionally, so give it too")
        return ordered + extra

    def _validate_callable(self) -> None:
        if (self.fn is None) == (self.build is None):
            raise _fail(self.id, "fn",
                        "give exactly one of fn (the function) and build (a builder)")
        target = self.fn if self.fn is not None else self.build
        if not callable(target):
            field = "fn" if self.fn is not None else "build"
            raise _fail(self.id, field, f"{target!r} is not callable")
        if self.wrt_variables and self.build is None:
            raise _fail(self.id, "wrt_variables",
                        "variables are created by a builder: give build, not fn")
        if self.build is not None:
            self._check_binds(self.build, (), "build", "a builder takes no arguments")
        for label, builder in self.builders.items():
            if self.build is None or not callable(builder):
                raise _fail(self.id, "builders", f"the builder of {label!r} is not callable, or "
                                                 "the case has no build to stand beside it")
        else:
            self._check_binds(self.fn, self.points[0].names, "fn",
                              f"it must accept the {len(self.points[0].names)} point argument(s) "
                              f"{', '.join(self.points[0].names)} positionally")

    def _check_binds(self, target, names, field, hint) -> None:
        try:
            signature = inspect.signature(target)
        except (TypeError, ValueError):
            return  # a C callable: it is checked when called
        try:
            signature.bind(*names)
        except TypeError as e:
            raise _fail(self.id, field, f"{e}; {hint}") from None

    def _validate_order(self) -> None:
        if isinstance(self.order, bool) or not isinstance(self.order, int) or self.order < 1:
            raise _fail(self.id, "order", f"must be an integer >= 1, got {self.order!r}")

    def _validate_wrt(self) -> tuple[str, ...]:
        point = self.points[0]
        dtypes = dict(zip(point.names, (v.dtype for v in point.values)))
        if self.wrt is None:
            wrt = tuple(n for n in point.names if _is_differentiable(dtypes[n]))
        else:
            wrt = (self.wrt,) if isinstance(self.wrt, str) else tuple(self.wrt)
        if not wrt and not self.wrt_variables:
            raise _fail(self.id, "wrt",
                        "nothing to differentiate: no floating or complex argument; name "
                                        "arguments in wrt, or set wrt_variables with a builder")
        for name in wrt:
            if name not in dtypes:
                raise _fail(self.id, "wrt",
                            f"{name!r} is not an argument; arguments: {', '.join(point.names)}")
            for p in self.points:
                dtype = p.values[p.names.index(name)].dtype
                if not _is_differentiable(dtype):
                    raise _fail(
                        self.id, "wrt",
                        f"argument {name!r} is {dtype.name} at {p.label}; only floating and "
                        "complex arguments can be differentiated",
                    )
        return wrt

    def _validate_tolerance(self, field: str, tol: ToleranceOverride) -> None:
        if tol is None or isinstance(tol, Tol):
            return
        if not isinstance(tol, Mapping) or not all(isinstance(v, Tol) for v in tol.values()):
            raise _fail(self.id, field, "give a Tol or a mapping from dtype name to Tol")

    def _validate_oracles(self) -> None:
        names = self.points[0].names
        if self.reference is not None:
            if not callable(self.reference):
                raise _fail(self.id, "reference", f"{self.reference!r} is not callable")
            if self.build is not None:
                self._check_binds(self.reference, (), "reference",
                                  "the case has build, so reference is a builder too: it takes no "
                                  "arguments")
            else:
                self._check_binds(self.reference, names, "reference",
                                  f"it must accept the point argument(s) {', '.join(names)} "
                                  "positionally")
        if self.analytic is not None:
            if not callable(self.analytic):
                raise _fail(self.id, "analytic", f"{self.analytic!r} is not callable")
            self._check_binds(self.analytic, names, "analytic",
                              f"it must accept the point argument(s) {', '.join(names)} as NumPy "
                              "values")
        labels = {p.label for p in self.points}
        for field, table, known, what in (("kinks", self.kinks, labels | {"*"},
                                           "point label or '*'"),
                                          ("skip_modes", self.skip_modes,
                                           set(mode_names.KNOWN_MODES), "mode")):
            if not isinstance(table, Mapping):
                raise _fail(self.id, field, f"give a mapping from {what} to the reason")
            for key, reason in table.items():
                if key not in known:
                    raise _fail(self.id, field,
                                f"{key!r} is not a {what}; known: {', '.join(sorted(known))}")
                if not isinstance(reason, str) or not reason.strip():
                    raise _fail(self.id, field, f"{key!r} needs a reason: say why")
        object.__setattr__(self, "kinks", dict(self.kinks))
        object.__setattr__(self, "skip_modes", dict(self.skip_modes))
        if (not isinstance(self.notes, Mapping)
            or not all(isinstance(v, str) for v in self.notes.values())):
            raise _fail(self.id, "notes", "give a mapping from point label to a line of text")
        object.__setattr__(self, "notes", {k: v for k, v in self.notes.items() if k in labels})
        object.__setattr__(self, "drawn", tuple(label for label in self.drawn if label in labels))

    def _validate_symmetric(self) -> tuple[str, ...]:
        names = (self.symmetric,) if isinstance(self.symmetric, str) else tuple(self.symmetric)
        for name in names:
            if name not in self.wrt:
                raise _fail(self.id, "symmetric",
                            f"{name!r} is not a differentiated argument; differentiated: "
                                                  f"{', '.join(self.wrt) or 'none'}")
            for p in self.points:
                shape = p.values[p.names.index(name)].shape
                if len(shape) < 2 or shape[-1] != shape[-2]:
                    raise _fail(self.id, "symmetric",
                                f"argument {name!r} has shape {list(shape)} at {p.label}; a "
                                                      "symmetric argument is square in its last "
                                                      "two axes")
        return names

    def _validate_domains(self) -> None:
        if not isinstance(self.domains, Mapping):
            raise _fail(self.id, "domains", "give a mapping from argument name to Domain")
        point = self.points[0]
        for name, domain in self.domains.items():
            field = f"domains[{name!r}]"
            if name not in point.names:
                raise _fail(self.id, field,
                            f"{name!r} is not an argument; arguments: {', '.join(point.names)}")
            if not isinstance(domain, Domain):
                raise _fail(self.id, field, f"{domain!r} is not a Domain")
            problem = domain.problem()
            if problem is None and domain.shape is None and domain.symmetric:
                shape = point.values[point.names.index(name)].shape
                if len(shape) < 2 or shape[-1] != shape[-2]:
                    problem = (
                        f"the argument's shape {list(shape)} is not square, as a symmetric"
                        " argument is"
                    )
            if problem is not None:
                raise _fail(self.id, field, f"{problem}; fix the Domain")
        object.__setattr__(self, "domains", dict(self.domains))

    def _validate_expectations(self) -> None:
        for i, e in enumerate(self.expectations):
            field = f"expectations[{i}]"
            if not isinstance(e, Expectation):
                raise _fail(self.id, field, f"{e!r} is not an Expectation")
            if not e.reason or not e.reason.strip():
                raise _fail(self.id, field,
                            "an expectation needs a reason: say why TensorFlow behaves so")
            if not e.modes:
                raise _fail(self.id, field, "name the modes that deviate")
            for mode in e.modes:
                if mode not in mode_names.KNOWN_MODES and mode not in oracle_names.ROWS:
                    raise _fail(self.id, field,
                                f"unknown mode {mode!r}; known modes: "
                                f"{', '.join(mode_names.KNOWN_MODES)}; oracles: "
                                f"{', '.join(oracle_names.ROWS)}")
            if e.outcome not in _OUTCOMES and not _EXCEPTION_NAME.match(e.outcome or ""):
                raise _fail(self.id, field,
                            f"outcome {e.outcome!r} is neither an exception class name nor "
                            "VALUES_DIFFER, BAD_GRADIENT, GRADIENT_UNUSED or SURROGATE")
            oracles = [m for m in e.modes if m in oracle_names.ROWS]
            if not self._is_surrogate(e, field) and oracles and (
                    e.outcome != VALUES_DIFFER or len(oracles) != len(e.modes)):
                raise _fail(self.id, field,
                            "an expectation on an oracle says the agreed values differ from it: "
                                            "give only oracles and outcome VALUES_DIFFER")
            if e.orders and e.outcome != VALUES_DIFFER:
                raise _fail(self.id, field,
                            "orders narrows VALUES_DIFFER; leave it out for other outcomes")
            for order in e.orders:
                if (isinstance(order, bool) or not isinstance(order, int)
                    or not 0 <= order <= self.order):
                    raise _fail(self.id, field,
                                f"order {order!r} is not between 0 and the case's order "
                                f"{self.order}")
            for oracle in oracles:
                given_by = oracle_names.ROWS[oracle].case_field
                if given_by and getattr(self, given_by) is None:
                    raise _fail(self.id, field,
                                f"the case has no {oracle} oracle; give Case({given_by}=...)")
            if e.outcome == VALUES_DIFFER and mode_names.REFERENCE_MODE in e.modes:
                raise _fail(self.id, field,
                            f"values are compared with {mode_names.REFERENCE_MODE!r}, so it cannot "
                            "differ from itself; name the other modes")
            labels = {p.label for p in self.points}
            for label in e.points:
                if label not in labels:
                    raise _fail(self.id, field,
                                f"no point labelled {label!r}; points: {', '.join(sorted(labels))}")
            if e.tf_versions is not None:
                self._parse_versions(field, e.tf_versions)

    def _is_surrogate(self, e: Expectation, field: str) -> bool:
        """Whether `e` declares a surrogate (checked: on the numeric oracle, and an intended one
        named as module:function only there)."""
        if e.intended is not None and (e.outcome != SURROGATE or not isinstance(e.intended, str)
                                       or not _INTENDED.match(e.intended)):
            raise _fail(self.id, field,
                        "intended names a SURROGATE's intended surrogate as 'module:function'")
        if e.outcome != SURROGATE:
            return False
        if any(m not in (oracle_names.NUMERIC, oracle_names.UPSTREAM) for m in e.modes):
            raise _fail(self.id, field,
                        "SURROGATE is said of the numeric oracle (and the upstream one beside "
                        "it): give modes=('numeric',)")
        return True

    def _parse_versions(self, field: str, text: str) -> VersionRange:
        try:
            return parse_range(text)
        except ValueError as e:
            raise _fail(self.id, field, str(e)) from None

    # -- derived views -------------------------------------------------------------------

    @property
    def wrt_indices(self) -> tuple[int, ...]:
        names = self.points[0].names
        return tuple(names.index(n) for n in self.wrt)

    def runs_on(self, tf_version: str) -> bool:
        return self.tf_versions is None or parse_range(self.tf_versions).contains(tf_version)
