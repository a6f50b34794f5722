"""End to end: small PyTorch training scripts run unchanged on tapegrad, and agree with PyTorch.

Each script below is written as a PyTorch user writes it; the only difference is that the module
is a parameter (`torch`), so the same function runs with `import tapegrad` and with real torch.
The optional arguments (`init`, `sampler`) only make the two runs comparable: the first takes the
initial weights from the other run (tapegrad's and PyTorch's random streams differ), the second
fixes the order in which the DataLoader visits the examples.

Tolerances of the parity checks (float32 throughout).  The two libraries compute the same
operations, but sums and matrix products are reduced in different orders (numpy's pairwise sums
and BLAS vs PyTorch's vectorised kernels and oneDNN/MKL), and numpy's float32 sin differs from
PyTorch's by an ulp here and there.  Each step therefore differs by a few float32 ulps (relative
~1e-7) and the difference is carried through training.  Gradient descent contracts perturbations
along the well-determined directions and carries them along the flat ones at most additively, so
after N steps the relative difference is bounded by about N * 1e-7: 2e-4 for the 2,000 steps of
the polynomial fit, less for the shorter runs.  We assert relative 1e-4 for the nn runs (a few
hundred steps; observed < 1e-6) and 1e-3 for the polynomial fit (observed < 1e-6), and identical
accuracies (no held-out example sits within the drift of a decision boundary).
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import tapegrad
from tapegrad import demo


@pytest.fixture
def torch(torch):
    """conftest's oracle, single-threaded: on these tiny workloads a second thread only adds
    contention (10x slower on a busy 2-core machine)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield torch
    torch.set_num_threads(threads)


# -------------------------------------------------------------------------------------------------
# (a) The PyTorch tutorial's polynomial fit with raw tensors and manual SGD updates.
# -------------------------------------------------------------------------------------------------

def fit_polynomial(torch, init=None, steps=2000, learning_rate=1e-6):
    """Fit y = sin(x) with a + b x + c x^2 + d x^3 (pytorch.org's "Tensors and autograd")."""
    dtype = torch.float
    x = torch.linspace(-math.pi, math.pi, 2000, dtype=dtype)
    y = torch.sin(x)

    if init is None:
        a = torch.randn((), dtype=dtype, requires_grad=True)
        b = torch.randn((), dtype=dtype, requires_grad=True)
        c = torch.randn((), dtype=dtype, requires_grad=True)
        d = torch.randn((), dtype=dtype, requires_grad=True)
    else:
        a, b, c, d = (torch.tensor(v, dtype=dtype, requires_grad=True) for v in init)
    start = [a.item(), b.item(), c.item(), d.item()]

    losses = []
    for t in range(steps):
        y_pred = a + b * x + c * x ** 2 + d * x ** 3
        loss = (y_pred - y).pow(2).sum()
        losses.append(loss.item())
        loss.backward()
        with torch.no_grad():
            a -= learning_rate * a.grad
            b -= learning_rate * b.grad
            c -= learning_rate * c.grad
            d -= learning_rate * d.grad
            a.grad = None
            b.grad = None
            c.grad = None
            d.grad = None
    coefficients = [a.item(), b.item(), c.item(), d.item()]
    print(f"Result: y = {coefficients[0]} + {coefficients[1]} x + {coefficients[2]} x^2 + "
          f"{coefficients[3]} x^3  (loss {losses[-1]:.4f})")
    return losses, start, coefficients


def _least_squares_cubic():
    x = np.linspace(-np.pi, np.pi, 2000)
    design = np.stack([np.ones_like(x), x, x ** 2, x ** 3], axis=1)
    coef, residual, _, _ = np.linalg.lstsq(design, np.sin(x), rcond=None)
    return coef, float(residual[0])


def test_polynomial_fit_converges():
    tapegrad.manual_seed(0)
    losses, start, coef = fit_polynomial(tapegrad)
    best_coef, best_loss = _least_squares_cubic()          # b ~ 0.857, d ~ -0.0933, loss 8.82
    assert losses[0] > 100 * losses[-1]                     # from a random start ...
    assert best_loss <= losses[-1] < best_loss + 1.0        # ... to near the least-squares fit
    np.testing.assert_allclose(coef[1], best_coef[1], atol=0.03)
    np.testing.assert_allclose(coef[3], best_coef[3], atol=0.005)
    assert all(l2 <= l1 * (1 + 1e-6) for l1, l2 in zip(losses[10:], losses[11:]))   # monotone


def test_polynomial_fit_matches_torch(torch):
    tapegrad.manual_seed(1)
    ours = fit_polynomial(tapegrad)
    theirs = fit_polynomial(torch, init=ours[1])
    assert theirs[1] == ours[1]                              # same float32 starting point
    np.testing.assert_allclose(ours[0][-1], theirs[0][-1], rtol=1e-3)
    np.testing.assert_allclose(ours[0][::100], theirs[0][::100], rtol=1e-3)
    np.testing.assert_allclose(ours[2], theirs[2], rtol=1e-3, atol=1e-5)


# -------------------------------------------------------------------------------------------------
# (b) An nn.Sequential regression trained with Adam and MSELoss.
# -------------------------------------------------------------------------------------------------

def train_regression(torch, x_np, y_np, init=None, steps=300):
    """Linear-Tanh-Linear on full batches; returns the step losses, the final (eval) loss and the
    initial weights as numpy arrays."""
    nn = torch.nn
    model = nn.Sequential(nn.Linear(x_np.shape[1], 32), nn.Tanh(), nn.Linear(32, 1))
    if init is not None:
        model.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in init.items()})
    initial = {k: v.numpy().copy() for k, v in model.state_dict().items()}

    x = torch.from_numpy(x_np)
    y = torch.from_numpy(y_np)
    loss_fn = nn.MSELoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for step in range(steps):
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())

    model.eval()
    with torch.no_grad():
        final = loss_fn(model(x), y).item()
    return losses, final, initial


def _regression_data(seed=0, n=256):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 3)).astype(np.float32)
    y = (np.sin(2 * x[:, :1]) + 0.5 * x[:, 1:2] * x[:, 2:3] - 0.3 * x[:, 2:3]
         + 0.05 * rng.standard_normal((n, 1))).astype(np.float32)
    return x, y


def test_regression_learns_the_function():
    x, y = _regression_data()
    tapegrad.manual_seed(0)
    losses, final, initial = train_regression(tapegrad, x, y)
    variance = float(y.var())                              # the loss of predicting the mean
    assert losses[0] > 0.5 * variance
    assert final < 0.05 * variance                         # explains > 95% of the variance
    assert losses[-1] < losses[0] / 10
    assert list(initial) == ["0.weight", "0.bias", "2.weight", "2.bias"]


def test_regression_matches_torch(torch):
    x, y = _regression_data(seed=1)
    tapegrad.manual_seed(1)
    ours = train_regression(tapegrad, x, y)
    theirs = train_regression(torch, x, y, init=ours[2])
    np.testing.assert_allclose(ours[0][0], theirs[0][0], rtol=1e-6)     # same start
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-4)
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-4)


# -------------------------------------------------------------------------------------------------
# (c) An MLP classifier on the bundled digits: TensorDataset, a shuffling DataLoader,
#     CrossEntropyLoss and SGD with momentum; reports the held-out accuracy.
# -------------------------------------------------------------------------------------------------

def train_classifier(torch, data, init=None, sampler=None, epochs=4, batch_size=32):
    """Returns per-epoch mean training losses, the final training loss, the held-out accuracy
    and the initial weights (numpy)."""
    nn = torch.nn
    DataLoader, TensorDataset = torch.utils.data.DataLoader, torch.utils.data.TensorDataset
    (x_train, y_train), (x_test, y_test) = data
    x_train, y_train = torch.from_numpy(x_train), torch.from_numpy(y_train)
    x_test, y_test = torch.from_numpy(x_test), torch.from_numpy(y_test)
    dataset = TensorDataset(x_train, y_train)
    if sampler is None:
        loader = DataLoader(dataset, batch_size=batch_size, shuffle=True)
    else:
        loader = DataLoader(dataset, batch_size=batch_size, sampler=sampler)

    model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
    if init is not None:
        model.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in init.items()})
    initial = {k: v.numpy().copy() for k, v in model.state_dict().items()}
    loss_fn = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

    epoch_losses = []
    for epoch in range(epochs):
        model.train()
        total, seen = 0.0, 0
        for xb, yb in loader:
            optimizer.zero_grad()
            loss = loss_fn(model(xb), yb)
            loss.backward()
            optimizer.step()
            total += loss.item() * len(xb)
            seen += len(xb)
        epoch_losses.append(total / seen)

    model.eval()
    with torch.no_grad():
        train_loss = loss_fn(model(x_train), y_train).item()
        predictions = model(x_test).argmax(dim=1)
        correct = (predictions == y_test).sum().item()
        accuracy = (predictions == y_test).float().mean().item()
    print(f"epoch losses {[round(v, 4) for v in epoch_losses]}; "
          f"test accuracy {100 * accuracy:.1f}% ({correct}/{len(y_test)})")
    return epoch_losses, train_loss, correct, accuracy, initial


class FixedOrders:
    """A sampler replaying given permutations, one per epoch, so that two libraries see the same
    batches (their shuffling streams differ)."""

    def __init__(self, orders) -> None:
        self.orders = orders
        self.epoch = 0

    def __iter__(self):
        order = self.orders[self.epoch % len(self.orders)]
        self.epoch += 1
        return iter(order.tolist())

    def __len__(self) -> int:
        return len(self.orders[0])


@pytest.fixture(scope="module")
def digits():
    x, y = demo.load_digits()
    return demo.split(x, y, test_fraction=0.2, seed=0)


def test_classifier_reaches_high_accuracy(digits):
    tapegrad.manual_seed(0)
    epoch_losses, train_loss, correct, accuracy, _ = train_classifier(tapegrad, digits)
    assert epoch_losses[0] < 2.0 and epoch_losses[-1] < 0.25      # chance: ln(10) = 2.30
    assert all(b < a for a, b in zip(epoch_losses, epoch_losses[1:]))
    assert train_loss < 0.25
    assert accuracy > 0.93                                         # chance: 0.10
    assert correct == round(accuracy * len(digits[1][1]))


def test_classifier_shuffles_each_epoch_repeatably(digits):
    runs = []
    for _ in range(2):
        tapegrad.manual_seed(3)
        runs.append(train_classifier(tapegrad, digits, epochs=2))
    assert runs[0][0] == runs[1][0] and runs[0][2] == runs[1][2]   # seeded: repeatable
    tapegrad.manual_seed(3)
    init = train_classifier(tapegrad, digits, epochs=0)[4]
    n = len(digits[0][0])
    in_order = train_classifier(tapegrad, digits, init=init, epochs=2,
                                sampler=FixedOrders([np.arange(n)]))
    assert in_order[0] != runs[0][0]                               # shuffle=True did shuffle


def test_classifier_matches_torch(torch, digits):
    n = len(digits[0][0])
    rng = np.random.default_rng(7)
    orders = [rng.permutation(n) for _ in range(4)]
    tapegrad.manual_seed(2)
    ours = train_classifier(tapegrad, digits, sampler=FixedOrders(orders))
    theirs = train_classifier(torch, digits, init=ours[4], sampler=FixedOrders(orders))
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-4)
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-4)
    assert ours[2] == theirs[2] and ours[3] == theirs[3]


def test_classifier_with_each_librarys_own_shuffling_reaches_the_same_level(torch, digits):
    tapegrad.manual_seed(4)
    ours = train_classifier(tapegrad, digits)
    torch.manual_seed(4)
    theirs = train_classifier(torch, digits, init=ours[4])
    assert ours[3] > 0.93 and theirs[3] > 0.93
    assert abs(ours[3] - theirs[3]) < 0.03
