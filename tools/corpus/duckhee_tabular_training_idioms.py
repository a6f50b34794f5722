"""duckhee/inflearn-pytorch-study chapter01-03 (Torch-Modeling-1.py, 01-TorchRegressionModel.py,
BinaryClassificationModel.py, MultiClassificationModel.py, MultiClassificationModel-MNIST.py):
the course's tabular recipe. numpy features scaled to [0, 1] go through
torch.tensor(data=..., dtype=...) into a TensorDataset/DataLoader; train() sums the batch losses
as tensors (`tr_loss += loss`, keeping each step's graph alive) and returns `.item()` of their
mean; evaluate() predicts under no_grad; numpy then reads tensors directly (np.where(pred > .5),
np.argmax(tensor, axis=1)) to fill a confusion matrix. Also the course's
`torch.set_printoptions(linewidth=np.inf)`, which fails in PyTorch with OverflowError.

Adapted: the boston/titanic/iris CSVs (pandas, sklearn) replaced by seeded numpy tables of the
same widths, MinMaxScaler and confusion_matrix written with numpy; parameters drawn from numpy;
no shuffling; epochs 20-100 -> 4; plots dropped.
"""
import numpy as np
import torch
from torch import nn
from torch.optim import Adam
from torch.utils.data import DataLoader, TensorDataset

rs = np.random.RandomState(20)


def init_from_numpy(model):
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.from_numpy(rs.uniform(-0.4, 0.4, tuple(p.shape)).astype(np.float32)))
    return model


def min_max_scale(train, val):
    low, span = train.min(0), train.max(0) - train.min(0)
    return (train - low) / span, (val - low) / span


def make_dataset(x_train, x_val, y_train, y_val, batch_size, y_dtype, column=False):
    x_train_tensor = torch.tensor(data=x_train, dtype=torch.float32)
    y_train_tensor = torch.tensor(data=y_train, dtype=y_dtype)
    x_val_tensor = torch.tensor(data=x_val, dtype=torch.float32)
    y_val_tensor = torch.tensor(data=y_val, dtype=y_dtype)
    if column:
        y_train_tensor, y_val_tensor = y_train_tensor.view(-1, 1), y_val_tensor.view(-1, 1)
    loader = DataLoader(TensorDataset(x_train_tensor, y_train_tensor), batch_size=batch_size)
    return loader, x_val_tensor, y_val_tensor


def train(data_loader, model, loss_fn, optimizer):
    num_batches = len(data_loader)
    tr_loss = 0
    model.train()
    for batch, (X, y) in enumerate(data_loader):
        pred = model(X)
        loss = loss_fn(pred, y)
        tr_loss += loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    tr_loss /= num_batches
    return tr_loss.item()


def evaluate(x_val_tensor, y_val_tensor, model, loss_fn):
    model.eval()
    with torch.no_grad():
        pred = model(x_val_tensor)
        eval_loss = loss_fn(pred, y_val_tensor).item()
    return eval_loss, pred


def confusion_matrix(y_true, y_pred, k):
    cm = np.zeros((k, k), dtype=np.int64)
    np.add.at(cm, (np.asarray(y_true).astype(int).ravel(), np.asarray(y_pred).astype(int).ravel()), 1)
    return cm


def fit(model, loader, x_val, y_val, loss_fn, lr, epochs=4):
    optimizer = Adam(model.parameters(), lr=lr)
    for t in range(epochs):
        tr_loss = train(loader, model, loss_fn, optimizer)
        val_loss, _ = evaluate(x_val, y_val, model, loss_fn)
        print(f"Epoch : {t + 1}, train loss : {tr_loss:.4f}, val loss : {val_loss:.4f}")


print("== regression (boston-like, 13 features) ==")
X = rs.rand(120, 13) * 10
y = X @ rs.randn(13) + 20 + rs.randn(120)
x_train, x_val = min_max_scale(X[:96], X[96:])
loader, x_val_ts, y_val_ts = make_dataset(x_train, x_val, y[:96], y[96:], 8, torch.float32, column=True)
for xb, yb in loader:
    print(f"Shape of x [rows, columns]: {xb.shape}")
    print(f"Shape of y: {yb.shape} {yb.dtype}")
    break
model = init_from_numpy(nn.Sequential(nn.Linear(xb.shape[1], 3), nn.ReLU(), nn.Linear(3, 1)))
print(model)
fit(model, loader, x_val_ts, y_val_ts, nn.MSELoss(), lr=0.1)
_, pred = evaluate(x_val_ts, y_val_ts, model, nn.MSELoss())
print("MAE :", round(float(np.abs(y_val_ts.numpy() - pred.numpy()).mean()), 3))

print("== binary (titanic-like: Sex dummy, Age, Fare) ==")
sex = (rs.rand(150) > 0.5).astype(float)
age, fare = rs.rand(150) * 60 + 1, rs.rand(150) * 100
survived = ((1 - sex) + fare / 100 + rs.randn(150) * 0.5 > 0.9).astype(np.int64)
X = np.column_stack([age, fare, sex])
x_train, x_val = min_max_scale(X[:110], X[110:])
loader, x_val_ts, y_val_ts = make_dataset(x_train, x_val, survived[:110], survived[110:], 16,
                                          torch.float32, column=True)
model = init_from_numpy(nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1), nn.Sigmoid()))
fit(model, loader, x_val_ts, y_val_ts, nn.BCELoss(), lr=0.05)
_, pred = evaluate(x_val_ts, y_val_ts, model, nn.BCELoss())
print("pred[:3]:", pred.numpy()[:3].round(4).ravel())
pred = np.where(pred > 0.5, 1, 0)
print("np.where on a tensor:", type(pred).__name__, pred.dtype, pred.shape)
print("confusion matrix :\n", confusion_matrix(y_val_ts.numpy(), pred, 2))
print("accuracy :", round(float((pred == y_val_ts.numpy()).mean()), 4))

print("== multi-class (iris-like, 3 species) ==")
labels = np.repeat(np.arange(3), 40)
X = rs.randn(120, 4) * 0.5 + labels[:, None] * np.array([0.9, -0.3, 1.8, 0.8]) + 4
order = rs.permutation(120)
X, labels = X[order], labels[order]
x_train, x_val = min_max_scale(X[:84], X[84:])
loader, x_val_ts, y_val_ts = make_dataset(x_train, x_val, labels[:84], labels[84:], 32, torch.long)
print(f"Shape of y: {next(iter(loader))[1].shape} {next(iter(loader))[1].dtype}")
model = init_from_numpy(nn.Sequential(nn.Linear(4, 3)))
fit(model, loader, x_val_ts, y_val_ts, nn.CrossEntropyLoss(), lr=0.1)
for name, param in model.named_parameters():
    if param.requires_grad:
        print(f"Parameter : {name}, shape : {tuple(param.data.shape)}")
_, pred = evaluate(x_val_ts, y_val_ts, model, nn.CrossEntropyLoss())
print(f"Predication 2D : {pred.numpy()[:2].round(4)}")
pred = nn.functional.softmax(pred, dim=1)
print(f"Predication Value : {pred[:2]}")
index = np.argmax(pred, axis=1)
print(f"np.argmax on a tensor : {type(index).__name__} {index[:5]}")
print(f"confusion matrix :\n{confusion_matrix(y_val_ts.numpy(), index, 3)}")

print("== the course's print option ==")
np.set_printoptions(linewidth=np.inf)
torch.set_printoptions(linewidth=np.inf)
try:
    print(torch.arange(6.).view(2, 3))
except OverflowError as e:
    print("OverflowError:", "infinity" in str(e))
torch.set_printoptions(linewidth=80)
print(torch.arange(6.).view(2, 3))
