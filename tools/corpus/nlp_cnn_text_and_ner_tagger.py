"""Two NLP teaching models: Shawn1993/cnn-text-classification-pytorch (model.py's CNN_Text with
Conv2d over (K, D) windows and max_pool1d over time; train.py's loop with the fc1 max-norm
constraint and its eval) and cs230-stanford/cs230-code-examples pytorch/nlp (model/net.py: an
Embedding-LSTM-Linear tagger with a masked NLL loss that indexes outputs[range(N), labels] and a
numpy accuracy metric; train.py's step).

Adapted: argparse/data files -> small synthetic batches built in the script; dropout 0 and every
parameter set from a seeded numpy stream, so printed values do not depend on torch's random stream.
"""
import types

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

rs = np.random.RandomState(0)


def numpy_init(model):
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.from_numpy(rs.uniform(-0.2, 0.2, tuple(p.shape)).astype(np.float32)))


class CNN_Text(nn.Module):

    def __init__(self, args):
        super(CNN_Text, self).__init__()
        self.args = args

        V = args.embed_num
        D = args.embed_dim
        C = args.class_num
        Ci = 1
        Co = args.kernel_num
        Ks = args.kernel_sizes

        self.embed = nn.Embedding(V, D, padding_idx=0)
        # Kim's paper: uniform[-0.25, 0.25] initialization for random embeddings
        nn.init.uniform_(self.embed.weight, -0.25, 0.25)
        self.embed.weight.data[0].fill_(0)  # padding stays zero

        self.convs = nn.ModuleList([nn.Conv2d(Ci, Co, (K, D)) for K in Ks])
        self.dropout = nn.Dropout(args.dropout)
        self.fc1 = nn.Linear(len(Ks) * Co, C)

        if self.args.static:
            self.embed.weight.requires_grad = False

    def forward(self, x):
        x = self.embed(x)  # (N, W, D)

        x = x.unsqueeze(1)  # (N, Ci, W, D)

        x = [F.relu(conv(x)).squeeze(3) for conv in self.convs]  # [(N, Co, W), ...]*len(Ks)

        x = [F.max_pool1d(i, i.size(2)).squeeze(2) for i in x]  # [(N, Co), ...]*len(Ks)

        x = torch.cat(x, 1)

        x = self.dropout(x)  # (N, len(Ks)*Co)
        logit = self.fc1(x)  # (N, C)
        return logit


args = types.SimpleNamespace(embed_num=20, embed_dim=8, class_num=2, kernel_num=4, kernel_sizes=[2, 3, 4],
                             dropout=0.0, static=False, lr=0.01, max_norm=0.5, cuda=False)
cnn = CNN_Text(args)
numpy_init(cnn)
with torch.no_grad():
    cnn.embed.weight.data[0].fill_(0)
feature = torch.from_numpy(rs.randint(1, 20, size=(12, 9))).long()
feature[:3, 6:] = 0
target = (feature[:, 0] > 10).long()
optimizer = torch.optim.Adam(cnn.parameters(), lr=args.lr)
cnn.train()
for step in range(1, 16):
    optimizer.zero_grad()
    logit = cnn(feature)
    loss = F.cross_entropy(logit, target)
    loss.backward()
    optimizer.step()
    with torch.no_grad():
        for name, param in cnn.named_parameters():
            if 'fc1.weight' in name:
                norms = param.norm(2, dim=-1, keepdim=True)
                desired = torch.clamp(norms, max=args.max_norm)
                param.mul_(desired / (norms + 1e-8))
    if step % 5 == 0:
        corrects = (torch.max(logit, 1)[1] == target).sum()
        accuracy = 100.0 * corrects / feature.size(0)
        print('Batch[{}] - loss: {:.6f}  acc: {:.4f}%({}/{})'.format(step, loss.item(), accuracy.item(),
                                                                      corrects.item(), feature.size(0)))
print('fc1 row norms <= max_norm:', bool((cnn.fc1.weight.norm(2, dim=-1) <= args.max_norm + 1e-6).all()))
cnn.eval()
with torch.no_grad():
    logit = cnn(feature)
    loss = F.cross_entropy(logit, target, reduction='sum')
    print('eval loss {:.6f} corrects {}'.format(loss.item() / 12, (torch.max(logit, 1)[1] == target).sum().item()))
    x = torch.tensor([[3, 7, 11, 2, 0, 0]], dtype=torch.long)
    _, predicted = torch.max(cnn(x), 1)
    print('predict', predicted.item())

cnn.embed.weight.requires_grad = False  # -static
print('static: trainable', sum(p.numel() for p in cnn.parameters() if p.requires_grad))


class Net(nn.Module):
    """
    This is the standard way to define your own network in PyTorch. You typically choose the components
    (e.g. LSTMs, linear layers etc.) of your network in the __init__ function. You then apply these layers
    on the input step-by-step in the forward function. You can use torch.nn.functional to apply functions
    such as F.relu, F.sigmoid, F.softmax. Be careful to ensure your dimensions are correct after each step.

    You are encouraged to have a look at the network in pytorch/vision/model/net.py to get a better sense of how
    you can go about defining your own network.

    The documentation for all the various components available to you is here: http://pytorch.org/docs/master/nn.html
    """

    def __init__(self, params):
        """
        We define an recurrent network that predicts the NER tags for each token in the sentence. The components
        required are:

        - an embedding layer: this layer maps each index in range(params.vocab_size) to a params.embedding_dim vector
        - lstm: applying the LSTM on the sequential input returns an output for each token in the sentence
        - fc: a fully connected layer that converts the LSTM output for each token to a distribution over NER tags

        Args:
            params: (Params) contains vocab_size, embedding_dim, lstm_hidden_dim
        """
        super(Net, self).__init__()

        # the embedding takes as input the vocab_size and the embedding_dim
        self.embedding = nn.Embedding(params.vocab_size, params.embedding_dim)

        # the LSTM takes as input the size of its input (embedding_dim), its hidden size
        # for more details on how to use it, check out the documentation
        self.lstm = nn.LSTM(params.embedding_dim,
                            params.lstm_hidden_dim, batch_first=True)

        # the fully connected layer transforms the output to give the final output layer
        self.fc = nn.Linear(params.lstm_hidden_dim, params.number_of_tags)

    def forward(self, s):
        """
        This function defines how we use the components of our network to operate on an input batch.

        Args:
            s: (Variable) contains a batch of sentences, of dimension batch_size x seq_len, where seq_len is
               the length of the longest sentence in the batch. For sentences shorter than seq_len, the remaining
               tokens are PADding tokens. Each row is a sentence with each element corresponding to the index of
               the token in the vocab.

        Returns:
            out: (Variable) dimension batch_size*seq_len x num_tags with the log probabilities of tokens for each token
                 of each sentence.

        Note: the dimensions after each step are provided
        """
        #                                -> batch_size x seq_len
        # apply the embedding layer that maps each token to its embedding
        # dim: batch_size x seq_len x embedding_dim
        s = self.embedding(s)

        # run the LSTM along the sentences of length seq_len
        # dim: batch_size x seq_len x lstm_hidden_dim
        s, _ = self.lstm(s)

        # make the Variable contiguous in memory (a PyTorch artefact)
        s = s.contiguous()

        # reshape the Variable so that each row contains one token
        # dim: batch_size*seq_len x lstm_hidden_dim
        s = s.view(-1, s.shape[2])

        # apply the fully connected layer and obtain the output (before softmax) for each token
        s = self.fc(s)                   # dim: batch_size*seq_len x num_tags

        # apply log softmax on each token's output (this is recommended over applying softmax
        # since it is numerically more stable)
        return F.log_softmax(s, dim=1)   # dim: batch_size*seq_len x num_tags


def loss_fn(outputs, labels):
    """
    Compute the cross entropy loss given outputs from the model and labels for all tokens. Exclude loss terms
    for PADding tokens.

    Args:
        outputs: (Variable) dimension batch_size*seq_len x num_tags - log softmax output of the model
        labels: (Variable) dimension batch_size x seq_len where each element is either a label in [0, 1, ... num_tag-1],
                or -1 in case it is a PADding token.

    Returns:
        loss: (Variable) cross entropy loss for all tokens in the batch

    Note: you may use a standard loss function from http://pytorch.org/docs/master/nn.html#loss-functions. This example
          demonstrates how you can easily define a custom loss function.
    """

    # reshape labels to give a flat vector of length batch_size*seq_len
    labels = labels.view(-1)

    # since PADding tokens have label -1, we can generate a mask to exclude the loss from those terms
    mask = (labels >= 0).float()

    # indexing with negative values is not supported. Since PADded tokens have label -1, we convert them to a positive
    # number. This does not affect training, since we ignore the PADded tokens with the mask.
    labels = labels % outputs.shape[1]

    num_tokens = int(torch.sum(mask))

    # compute cross entropy loss for all tokens (except PADding tokens), by multiplying with mask.
    return -torch.sum(outputs[range(outputs.shape[0]), labels]*mask)/num_tokens


def accuracy(outputs, labels):
    """
    Compute the accuracy, given the outputs and labels for all tokens. Exclude PADding terms.

    Args:
        outputs: (np.ndarray) dimension batch_size*seq_len x num_tags - log softmax output of the model
        labels: (np.ndarray) dimension batch_size x seq_len where each element is either a label in
                [0, 1, ... num_tag-1], or -1 in case it is a PADding token.

    Returns: (float) accuracy in [0,1]
    """

    # reshape labels to give a flat vector of length batch_size*seq_len
    labels = labels.ravel()

    # since PADding tokens have label -1, we can generate a mask to exclude the loss from those terms
    mask = (labels >= 0)

    # np.argmax gives us the class predicted for each token by the model
    outputs = np.argmax(outputs, axis=1)

    # compare outputs with labels and divide by number of tokens (excluding PADding tokens)
    return np.sum(outputs == labels)/float(np.sum(mask))


# maintain all metrics required in this dictionary- these are used in the training and evaluation loops
metrics = {
    'accuracy': accuracy,
    # could add more metrics such as accuracy for each token type
}


params = types.SimpleNamespace(vocab_size=15, embedding_dim=6, lstm_hidden_dim=7, number_of_tags=4)
model = Net(params)
numpy_init(model)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
sentences = torch.from_numpy(rs.randint(0, 14, size=(5, 8))).long()
labels = (sentences % 4).long()
labels[1, 5:] = -1
labels[3, 2:] = -1
sentences[labels == -1] = 14
for step in range(30):
    output_batch = model(sentences)
    loss = loss_fn(output_batch, labels)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if step % 10 == 0:
        output_np = output_batch.data.cpu().numpy()
        labels_np = labels.data.cpu().numpy()
        summary = {metric: metrics[metric](output_np, labels_np) for metric in metrics}
        summary['loss'] = loss.item()
        print(' ; '.join('{}: {:05.3f}'.format(k, v) for k, v in summary.items()))
print(output_batch.shape, model.embedding.weight.grad.shape)
