"""NLP-from-scratch-style name classifier: letters to one-hot tensors, a hand-built RNN cell, NLLLoss."""
import random
import string

import torch
import torch.nn as nn

all_letters = string.ascii_letters + " .,;'"
n_letters = len(all_letters)
print(n_letters)


def letterToIndex(letter):
    return all_letters.find(letter)


def letterToTensor(letter):
    tensor = torch.zeros(1, n_letters)
    tensor[0][letterToIndex(letter)] = 1
    return tensor


def lineToTensor(line):
    tensor = torch.zeros(len(line), 1, n_letters)
    for li, letter in enumerate(line):
        tensor[li][0][letterToIndex(letter)] = 1
    return tensor


print(letterToTensor('J'))
print(lineToTensor('Jones').size())

# Two made-up 'languages' with disjoint alphabets.
random.seed(1)
category_lines = {
    'Vowelish': [''.join(random.choice('aeiouy') for _ in range(random.randint(3, 7))).title() for _ in range(40)],
    'Consonantish': [''.join(random.choice('bcdfgkmnprst') for _ in range(random.randint(3, 7))).title() for _ in range(40)],
}
all_categories = list(category_lines)
n_categories = len(all_categories)


class RNN(nn.Module):
    def __init__(self, input_size, hidden_size, output_size):
        super(RNN, self).__init__()
        self.hidden_size = hidden_size
        self.i2h = nn.Linear(input_size, hidden_size)
        self.h2h = nn.Linear(hidden_size, hidden_size)
        self.h2o = nn.Linear(hidden_size, output_size)
        self.softmax = nn.LogSoftmax(dim=1)

    def forward(self, input, hidden):
        hidden = torch.tanh(self.i2h(input) + self.h2h(hidden))
        output = self.h2o(hidden)
        output = self.softmax(output)
        return output, hidden

    def initHidden(self):
        return torch.zeros(1, self.hidden_size)


torch.manual_seed(0)
n_hidden = 32
rnn = RNN(n_letters, n_hidden, n_categories)
input = letterToTensor('A')
hidden = torch.zeros(1, n_hidden)
output, next_hidden = rnn(input, hidden)
print(output.shape, next_hidden.shape)


def categoryFromOutput(output):
    top_n, top_i = output.topk(1)
    category_i = top_i[0].item()
    return all_categories[category_i], category_i


def randomTrainingExample():
    category = random.choice(all_categories)
    line = random.choice(category_lines[category])
    category_tensor = torch.tensor([all_categories.index(category)], dtype=torch.long)
    line_tensor = lineToTensor(line)
    return category, line, category_tensor, line_tensor


criterion = nn.NLLLoss()
learning_rate = 0.005


def train(category_tensor, line_tensor):
    hidden = rnn.initHidden()
    rnn.zero_grad()
    for i in range(line_tensor.size()[0]):
        output, hidden = rnn(line_tensor[i], hidden)
    loss = criterion(output, category_tensor)
    loss.backward()
    for p in rnn.parameters():
        p.data.add_(p.grad.data, alpha=-learning_rate)
    return output, loss.item()


current_loss = 0
all_losses = []
for iter in range(1, 1201):
    category, line, category_tensor, line_tensor = randomTrainingExample()
    output, loss = train(category_tensor, line_tensor)
    current_loss += loss
    if iter % 300 == 0:
        all_losses.append(current_loss / 300)
        current_loss = 0
print('loss decreased:', all_losses[-1] < all_losses[0])


def evaluate(line_tensor):
    hidden = rnn.initHidden()
    for i in range(line_tensor.size()[0]):
        output, hidden = rnn(line_tensor[i], hidden)
    return output


with torch.no_grad():
    correct = sum(categoryFromOutput(evaluate(lineToTensor(line)))[0] == cat
                  for cat in all_categories for line in category_lines[cat])
print('training accuracy above 90%:', correct / 80 > 0.9)
with torch.no_grad():
    output = evaluate(lineToTensor('Aeiou'))
    topv, topi = output.topk(1, 1, True)
    print(topv.shape, topi.shape, topi.dtype, all_categories[topi[0][0].item()])
