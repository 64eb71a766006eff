"""The batched Newton logistic regression solves scikit-learn's LogisticRegression problems."""

import numpy as np
import pytest
import torch
from sklearn.linear_model import LogisticRegression

from qt_hard.evaluation.logreg import BatchedLogReg, predict_logreg


def _data(n, d, K, seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * rng.uniform(0.2, 3.0, size=d)  # unequal feature scales
    W = rng.normal(size=(d, K))
    y = (X @ W + 2.0 * rng.normal(size=(n, K))).argmax(axis=1)
    return X, y


def _sklearn_coef(X, y, C):
    clf = LogisticRegression(C=C, tol=1e-10, max_iter=5000).fit(X, y)
    return np.c_[clf.coef_, clf.intercept_].T  # (d + 1, H)


def _assert_each_column_is_sklearns(W, X, y, masks, C, K):
    """Problem ``f`` of a batched fit (``W[:, f, :]``, (d + 1, H)) is scikit-learn's optimum on the rows
    of ``masks[:, f]`` at ``C[f]``; with K > 2 the multinomial intercepts are compared up to their
    common shift (each side's intercepts minus their mean)."""
    shift = np.r_[np.zeros(X.shape[1]), 1.0][:, None]
    for f in range(len(C)):
        rows = masks[:, f] > 0
        ref = _sklearn_coef(X[rows], y[rows], C[f])
        mine = W[:, f, :]
        if K > 2:
            ref = ref - shift * ref[-1].mean()
            mine = mine - shift * mine[-1].mean()
        np.testing.assert_allclose(mine, ref, atol=1e-5)


@pytest.mark.parametrize("K", [2, 4])
def test_matches_sklearn_optimum_per_column(K):
    X, y = _data(300, 8, K, seed=K)
    rng = np.random.default_rng(0)
    masks = (rng.random((300, 3)) < 0.75).astype(float)
    C = np.array([0.25, 2.0, 8.0])
    model = BatchedLogReg(X, y, K)
    W = model.fit(masks, C).numpy()
    _assert_each_column_is_sklearns(W, X, y, masks, C, K)
    assert model.converged.all()


def test_warm_start_same_solution_fewer_iterations():
    X, y = _data(400, 10, 2, seed=3)
    masks = np.ones((400, 2))
    model = BatchedLogReg(X, y, 2)
    W1 = model.fit(masks, 1.0)
    W2 = model.fit(masks, 2.0)
    cold = model.n_newton
    W2w = model.fit(masks, 2.0, W0=W1)
    assert model.n_newton <= cold
    np.testing.assert_allclose(W2w.numpy(), W2.numpy(), atol=1e-6)


def test_predict_rules():
    X, y = _data(200, 5, 3, seed=1)
    model = BatchedLogReg(X, y, 3)
    W = model.fit(np.ones((200, 1)), 1.0)
    clf = LogisticRegression(C=1.0, tol=1e-12, max_iter=10000).fit(X, y)
    Xn = np.random.default_rng(5).normal(size=(50, 5))
    assert (predict_logreg(model, W, Xn)[:, 0] == clf.predict(Xn)).mean() >= 0.98


def test_bad_inputs_named():
    X, y = _data(50, 3, 2, seed=0)
    with pytest.raises(ValueError, match="labels must lie"):
        BatchedLogReg(X, y + 5, 2)
    with pytest.raises(ValueError, match="NaN"):
        BatchedLogReg(np.full((4, 2), np.nan), [0, 1, 0, 1], 2)
    m = BatchedLogReg(X, y, 2)
    with pytest.raises(ValueError, match="empty training set"):
        m.fit(np.zeros((50, 1)), 1.0)
    with pytest.raises(ValueError, match="positive"):
        m.fit(np.ones((50, 1)), -1.0)
    with pytest.raises(ValueError, match="train_mask"):
        m.fit(torch.ones(10, 1), 1.0)


def test_row_space_reduction_is_exact_when_wider_than_tall():
    """d > n: solving in the QR coordinates of the rows gives scikit-learn's optimum on the
    original features (weights mapped back with Q) and the same predictions on new rows."""
    X, y = _data(60, 150, 2, seed=7)
    rng = np.random.default_rng(1)
    masks = (rng.random((60, 2)) < 0.8).astype(float)
    model = BatchedLogReg(X, y, 2)
    assert model.Q is not None and model.p == 61  # 60 coordinates + intercept, not 151
    W = model.fit(masks, np.array([0.5, 4.0]))
    full = model.full_weights(W).numpy()
    for f, C in enumerate([0.5, 4.0]):
        rows = masks[:, f] > 0
        np.testing.assert_allclose(full[:, f, :], _sklearn_coef(X[rows], y[rows], C), atol=1e-5)
    plain = BatchedLogReg(X, y, 2, reduce=False)
    Xn = np.random.default_rng(2).normal(size=(40, 150))
    np.testing.assert_array_equal(
        predict_logreg(model, W, Xn), predict_logreg(plain, plain.fit(masks, np.array([0.5, 4.0])), Xn)
    )


def test_liblinear_objective_and_one_vs_rest_targets():
    """penalize_intercept + per-column targets = scikit-learn's liblinear one-vs-rest fits."""
    X, y = _data(250, 6, 3, seed=11)
    model = BatchedLogReg(X, np.zeros(250, dtype=int), 2, penalize_intercept=True)
    targets = np.stack([(y == k).astype(float) for k in range(3)], axis=1)
    W = model.fit(np.ones((250, 3)), 2.0, targets=targets, tol=1e-10).numpy()
    for k in range(3):
        clf = LogisticRegression(C=2.0, solver="liblinear", tol=1e-10, max_iter=10000)
        clf.fit(X, targets[:, k])
        ref = np.r_[clf.coef_[0], clf.intercept_]
        np.testing.assert_allclose(W[:, k, 0], ref, atol=1e-4)
    with pytest.raises(ValueError, match="0/1"):
        model.fit(np.ones((250, 1)), 1.0, targets=np.full((250, 1), 2.0))


def test_multinomial_from_a_start_off_the_sum_zero_subspace():
    """The multinomial solve works on class weights summing to zero: a warm start that does not
    (plus a shift of every intercept) still ends at scikit-learn's optimum, in few CG steps."""
    X, y = _data(300, 12, 6, seed=13)
    model = BatchedLogReg(X, y, 6)
    W0 = torch.as_tensor(np.random.default_rng(3).normal(size=(13, 1, 6)) + 2.0)
    W = model.fit(np.ones((300, 1)), 4.0, W0=W0, tol=1e-10).numpy()[:, 0, :]
    ref = _sklearn_coef(X, y, 4.0)
    ref[-1] -= ref[-1].mean()
    W[-1] -= W[-1].mean()
    np.testing.assert_allclose(W, ref, atol=1e-5)
    np.testing.assert_allclose(W[:-1].sum(axis=1), 0.0, atol=1e-8)
    # Without the projection the unpenalized intercepts' common shift is a zero-curvature
    # direction that the block-diagonal preconditioner cannot see (TREC: 7x the CG steps).
    assert model.n_cg <= 15 * model.n_newton


def test_few_column_products_equal_the_plain_ones():
    X, y = _data(70, 9, 2, seed=2)
    model = BatchedLogReg(X, y, 2)
    V = torch.randn(10, 3, dtype=torch.float64)
    B = torch.randn(70, 3, dtype=torch.float64)
    torch.testing.assert_close(model._times(V), model.X @ V)
    torch.testing.assert_close(model._t_times(B), model.X.T @ B)
    torch.testing.assert_close(model._times(V.float(), single=True), model.X32 @ V.float())


@pytest.mark.parametrize("K", [2, 3])
def test_cg_on_the_iterating_columns_reaches_sklearn(K):
    """CG multiplies only the columns of problems still iterating: problems of very different C
    finish at different times and leave the products, and every problem still reaches
    scikit-learn's optimum."""
    X, y = _data(400, 15, K, seed=20 + K)
    rng = np.random.default_rng(4)
    masks = (rng.random((400, 4)) < 0.8).astype(float)
    C = np.array([0.01, 0.3, 10.0, 100.0])
    model = BatchedLogReg(X, y, K)
    shapes = []
    hvp = model._hvp
    model._hvp = lambda V, *a: (shapes.append(V.shape[1]), hvp(V, *a))[1]
    W = model.fit(masks, C, tol=1e-8).numpy()
    assert model.converged.all()
    assert min(shapes) < 4  # finished problems left the products
    assert sum(shapes) < 4 * model.n_cg
    _assert_each_column_is_sklearns(W, X, y, masks, C, K)


def test_device_argument_and_its_errors(monkeypatch):
    X, y = _data(120, 6, 3, seed=5)
    model = BatchedLogReg(X, y, 3, device="cpu")
    assert model.device == torch.device("cpu") and model.X.device.type == "cpu"
    W = model.fit(np.ones((120, 2)), np.array([0.5, 2.0]))
    assert W.device.type == "cpu"  # returned on the CPU whatever the solver's device
    assert predict_logreg(model, W, X).shape == (120, 2)
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="no CUDA device"):
            BatchedLogReg(X, y, 3, device="cuda")
    # The module default (QT_HARD_EVAL_DEVICE / --device) is what a plain constructor takes.
    from qt_hard.evaluation import logreg

    monkeypatch.setattr(logreg, "DEFAULT_DEVICE", "cpu")
    assert BatchedLogReg(X, y, 3).device.type == "cpu"


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("K,liblinear", [(2, False), (4, False), (3, True)])
def test_cuda_solver_matches_cpu_solver(K, liblinear):
    """Same problems on the GPU and the CPU: the same optimum (to the solver's tolerance)."""
    X, y = _data(500, 40, K, seed=11)
    rng = np.random.default_rng(2)
    masks = (rng.random((500, 4)) < 0.8).astype(float)
    C = np.array([0.25, 1.0, 4.0, 16.0])
    kind = 2 if liblinear else K
    yy = (y == 0).astype(int) if liblinear else y
    sols = {}
    for dev in ("cpu", "cuda"):
        model = BatchedLogReg(X, yy, kind, penalize_intercept=liblinear, device=dev)
        sols[dev] = (model.fit(masks, C, tol=1e-10), model)
        assert sols[dev][1].converged.all()
    Wc, Wg = sols["cpu"][0].numpy(), sols["cuda"][0].numpy()
    if kind > 2:  # intercepts up to a common shift
        Wc[-1] -= Wc[-1].mean(axis=-1, keepdims=True)
        Wg[-1] -= Wg[-1].mean(axis=-1, keepdims=True)
    np.testing.assert_allclose(Wg, Wc, atol=1e-5)
    np.testing.assert_array_equal(
        predict_logreg(sols["cuda"][1], sols["cuda"][0], X), predict_logreg(sols["cpu"][1], sols["cpu"][0], X)
    )


def test_preconditioner_survives_a_gram_that_rounding_made_indefinite():
    """A Gram matrix whose float32 rounding broke positive definiteness beyond the ridge (seen on a
    GPU): the factorization grows the ridge instead of failing, and the solution is unchanged."""
    X, y = _data(200, 6, 2, seed=7)
    model = BatchedLogReg(X, y, 2)
    masks = np.ones((200, 1))
    W_ok = model.fit(masks, 1.0)
    bad = model._gram.clone()
    bad[0, 0, 0] = -50.0 * float(bad[0].diagonal().abs().max())  # a clearly negative eigenvalue
    one = torch.tensor([1.0], dtype=torch.float64)
    factors = model._preconditioners(one)
    assert torch.isfinite(factors[1.0]).all()
    model._gram = bad
    factors = model._preconditioners(one)
    assert torch.isfinite(factors[1.0]).all()
    model.refresh_cost = float("inf")  # keep the broken Gram for the whole fit
    W_bad = model.fit(masks, 1.0, W0=None)
    np.testing.assert_allclose(W_bad.numpy(), W_ok.numpy(), atol=1e-6)


@pytest.mark.parametrize("K", [2, 4])
def test_refresh_schedules_keep_the_solution(K):
    """The rent-or-buy rule (``refresh_cost``) decides only when the preconditioner's Gram is
    rebuilt: at every Newton step (0), never after the first (inf) and the default reach the same
    optimum along a warm-started C path; the default rebuilds no more often than every step, its
    decisions are deterministic (a flop model, not timings), and a negative cost is refused."""
    X, y = _data(300, 40, K, seed=50 + K)
    rng = np.random.default_rng(9)
    masks = (rng.random((300, 5)) < 0.8).astype(float)
    out = {}
    for cost in (0.0, 1.0, float("inf"), 1.0):
        model = BatchedLogReg(X, y, K, refresh_cost=cost)
        W, newton = None, 0
        for C in (0.1, 1.0, 10.0, 100.0):
            W = model.fit(masks, C, W0=W, tol=1e-8)
            assert model.converged.all()
            newton += model.n_newton
        out.setdefault(cost, []).append((W.numpy(), model.n_gram, newton))
    W0, grams0, newton0 = out[0.0][0]
    assert grams0 == newton0  # rebuilt at every Newton step
    assert out[float("inf")][0][1] == 1
    (Wd, gd, _), (Wd2, gd2, _) = out[1.0]
    assert 1 <= gd <= grams0 and gd == gd2
    np.testing.assert_array_equal(Wd, Wd2)
    for W, _, _ in (out[float("inf")][0], out[1.0][0]):
        np.testing.assert_allclose(W, W0, atol=1e-5)  # as the scikit-learn comparisons above
    with pytest.raises(ValueError, match="refresh_cost"):
        BatchedLogReg(X, y, K, refresh_cost=-1.0)
