"""A graph that called a custom gradient inside `release.released()` goes once nothing holds it,
with its registry entry; a graph something holds keeps its gradient, which TensorFlow still finds.

TensorFlow alone keeps every such graph for the life of the process (its gradient registry holds
the traced outputs: tensorflow/tensorflow#27492, #97697); the first test checks that too, so it
fails if TensorFlow stops doing it and this code is no longer needed.
"""

import gc
import weakref

import pytest

tf = pytest.importorskip("tensorflow")

from tensorflow.python.framework import ops  # noqa: E402

from harness.measure import release  # noqa: E402


@tf.custom_gradient
def _tripled_gradient(x):
    def grad(dy):  # on purpose not the derivative: whose gradient it is shows; and it holds x,
        return dy * tf.ones_like(x) * 3.0  # as a real one holds what it needs of the forward

    return x * 2.0, grad


def _custom_entries() -> set:
    return {name for name in ops._gradient_registry._registry if name.startswith("CustomGradient-")}


def _graph_with_gradient():
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [])
        y = _tripled_gradient(x)
    return graph, x, y


def _left_alive(build) -> tuple[bool, set]:
    before = _custom_entries()
    graph = build()
    ref = weakref.ref(graph)
    del graph
    gc.collect()
    return ref() is not None, _custom_entries() - before


def test_tensorflow_alone_keeps_the_graph_and_its_entry():
    alive, added = _left_alive(lambda: _graph_with_gradient()[0])
    assert alive and len(added) == 1


def test_inside_released_the_graph_goes_with_its_registry_entry():
    def build():
        with release.released():
            return _graph_with_gradient()[0]

    alive, added = _left_alive(build)
    assert not alive and added == set()


def test_a_kept_graph_keeps_its_gradient_after_leaving():
    with release.released():
        graph, x, y = _graph_with_gradient()
    gc.collect()
    with graph.as_default():  # the gradient asked for only now, from the registry
        [dx] = tf.compat.v1.gradients(y, x)
    with tf.compat.v1.Session(graph=graph) as session:
        assert session.run(dx, {x: 1.5}) == 3.0


def test_a_traced_function_kept_past_leaving_still_differentiates():
    with release.released():
        traced = tf.function(lambda x: _tripled_gradient(x))
        traced(tf.constant(1.0))
    gc.collect()
    x = tf.constant(1.0)
    with tf.GradientTape() as tape:  # the function's backward is built now, from its graph
        tape.watch(x)
        y = traced(x)
    assert float(tape.gradient(y, x)) == 3.0


def test_outside_released_an_entry_stays_as_tensorflow_made_it_even_after_nesting():
    with release.released():
        with release.released():
            held, _, _ = _graph_with_gradient()
        outer, _, _ = _graph_with_gradient()
    after, _, _ = _graph_with_gradient()
    assert [_held(g) for g in (held, outer, after)] == [True, True, False]


def _held(graph) -> bool:
    [name] = _custom_entries() & {op.get_attr("_gradient_op_type").decode()
                                  for op in graph.get_operations() if op.type == "IdentityN"}
    return getattr(ops._gradient_registry.lookup(name), "_harness_custom_gradients", False)


def test_a_kept_function_saves_and_loads_with_its_custom_gradient(tmp_path):
    # tf.saved_model.save traces each gradient function the registry has for the function's ops.
    with release.released():
        module = tf.Module()
        module.f = tf.function(lambda x: _tripled_gradient(x),
                               input_signature=[tf.TensorSpec([], tf.float32)])
        module.f(tf.constant(1.0))
    gc.collect()
    tf.saved_model.save(module, str(tmp_path / "saved"))
    loaded = tf.saved_model.load(str(tmp_path / "saved"))
    x = tf.constant(1.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = loaded.f(x)
    assert float(tape.gradient(y, x)) == 3.0
