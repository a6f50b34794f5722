"""patrickloeber/pytorchTutorial 07_linear_regression.py: nn.Linear fitted by SGD on MSE (sklearn data replaced by numpy-drawn data, equal numpy-drawn starting weights)."""
import torch
import torch.nn as nn
import numpy as np

# 0) Prepare data
_rs = np.random.RandomState(4)  # synthetic stand-in for sklearn's make_regression
X_numpy = _rs.randn(100, 1)
y_numpy = 40 * X_numpy[:, 0] + 20 * _rs.randn(100)

# cast to float Tensor
X = torch.from_numpy(X_numpy.astype(np.float32))
y = torch.from_numpy(y_numpy.astype(np.float32))
y = y.view(y.shape[0], 1)

n_samples, n_features = X.shape

# 1) Model
# Linear model f = wx + b
input_size = n_features
output_size = 1
model = nn.Linear(input_size, output_size)

# equal starting weights (numpy-drawn) so torch and tapegrad can be compared exactly
import numpy as _np
_rs_eq = _np.random.RandomState(0)
with torch.no_grad():
    for _p in model.parameters():
        _p.copy_(torch.from_numpy(_rs_eq.uniform(-0.1, 0.1, tuple(_p.shape)).astype(_np.float32)))

# 2) Loss and optimizer
learning_rate = 0.01

criterion = nn.MSELoss()
optimizer = torch.optim.SGD(model.parameters(), lr=learning_rate)  

# 3) Training loop
num_epochs = 100
for epoch in range(num_epochs):
    # Forward pass and loss
    y_predicted = model(X)
    loss = criterion(y_predicted, y)
    
    # Backward pass and update
    loss.backward()
    optimizer.step()

    # zero grad before new step
    optimizer.zero_grad()

    if (epoch+1) % 10 == 0:
        print(f'epoch: {epoch+1}, loss = {loss.item():.4f}')

# Plot
predicted = model(X).detach().numpy()

