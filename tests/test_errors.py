"""Bad input gets a typed, clear error naming the offending piece, and nothing else."""

import pytest
import sympy

import freeprob as fp
from freeprob import DomainError, ModelFileError, NotSelfAdjointError, ScalingError, ShapeError
from freeprob.expr.modelfile import parse_model


@pytest.fixture
def dims():
    return fp.dims("p n m")


def test_shape_mismatch_names_both_operands(dims):
    p, n, m = dims
    X = fp.gaussian("X", (p, n))
    Y = fp.gaussian("Y", (m, n))
    with pytest.raises(ShapeError) as err:
        X @ Y
    msg = str(err.value)
    assert "X" in msg and "Y" in msg and "(p, n)" in msg and "(m, n)" in msg
    with pytest.raises(ShapeError) as err:
        X + Y
    assert "(p, n)" in str(err.value) and "(m, n)" in str(err.value)


def test_monomial_not_order_one_is_named_with_its_power(dims):
    p, n, _ = dims
    X = fp.gaussian("X", (p, n))
    with pytest.raises(ScalingError) as err:
        fp.eigenvalue_law(X @ X.T, ratios={p: 1, n: 2})
    assert err.value.power == 1
    assert "X @ X.T" in str(err.value) and "N^(1)" in str(err.value)
    # a sum where one monomial is fine and another is not: the bad one is named
    W = fp.wigner("W", p)
    with pytest.raises(ScalingError) as err:
        fp.eigenvalue_law(X @ X.T / n + W, ratios={p: 1, n: 2})
    assert err.value.monomial == "W" and err.value.power == sympy.Rational(1, 2)
    # a vanishing term is refused too, never silently dropped
    with pytest.raises(ScalingError) as err:
        fp.eigenvalue_law(X @ X.T / n + W / n, ratios={p: 1, n: 2})
    assert "W" in err.value.monomial and err.value.power == sympy.Rational(-1, 2)


def test_non_symmetric_expression_for_eigenvalues(dims):
    p, n, _ = dims
    X = fp.gaussian("X", (p, n))
    Y = fp.gaussian("Y", (n, p))
    with pytest.raises(NotSelfAdjointError) as err:
        fp.eigenvalue_law(X @ Y / n, ratios={p: 1, n: 2})
    assert "squared-singular-value" in str(err.value)
    with pytest.raises(NotSelfAdjointError):
        fp.eigenvalue_law(X / sympy.sqrt(n), ratios={p: 1, n: 2})
    # symmetric in law is not enough: X Y^T + Y X^T is symmetric, X Y^T is not
    Z = fp.gaussian("Z", (p, n))
    fp.eigenvalue_law((X @ Z.T + Z @ X.T) / n, ratios={p: 1, n: 2})
    with pytest.raises(NotSelfAdjointError):
        fp.eigenvalue_law((X @ Z.T + 2 * Z @ X.T) / n, ratios={p: 1, n: 2})


def test_negative_ratio_and_variance(dims):
    p, n, _ = dims
    with pytest.raises(DomainError):
        fp.gaussian("X", (p, n), variance=-1)
    X = fp.gaussian("X", (p, n))
    with pytest.raises(DomainError) as err:
        fp.eigenvalue_law(X @ X.T / n, ratios={p: -1, n: 1})
    assert "p" in str(err.value)
    with pytest.raises(DomainError) as err:
        fp.eigenvalue_law(X @ X.T / n, ratios={p: 1})
    assert "n" in str(err.value)
    beta = sympy.Symbol("beta", real=True)
    Y = fp.gaussian("Y", (p, n), variance=beta)
    law = fp.eigenvalue_law(Y @ Y.T / n, ratios={p: 1, n: 1}, params={beta: -2})
    with pytest.raises(DomainError) as err:
        law.density(1.0)
    assert "variance of Y" in str(err.value)


def test_missing_parameter_value(dims):
    p, n, _ = dims
    beta = sympy.Symbol("beta", positive=True)
    X = fp.gaussian("X", (p, n))
    law = fp.eigenvalue_law(beta * X @ X.T / n, ratios={p: 1, n: 1})
    with pytest.raises(DomainError) as err:
        law.density(1.0)
    assert "beta" in str(err.value)


BASE = {
    "name": "m",
    "law": "eigenvalues",
    "expression": "X @ X.T / n",
    "dimensions": {"p": 0.5, "n": 1},
    "matrices": {"X": {"kind": "gaussian", "shape": ["p", "n"], "variance": "1"}},
}


def variant(**changes):
    import copy

    d = copy.deepcopy(BASE)
    for k, v in changes.items():
        d[k] = v
    return d


@pytest.mark.parametrize(
    "data, key",
    [
        (variant(expression="X @ Y.T / n"), "expression"),
        (variant(expression="X @ X.T / q"), "expression"),
        (variant(matrices={"X": {"kind": "gaussian", "shape": ["p", "k"]}}), "matrices.X.shape"),
        (variant(matrices={"X": {"kind": "unitary", "shape": ["p", "n"]}}), "matrices.X.kind"),
        (variant(matrices={"X": {"kind": "gaussian", "shape": ["p", "n"], "varience": "1"}}), "matrices.X.varience"),
        (variant(law="spectrum"), "law"),
        (variant(dimensions={"p": "abc", "n": 1}), "dimensions.p"),
        (variant(expression="__import__('os').system('true')"), "expression"),
        (variant(expression="X.shape"), "expression"),
        (variant(expression="X * X"), "expression"),
        ({k: v for k, v in BASE.items() if k != "matrices"}, "matrices"),
        (variant(extra=1), "extra"),
    ],
)
def test_malformed_model_file_names_file_and_key(data, key):
    with pytest.raises(ModelFileError) as err:
        parse_model(data, "models/broken.toml")
    msg = str(err.value)
    assert "models/broken.toml" in msg and f"[{key}]" in msg


def test_negative_ratio_in_file():
    with pytest.raises(DomainError) as err:
        parse_model(variant(dimensions={"p": -0.5, "n": 1}), "f.toml")
    assert "dimensions.p" in str(err.value)


def test_shape_error_in_file():
    data = variant(expression="X @ X / n")
    with pytest.raises(ShapeError) as err:
        parse_model(data, "f.toml")
    assert "f.toml" in str(err.value) and "(p, n)" in str(err.value)


def test_unreadable_file(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("name = \n")
    with pytest.raises(ModelFileError) as err:
        fp.load_model(bad)
    assert "bad.toml" in str(err.value)
    with pytest.raises(ModelFileError):
        fp.find_model("no-such-model")


def test_errors_share_one_base():
    for exc in (ShapeError, ScalingError, NotSelfAdjointError, DomainError, ModelFileError, fp.ConvergenceError, fp.RegimeError):
        assert issubclass(exc, fp.FreeProbError)


def test_convergence_error_instead_of_a_wrong_value():
    """At an atom the density does not exist; at a square-root edge it cannot be
    verified to many digits (the value is not stable under a precision increase).
    Both raise ConvergenceError with the point and the precision, never a number."""
    law = fp.law_of(fp.find_model("marchenko-pastur").with_values({"p": "2"}))
    with pytest.raises(fp.ConvergenceError) as err:
        law.density("0", dps=30)
    assert err.value.dps == 30 and err.value.point is not None and err.value.residual is not None
    sc = fp.law_of(fp.find_model("wigner-semicircle"))
    with pytest.raises(fp.ConvergenceError) as err:
        sc.density("2", dps=30)
    assert err.value.dps == 30
