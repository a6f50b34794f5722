"""deeplearningzerotoall/PyTorch lab-11_2_2_hihello.ipynb: a one-layer nn.RNN learns "hihell" -> "ihello"
with Adam and CrossEntropyLoss on one-hot inputs (FloatTensor/LongTensor from nested lists).

Adapted: torch.manual_seed(0) replaced by a deterministic numpy initialisation of the RNN's
parameters (copy_ under no_grad), so the printed values do not depend on the random stream;
100 steps -> 40 and the loss printed to 4 decimals.
"""
import numpy as np
import torch
import torch.optim as optim

char_set = ['h', 'i', 'e', 'l', 'o']
input_size = len(char_set)
hidden_size = len(char_set)
learning_rate = 0.1

x_data = [[0, 1, 0, 2, 3, 3]]
x_one_hot = [[[1, 0, 0, 0, 0],
              [0, 1, 0, 0, 0],
              [1, 0, 0, 0, 0],
              [0, 0, 1, 0, 0],
              [0, 0, 0, 1, 0],
              [0, 0, 0, 1, 0]]]
y_data = [[1, 0, 2, 3, 3, 4]]

X = torch.FloatTensor(x_one_hot)
Y = torch.LongTensor(y_data)

rnn = torch.nn.RNN(input_size, hidden_size, batch_first=True)  # batch_first: output is (B, S, F)
rng = np.random.RandomState(0)
with torch.no_grad():
    for name, p in rnn.named_parameters():
        p.copy_(torch.from_numpy(rng.uniform(-0.45, 0.45, size=tuple(p.shape)).astype(np.float32)))
        print(name, tuple(p.shape), p.dtype)

criterion = torch.nn.CrossEntropyLoss()
optimizer = optim.Adam(rnn.parameters(), learning_rate)

for i in range(40):
    optimizer.zero_grad()
    outputs, _status = rnn(X)
    loss = criterion(outputs.view(-1, input_size), Y.view(-1))
    loss.backward()
    optimizer.step()

    result = outputs.data.numpy().argmax(axis=2)
    result_str = ''.join([char_set[c] for c in np.squeeze(result)])
    print(i, "loss: %.4f" % loss.item(), "prediction: ", result, "true Y: ", y_data,
          "prediction str: ", result_str)

print(_status.shape, outputs.shape, outputs.grad_fn is not None)
print(rnn.weight_hh_l0.grad.abs().sum() > 0)
