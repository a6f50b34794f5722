"""A Korean beginner's series, one sample() per lesson: multivariable linear regression as an
nn.Module (F.mse_loss, SGD lr=1e-5), a custom Dataset of Python lists turned into FloatTensors in
__getitem__ and batched by a DataLoader, a binary classifier (nn.Sequential(Linear, Sigmoid),
F.binary_cross_entropy), softmax regression's cost written by hand (a one-hot target built with
scatter_), XOR learnt by a four-layer sigmoid MLP with nn.BCELoss (10001 -> 2001 epochs), a two-block CNN whose fc weight
is init.xavier_uniform_'d and whose average cost (a tensor) is printed with '{:>.9}'.format, a
many-to-many RNN that maps 'apple' to 'pple!' from np.eye one-hot rows (nn.RNN(5, 5, 5): the
third positional argument is num_layers, a five-layer RNN, as the lesson wrote it), and a word
RNN over an nn.Embedding whose loss is formatted with '{:.4f}'.

Source: omnipede/pytorch-tutorial, _1_linear_regression/_5_using_nn_class.py,
_2_data_proc/_2_custom_dataset.py, _3_logistic_regression/_3_using_nn_class.py,
_4_softmax_regression/_1_low_level_cost_function.py, _5_artificial_neural_network/_1_XOR_gate.py,
_6_convolutional_neural_network/_1_MNSIT_classification.py, _9_recurrent_neural_network/
_3_N_by_N_RNN.py and _4_N_by_N_RNN.py (main.py calls one topic's sample()).  Adapted: every
parameter drawn from numpy (the lessons do not seed), shuffle=False, fewer epochs and prints;
MNIST replaced by 60 numpy-drawn images (its test set: 20 uint8 images read through
.test_data/.test_labels as torchvision's old attributes); torch.randint's labels drawn with numpy;
the word vocabulary sorted (set order); the dataset's `from torch.utils.data.dataset import T_co`
(gone from PyTorch) dropped.
"""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.nn.init as init
import torch.optim as optim
from torch.utils.data import DataLoader, Dataset, TensorDataset

_rng = np.random.RandomState(0)


def np_init(module, scale=0.5):
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.from_numpy(_rng.uniform(-scale, scale, tuple(p.shape)).astype(np.float32)))
    return module


# ----------------------------------------------------------------------------- linear regression
class MultivariableLinearRegressionModel3By1(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(3, 1)

    def forward(self, x):
        return self.linear(x)


def linear_regression():
    x_train = torch.FloatTensor([[73, 80, 75], [93, 88, 93], [89, 91, 90], [96, 98, 100], [73, 66, 70]])
    y_train = torch.FloatTensor([[152], [185], [180], [196], [142]])
    model = np_init(MultivariableLinearRegressionModel3By1())
    optimizer = optim.SGD(model.parameters(), lr=1e-5)
    nb_epochs = 1000
    for epoch in range(nb_epochs + 1):
        prediction = model(x_train)
        cost = F.mse_loss(prediction, y_train)
        cost.backward()
        optimizer.step()
        optimizer.zero_grad()
        if epoch % 250 == 0:
            print('Epoch {:4d}/{} Cost: {:.6f}'.format(epoch, nb_epochs, cost.item()))
    print(model(torch.FloatTensor([[73, 80, 75]])))


# ----------------------------------------------------------------------------- custom dataset
class CustomDataset(Dataset):
    def __init__(self):
        self.x_data = [[73, 80, 75], [93, 88, 93], [89, 91, 90], [96, 98, 100], [73, 66, 70]]
        self.y_data = [[152], [185], [180], [196], [142]]

    def __len__(self):
        return len(self.x_data)

    def __getitem__(self, index):
        x = torch.FloatTensor(self.x_data[index])
        y = torch.FloatTensor(self.y_data[index])
        return x, y


def custom_dataset():
    dataset = CustomDataset()
    dataloader = DataLoader(dataset, batch_size=2, shuffle=False)
    model = np_init(torch.nn.Linear(3, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-5)
    nb_epochs = 3
    for epoch in range(nb_epochs + 1):
        for batch_idx, samples in enumerate(dataloader):
            x_train, y_train = samples
            prediction = model(x_train)
            cost = F.mse_loss(prediction, y_train)
            optimizer.zero_grad()
            cost.backward()
            optimizer.step()
            print('Epoch {:4d}/{} Batch {}/{} Cost: {:.6f}'.format(
                epoch, nb_epochs, batch_idx + 1, len(dataloader), cost.item()))
    print(x_train.shape, x_train.dtype, y_train)


# ----------------------------------------------------------------------------- logistic regression
class BinaryClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.model = nn.Sequential(nn.Linear(2, 1), nn.Sigmoid())

    def forward(self, x):
        return self.model(x)


def logistic_regression():
    x_train = torch.FloatTensor([[1, 2], [2, 3], [3, 1], [4, 3], [5, 3], [6, 2]])
    y_train = torch.FloatTensor([[0], [0], [0], [1], [1], [1]])
    model = np_init(BinaryClassifier())
    optimizer = torch.optim.SGD(model.parameters(), lr=1)
    total_epochs = 1000
    for epoch in range(total_epochs + 1):
        hypo = model(x_train)
        cost = F.binary_cross_entropy(hypo, y_train)
        optimizer.zero_grad()
        cost.backward()
        optimizer.step()
        if epoch % 200 == 0:
            prediction = hypo >= torch.FloatTensor([0.5])
            correct_prediction = prediction.float() == y_train
            accuracy = correct_prediction.sum().item() / len(correct_prediction)
            print('Epoch {:4d}/{} Cost: {:.6f} Accuracy {:2.2f}%'.format(
                epoch, total_epochs, cost.item(), accuracy * 100))


# ----------------------------------------------------------------------------- softmax, by hand
def softmax_cost():
    z = torch.from_numpy(_rng.randn(3, 5).astype(np.float32)).requires_grad_()
    hypothesis = F.softmax(z, dim=1)
    print(hypothesis)
    y = torch.from_numpy(_rng.randint(0, 5, 3)).long()
    y_one_hot = torch.zeros_like(hypothesis)
    y_one_hot.scatter_(1, y.unsqueeze(1), 1)
    print(y_one_hot)
    cost = (y_one_hot * -torch.log(hypothesis)).sum(dim=1).mean()
    print(cost, F.cross_entropy(z, y), (y_one_hot * -F.log_softmax(z, dim=1)).sum(dim=1).mean())


# ----------------------------------------------------------------------------- XOR
def xor_gate():
    X = torch.FloatTensor([[0, 0], [0, 1], [1, 0], [1, 1]])
    Y = torch.FloatTensor([[0], [1], [1], [0]])
    model = nn.Sequential(
        nn.Linear(2, 10, bias=True), nn.Sigmoid(),
        nn.Linear(10, 10, bias=True), nn.Sigmoid(),
        nn.Linear(10, 10, bias=True), nn.Sigmoid(),
        nn.Linear(10, 1, bias=True), nn.Sigmoid())
    criterion = nn.BCELoss()
    np_init(model, 1.0)
    optimizer = optim.SGD(model.parameters(), lr=1)
    for epoch in range(2001):
        hypo = model(X)
        cost = criterion(hypo, Y)
        cost.backward()
        optimizer.step()
        optimizer.zero_grad()
        if epoch in (0, 200, 400):
            print(epoch, cost.item())
    # (the cost falls from 0.6 to 0.005 between epochs 400 and 800, where one float rounding apart
    # grows to 1e-3 relative in either library: printed past it as the lesson's outcome)
    with torch.no_grad():
        hypo = model(X)
        print(cost.item() < 0.001, (hypo > 0.5).float().squeeze(), hypo.dtype)


# ----------------------------------------------------------------------------- CNN
class CNN(nn.Module):
    def __init__(self):
        super(CNN, self).__init__()
        self.layer1 = nn.Sequential(
            nn.Conv2d(1, 32, kernel_size=3, stride=1, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(kernel_size=2, stride=2))
        self.layer2 = nn.Sequential(
            nn.Conv2d(32, 64, kernel_size=3, stride=1, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(kernel_size=2, stride=2))
        self.fc = nn.Linear(7 * 7 * 64, 10, bias=True)
        init.xavier_uniform_(self.fc.weight)

    def forward(self, x):
        out = self.layer1(x)
        out = self.layer2(out)
        out = out.view(out.size(0), -1)
        return self.fc(out)


class MnistTestSet:
    """What the lesson reads of torchvision's MNIST test set: uint8 images and int64 labels."""
    test_data = torch.from_numpy(_rng.randint(0, 256, (20, 28, 28)).astype(np.uint8))
    test_labels = torch.from_numpy(_rng.randint(0, 10, 20))

    def __len__(self):
        return 20


def mnist_cnn():
    batch_size = 20
    mnist_train = TensorDataset(torch.from_numpy(_rng.rand(60, 1, 28, 28).astype(np.float32)),
                                torch.from_numpy(_rng.randint(0, 10, 60)))
    mnist_test = MnistTestSet()
    data_loader = DataLoader(dataset=mnist_train, batch_size=batch_size, shuffle=False, drop_last=True)
    total_batch = len(data_loader)
    print('batches : {}'.format(total_batch))
    model = np_init(CNN(), 0.05)        # (also over the fc weight xavier_uniform_ drew)
    criterian = torch.nn.CrossEntropyLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.001)
    training_epochs = 2
    for epoch in range(training_epochs):
        avg_cost = 0
        for X, Y in data_loader:
            hypo = model(X)
            cost = criterian(hypo, Y)
            cost.backward()
            optimizer.step()
            optimizer.zero_grad()
            avg_cost += cost / total_batch
        print('[Epoch: {:>4}] cost = {:>.9}'.format(epoch + 1, avg_cost))
    print(type(avg_cost).__name__, avg_cost.requires_grad, avg_cost.grad_fn is not None)
    with torch.no_grad():
        X_test = mnist_test.test_data.view(len(mnist_test), 1, 28, 28).float()
        Y_test = mnist_test.test_labels
        prediction = model(X_test)
        correct_prediction = torch.argmax(prediction, 1) == Y_test
        accuracy = correct_prediction.float().mean()
        print('Accuracy:', accuracy.item(), torch.argmax(prediction, 1))


# ----------------------------------------------------------------------------- RNNs
class CharNet(nn.Module):
    def __init__(self, input_size, hidden_size, output_size):
        super(CharNet, self).__init__()
        self.rnn = nn.RNN(input_size, hidden_size, output_size)
        self.fc = torch.nn.Linear(hidden_size, output_size, bias=True)

    def forward(self, x):
        x, _status = self.rnn(x)
        x = self.fc(x)
        return x


def char_rnn():
    input_str = 'apple'
    label_str = 'pple!'
    char_vocab = sorted(list(set(input_str + label_str)))
    vocab_size = len(char_vocab)
    input_size = vocab_size
    hidden_size = 5
    output_size = 5
    alpha = 0.1
    ctoi = dict((c, i) for i, c in enumerate(char_vocab))
    itoc = dict((i, c) for i, c in enumerate(char_vocab))
    x_data = [[ctoi[c] for c in input_str]]
    y_data = [[ctoi[c] for c in label_str]]
    x_one_hot = [np.eye(vocab_size)[x] for x in x_data]
    X = torch.FloatTensor(np.array(x_one_hot))
    Y = torch.LongTensor(y_data)
    net = np_init(CharNet(input_size, hidden_size, output_size))
    print(net.rnn.num_layers, X.shape, X.dtype)
    criterion = nn.CrossEntropyLoss()
    optimizer = optim.Adam(net.parameters(), alpha)
    for i in range(30):
        outputs = net(X)
        loss = criterion(outputs.view(-1, input_size), Y.view(-1))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        result = outputs.data.numpy().argmax(axis=2)
        result_str = ''.join([itoc[c] for c in np.squeeze(result)])
        if i % 5 == 4:
            print(i, "loss: ", round(loss.item(), 5), "prediction: ", result, "true Y: ", y_data,
                  "prediction str: ", result_str)


class WordNet(nn.Module):
    def __init__(self, vocab_size, input_size, hidden_size):
        super().__init__()
        self.embedding_layer = nn.Embedding(num_embeddings=vocab_size, embedding_dim=input_size)
        self.rnn_layer = nn.RNN(input_size, hidden_size, batch_first=True)
        self.linear = nn.Linear(hidden_size, vocab_size)

    def forward(self, x):
        output = self.embedding_layer(x)
        output, hidden = self.rnn_layer(output)
        output = self.linear(output)
        return output.view(-1, output.size(2))


def word_rnn():
    words = "Repeat is the best medicine for memory".split()
    vocab = sorted(set(words))
    wtoi = {tkn: i for i, tkn in enumerate(vocab, 1)}
    wtoi['<unk>'] = 0
    itow = {v: k for k, v in wtoi.items()}
    encoded = [wtoi[token] for token in words]
    input_seq, label_seq = encoded[:-1], encoded[1:]
    X = torch.LongTensor(input_seq).unsqueeze(0)
    Y = torch.LongTensor(label_seq).unsqueeze(0)
    vocab_size = len(wtoi)
    model = np_init(WordNet(vocab_size, 5, 20))
    loss_function = nn.CrossEntropyLoss()
    optimizer = optim.Adam(params=model.parameters())
    for epoch in range(201):
        output = model(X)
        loss = loss_function(output, Y.view(-1))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        if epoch % 40 == 0:
            print("[{:02d}/201] {:.4f} ".format(epoch + 1, loss))
            pred = output.softmax(-1).argmax(-1).tolist()
            decoded = [itow[p] for p in pred]
            print(" ".join(["Repeat"] + decoded))


for lesson in [linear_regression, custom_dataset, logistic_regression, softmax_cost, xor_gate,
               mnist_cnn, char_rnn, word_rnn]:
    print('==', lesson.__name__)
    lesson()
