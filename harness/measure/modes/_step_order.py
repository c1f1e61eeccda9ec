"""Whether a compiled train function still orders each read of a trained weight before its update.

TensorFlow's automatic control dependencies order every read of a resource variable in a
`tf.function` before a later write of it, so as traced, a grad_fn that reads a weight in the
backward pass reads it before the optimizer's update. Grappler rewrites the function before it
runs, and its dependency optimizer can take that order away: its transitive reduction drops the
control edge from a read to the update wherever a longer path joins them, and where that path
passes through a multi-input IdentityN (a custom gradient's forward makes one of all its outputs
and inputs, and the gradients of a step were seen to pass through one), the same pass then
bypasses the IdentityN, each output wired to its own input, which cuts the path. The read and
the update are then ordered by nothing but the executor's scheduling: the step differentiates
with the weight's old value in most runs and with its updated one in some.

`unordered_reads` runs Grappler on the traced function under this process's settings and names
each read that feeds a gradient and is left unordered with its weight's update. It does not apply
to a function XLA compiles: XLA orders a cluster's reads and writes itself as it compiles it.
"""

from __future__ import annotations

import collections
from typing import Iterable

from tensorflow.core.protobuf import config_pb2
from tensorflow.python.eager import context
from tensorflow.python.framework import auto_control_deps_utils
from tensorflow.python.grappler import tf_optimizer

from harness.measure.modes.shared import tf

__all__ = ["unordered_reads"]


def unordered_reads(concrete, variables: Iterable[tuple]) -> list[tuple[str, str, str]]:
    """(name, read op, update op) for each read of a weight in `variables` ((variable, name) pairs)
    that the traced function `concrete` orders before the weight's update, and Grappler's rewrite
    no longer does."""
    graph = concrete.graph
    handles = _captured_handles(graph, variables)
    if not handles:
        return []
    pairs = _reads_and_updates(graph, handles)
    if not pairs:
        return []
    ends = {n for _, read, update in pairs for n in (read, update)}
    reach = _reachability(_optimized(graph), ends)
    updates = {update for _, _, update in pairs}
    # A read that feeds no update (a forward value the gradients do not use) changes no gradient.
    return [(name, read, update) for name, read, update in pairs
            if read in reach and update in reach and reach[read] & updates
            and update not in reach[read] and read not in reach[update]]


def _captured_handles(graph, variables) -> dict:
    """The placeholder of each trained weight's handle (each replica's, under a strategy): name."""
    captured = {id(external): internal for external, internal in graph.captures}
    handles = {}
    for variable, name in variables:
        for part in getattr(variable, "values", None) or (variable,):
            handle = captured.get(id(getattr(part, "handle", None)))
            if handle is not None:
                handles[handle.ref()] = name
    return handles


def _reads_and_updates(graph, handles: dict) -> list[tuple[str, str, str]]:
    """Each (weight, read, update) pair of the traced graph in which the read comes first."""
    reads, updates = collections.defaultdict(list), collections.defaultdict(list)
    for op in graph.get_operations():
        if not any(t.dtype == tf.resource for t in op.inputs):
            continue  # reads and writes no variable
        read, written = auto_control_deps_utils.get_read_write_resource_inputs(op)
        for tensor in written:
            if tensor.ref() in handles:
                updates[tensor.ref()].append(op)
        for tensor in read:
            used = any(o.consumers() for o in op.outputs)
            if tensor.ref() in handles and tensor not in written and used:
                reads[tensor.ref()].append(op)
    pairs = []
    for key, ops in reads.items():
        for update in updates.get(key, ()):
            pairs.extend((handles[key], op.name, update.name)
                         for op in ops if op in update.control_inputs)
    return pairs


def _optimized(graph):
    """The function's graph as Grappler leaves it, under this process's settings."""
    meta = tf.compat.v1.train.export_meta_graph(graph_def=graph.as_graph_def(), graph=graph)
    fetch = meta.collection_def["train_op"].node_list.value
    fetch.extend(t.op.name for t in graph.outputs)
    fetch.extend(op.name for op in getattr(graph, "control_outputs", ()))
    config = config_pb2.ConfigProto()
    config.CopyFrom(context.context().config)
    return tf_optimizer.OptimizeGraph(config, meta, verbose=False)


def _reachability(graph_def, names: set) -> dict:
    """Each of `names` still in `graph_def`: the names it reaches by data or control edges."""
    successors = collections.defaultdict(set)
    for node in graph_def.node:
        for source in node.input:
            successors[source.lstrip("^").split(":")[0]].add(node.name)
    reach = {}
    for node in (n for n in graph_def.node if n.name in names):
        seen, stack = set(), [node.name]
        while stack:
            for following in successors[stack.pop()]:
                if following not in seen:
                    seen.add(following)
                    stack.append(following)
        reach[node.name] = seen
    return reach
