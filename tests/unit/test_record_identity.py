"""Which function the user wrote, behind the one handed to tf.custom_gradient (no TensorFlow)."""

import functools

import numpy as np
import pytest

from harness.record import identity


def library_decorator(value_and_grad):
    """A library's own decorator: an inner function per decorated function, all of one code."""
    @functools.wraps(value_and_grad)
    def wrapper(*args):
        def inner(*xs):
            return value_and_grad(*xs)
        return inner
    return wrapper


def sine(x):
    return x


def cosine(x, y):
    return x


def make_power(p):
    def power(x):
        return x ** p
    return power


def test_a_library_decorator_s_inner_functions_are_told_apart_by_the_function_each_wraps():
    first, second = library_decorator(sine)(1.0), library_decorator(cosine)(1.0)
    assert first.__code__ is second.__code__  # what a recorder keyed by code would merge
    a, b = identity.identify(first), identity.identify(second)
    assert (a.qualname, b.qualname) == ("sine", "cosine") and a.key != b.key
    assert a.via == b.via == "closure" and a.user is sine and a.function is first
    assert a.line == sine.__code__.co_firstlineno and a.file == __file__
    again = library_decorator(sine)(2.0)  # a new inner function at every call, one user function
    assert identity.identify(again).key == a.key and identity.identify(again).function is again


def test_a_factory_s_closures_are_told_apart_by_what_they_captured_and_labelled_by_it():
    cube, square, cube_again = (identity.identify(make_power(p)) for p in (3.0, 2.0, 3.0))
    assert cube.qualname == square.qualname == "make_power.<locals>.power"
    assert cube.key != square.key and cube.key == cube_again.key
    assert identity.captured_label(cube.captured) == "p=3.0"


def test_a_closure_over_an_array_is_told_apart_by_its_values():
    a, b = (identity.identify(make_power(np.arange(3.0))),
            identity.identify(make_power(np.arange(3.0) + 1)))
    assert a.key != b.key and identity.captured_label(a.captured) == "p=[0.,1.,2.]"


def test_a_functools_wraps_wrapper_is_named_by_the_function_it_wraps_and_replayed_as_handed():
    @functools.wraps(sine)
    def wrapper(x):
        return sine(x)

    found = identity.identify(wrapper)
    assert found.qualname == "sine" and found.function is wrapper and found.via == "wraps"


@pytest.mark.parametrize("callable_, words", [
    (functools.partial(cosine, y=1.0), "a functools.partial of function cosine"),
    (len, "a builtin_function_or_method len, not a Python function"),
])
def test_what_the_recorder_cannot_follow_is_refused_naming_it(callable_, words):
    with pytest.raises(identity.Unhandled, match=words):
        identity.identify(callable_)


def test_tensorflow_s_and_keras_s_own_functions_are_internal():
    def inner(x):
        return x

    inner.__module__ = "tensorflow.python.ops.custom_gradient"
    assert identity.identify(inner).internal
    assert not identity.identify(sine).internal
    inner.__module__ = "tensorflow_probability.python.math.special"  # a library, not TensorFlow
    assert not identity.identify(inner).internal


def forward_and_backward(vjp_fwd, vjp_bwd):
    """A decorator built as TensorFlow Probability's: the inner function closes over a forward
    and a backward function of the user's module, and over neither of the user's names."""
    def finalize(f):
        def none_wrapper(*args):
            def f_wrapped(*xs):
                return vjp_fwd(*xs), vjp_bwd
            return identity.identify(f_wrapped)  # where custom_gradient would be handed it
        return none_wrapper
    return finalize


def _betainc_fwd(a, b, x):
    return x


def _betainc_bwd(aux, g):
    return g


_betainc_custom = forward_and_backward(_betainc_fwd, _betainc_bwd)(lambda a, b, x: x)


def betainc(a, b, x):
    """The user's public function, which calls the decorated one."""
    return _betainc_custom(a, b, x)


def _betaincinv_partials(a, b, x):
    """Another of the module's functions that calls the decorated one (as TensorFlow
    Probability's inverse's partials call betainc's)."""
    return _betainc_custom(a, b, x)


def test_a_decorator_over_a_forward_and_a_backward_is_named_by_the_name_it_was_bound_to():
    found = betainc(1.0, 2.0, 0.5)
    assert (found.qualname, found.via, found.module) == ("_betainc_custom", "closure", __name__)
    assert found.file == __file__ and found.user is None
    # Its forward's parameters name its arguments, where it is called with as many.
    assert found.names is _betainc_fwd and found.exact_names
    # Whichever of the module's functions calls it, it is one function under one name.
    again = _betaincinv_partials(1.0, 2.0, 0.5)
    assert (again.qualname, again.key) == ("_betainc_custom", found.key)


def test_a_decorated_function_bound_to_no_module_name_is_named_by_its_caller_and_forward():
    local = forward_and_backward(_betainc_fwd, _betainc_bwd)(lambda a, b, x: x)

    def caller(a, b, x):
        return local(a, b, x)

    found = caller(1.0, 2.0, 0.5)
    assert found.qualname == ("test_a_decorated_function_bound_to_no_module_name_is_named_by_its_"
                              "caller_and_forward")
    assert found.names is _betainc_fwd and found.exact_names


# Two functions on one line: same module, name, file and line, other code.
square, cube = (lambda x: x * x), (lambda x: x * x * x)
twin_a, twin_b = (lambda x: x + 1), (lambda x: x + 1)


def test_two_lambdas_on_one_line_are_two_functions():
    a, b = identity.identify(square), identity.identify(cube)
    assert (a.qualname, a.line) == (b.qualname, b.line) == ("<lambda>",
                                                            square.__code__.co_firstlineno)
    assert a.key != b.key
    # The same code at two places of one line is still two functions: the column tells them apart.
    assert identity.identify(twin_a).key != identity.identify(twin_b).key
    assert identity.identify(square).key == a.key  # and one function is one, however often seen


EXEC_SOURCE = "def gen(x):\n    return x * K\n"


def exec_made(k):
    scope = {"K": k}
    exec(EXEC_SOURCE, scope)
    return scope["gen"]


def test_functions_exec_made_over_other_globals_are_two_functions_labelled_by_those_globals():
    two, three, two_again = (identity.identify(exec_made(k)) for k in (2.0, 3.0, 2.0))
    assert two.key != three.key and two.key == two_again.key
    assert identity.captured_label(two.captured) == "K=2.0"
    assert identity.foreign_globals(sine) == {}  # a module's own function reads its module


def forward_backward_decorator(fwd, bwd):
    """A decorator whose per-call inner function closes over a forward and a backward pair, not
    over the decorated function; its wrapper carries functools.wraps."""
    def finalize(f):
        @functools.wraps(f)
        def f_wrapped(*args):
            def inner(*xs):
                return fwd(*xs), bwd
            return identity.identify(inner)  # where custom_gradient is handed it
        return f_wrapped
    return finalize


def _sin_fwd(x):
    return x


def _sin_bwd(dy, x):
    return dy


@forward_backward_decorator(_sin_fwd, _sin_bwd)
def bad_sin(x):
    return x


@forward_backward_decorator(_sin_fwd, _sin_bwd)
def bad_cos(x):
    return x


def test_a_wrapper_s_functools_wraps_names_the_decorated_function_over_a_forward_backward_pair():
    found = bad_sin(0.5)
    assert (found.qualname, found.user) == ("bad_sin", bad_sin.__wrapped__)
    # The same pair under another decorated function is another function, though the inner
    # functions' closures are the same objects.
    assert bad_cos(0.5).qualname == "bad_cos" and bad_sin(1.0).qualname == "bad_sin"
