"""The numeric oracle's evaluations: a case's order-k sums at shifted sources, in eager mode."""

from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from harness import upstream
from harness.case import Case, Point
from harness.modes.shared import Steps, build_subject, is_target, tape_chains, tf
from harness.records import RunOptions, error_info
from harness.tolerance import NUMERIC_STEPS

__all__ = ["CaseRaised", "Evaluator", "NotWide"]


class NotWide(Exception):
    """The function computed in another dtype than float64: its differences would be noise."""


class CaseRaised(Exception):
    """The case's own code raised at a shifted point (or in a dtype it refuses)."""

    def __init__(self, error):
        super().__init__(str(error))
        self.info = error_info(error, "")


class Evaluator:
    """Sums of a case's order-k outputs at shifted sources, in eager mode: the plain
    sum, and the weighted chain's sum with the next order's upstream weights."""

    def __init__(self, case: Case, point: Point, wide: bool, weighted: bool):
        self.case = case
        self.wide = wide
        self.seed = upstream.seed(case.id, point.label) if weighted else None
        values = [upcast(v) if wide else v for v in point.values]
        self.args = values
        try:
            if wide:
                with tf.variable_creator_scope(upcast_variable):
                    self.subject = build_subject(case)
            else:
                self.subject = build_subject(case)
        except Exception as e:  # noqa: BLE001 - the case's builder
            raise CaseRaised(e) from e
        self.bases = [np.array(values[i]) for i in case.wrt_indices] + [v.numpy() for v in self.subject.variables]
        self.tables = None if self.seed is None else tf.constant(upstream.flat_tables(self.seed, case.order))
        self.weighted_error = ""  # what the weighted chain raised here, if it did
        self.bases_found: dict[int, tuple[float, Optional[float]]] = {}
        self.gradients_found: dict[int, tuple[list, Optional[list]]] = {}

    def dtype(self) -> str:
        if self.wide:
            return "float64"
        # The coarsest dtype among the sources sets the step.
        return max((b.dtype.name for b in self.bases), key=lambda n: NUMERIC_STEPS.get(n, 0.0))

    def base(self, order: int) -> tuple[float, Optional[float]]:
        """`total` at the unshifted point, computed once per order."""
        if order not in self.bases_found:
            self.bases_found[order] = self.total(order, [np.zeros(b.shape) for b in self.bases])
        return self.bases_found[order]

    def gradients(self, order: int) -> tuple[list, Optional[list]]:
        """The case's own order `order` gradients at the unshifted point, per source, in this
        evaluator's dtype (None: unconnected): the plain chain's and the weighted chain's (or None)."""
        if order not in self.gradients_found:
            xs = [tf.constant(x) for x in self.args]
            for slot, i in enumerate(self.case.wrt_indices):
                xs[i] = tf.constant(self.bases[slot])
            progress = Steps()
            try:
                orders, chain = tape_chains(self.subject, xs, order, RunOptions(upstream=self.tables is not None),
                                            progress, self.tables)
            except Exception as e:  # noqa: BLE001 - the case's own code
                raise CaseRaised(e) from e

            def arrays(grads):
                return [None if g is None else g.numpy().astype(np.float64) for g in grads]
            weighted = arrays(chain[order - 1]) if len(chain) >= order and progress.upstream_error is None else None
            self.gradients_found[order] = (arrays(orders[order]), weighted)
        return self.gradients_found[order]

    def total(self, order: int, shifts: Sequence[np.ndarray]) -> tuple[float, Optional[float]]:
        """(sum of the order `order` outputs, sum of the weighted chain's order `order`
        outputs times the order `order` + 1 weights, or None) with every source moved by its shift."""
        case = self.case
        xs = list(self.args)
        for slot, i in enumerate(case.wrt_indices):
            xs[i] = (self.bases[slot] + shifts[slot]).astype(self.bases[slot].dtype)
        variables = self.subject.variables
        offset = len(case.wrt_indices)
        progress = Steps()
        try:
            for j, v in enumerate(variables):
                v.assign((self.bases[offset + j] + shifts[offset + j]).astype(self.bases[offset + j].dtype))
            orders, chain = tape_chains(self.subject, [tf.constant(x) for x in xs], order,
                                        RunOptions(upstream=self.tables is not None), progress, self.tables)
        except Exception as e:  # noqa: BLE001 - the case's own code, at a shifted point
            raise CaseRaised(e) from e
        finally:
            for j, v in enumerate(variables):
                v.assign(self.bases[offset + j])
        targets = [t for t in orders[order] if is_target(t)]
        if self.wide and any(t.dtype != tf.float64 for t in targets):
            raise NotWide(", ".join(sorted({t.dtype.name for t in targets})))
        plain = float(sum(np.sum(t.numpy().astype(np.float64)) for t in targets))
        if self.tables is None or progress.upstream_error is not None:
            if progress.upstream_error is not None:
                info = error_info(*progress.upstream_error)
                self.weighted_error = f"{info.type} at {info.stage}: {info.first_line}"
            return plain, None
        below = [t for t in ([orders[0]] + chain)[order] if is_target(t)]
        weighted = float(sum(np.sum(t.numpy().astype(np.float64) * upstream.weights(self.seed, order + 1, i, t.shape))
                             for i, t in enumerate(below)))
        return plain, weighted


def upcast(value: np.ndarray) -> np.ndarray:
    value = np.asarray(value)
    return value.astype(np.float64) if value.dtype.kind == "f" or value.dtype.name == "bfloat16" else value


def upcast_variable(next_creator, **kwargs):
    """Creates a floating variable as float64, from the value the builder gave."""
    initial = kwargs.get("initial_value")
    value = initial() if callable(initial) else initial
    dtype = kwargs.get("dtype")
    if (tf.as_dtype(dtype) if dtype is not None else tf.convert_to_tensor(value).dtype).is_floating:
        kwargs.update(initial_value=tf.cast(value, tf.float64), dtype=tf.float64)
    return next_creator(**kwargs)
