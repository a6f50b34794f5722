"""Idioms of JarvisLee0423/Pytorch_Practice (Deep_Neural_Network_with_Pytorch: the GRU translators,
skip-gram, LSTM language model, text CNN and Simple_Neural_Network's TorchNN), written afresh:
device choice through an uncalled `torch.cuda.is_available` (always true, so `set_device(0)` runs
and fails as PyTorch's CPU build fails); a bidirectional GRU encoder over
pack_padded_sequence(enforce_sorted=False) whose last forward/backward hiddens are concatenated; a
decoder with per-step additive attention built by loops of cat/unsqueeze; skip-gram negative
sampling with bmm and logsigmoid; an LSTM language model whose hidden state is made with
`weight.new_zeros(..., requires_grad=True)` and detached between steps; a text CNN that pools an
embedding with avg_pool2d.  Weights come from numpy, so the output is deterministic.
"""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

rng = np.random.RandomState(0)


def fill_from_numpy(module, scale=0.3):
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.from_numpy(rng.uniform(-scale, scale, tuple(p.shape))))
    return module


def ints(high, shape):
    return torch.from_numpy(rng.randint(1, high, shape))


def grad_sum(module):
    return sum(float(p.grad.abs().sum()) for p in module.parameters() if p.grad is not None)


# --- device choice as TorchNN.py writes it: the function object itself is truthy
if torch.cuda.is_available:
    try:
        torch.cuda.set_device(0)
        device = "cuda"
    except AttributeError as e:
        print("set_device refused:", type(e).__name__, "_cuda_setDevice" in str(e))
        device = "cpu"
print("device:", device, "| set_device(-1) ->", torch.cuda.set_device(-1))
for call in ("set_device('cuda')", "set_device('cpu')", "reset_peak_memory_stats()", "memory_summary()"):
    try:
        eval("torch.cuda." + call)
    except Exception as e:  # the type is the fact printed
        print(call, "->", type(e).__name__)
print("memory_stats:", torch.cuda.memory_stats(), torch.cuda.memory_stats_as_nested_dict())


# --- GRU translator with attention
class Encoder(nn.Module):
    def __init__(self, vocab, hidden):
        super().__init__()
        self.embed = nn.Embedding(vocab, hidden)
        self.gru = nn.GRU(hidden, hidden, batch_first=True, bidirectional=True)

    def forward(self, tokens, lengths):
        packed = nn.utils.rnn.pack_padded_sequence(self.embed(tokens), lengths, batch_first=True,
                                                   enforce_sorted=False)
        packed_out, hidden = self.gru(packed)
        out, out_lengths = nn.utils.rnn.pad_packed_sequence(packed_out, batch_first=True)
        return out, out_lengths, torch.cat([hidden[-1], hidden[-2]], 1).unsqueeze(0)


class Attention(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.score = nn.Linear(4 * hidden, 2 * hidden)

    def forward(self, enc_out, dec_in):
        contexts = []
        for i in range(dec_in.shape[1]):
            pairs = torch.cat([torch.cat([dec_in[:, i, :].unsqueeze(1), enc_out[:, j, :].unsqueeze(1)], 2)
                               for j in range(enc_out.shape[1])], 1)
            weights = F.log_softmax(self.score(pairs.reshape(-1, pairs.shape[2])), dim=1)
            weights = weights.reshape(enc_out.shape[0], enc_out.shape[1], -1)
            contexts.append(torch.sum(weights * enc_out, dim=1).unsqueeze(1))
        return torch.cat(contexts, 1)


class Decoder(nn.Module):
    def __init__(self, vocab, hidden):
        super().__init__()
        self.embed = nn.Embedding(vocab, 2 * hidden)
        self.attention = Attention(hidden)
        self.gru = nn.GRU(2 * hidden, 2 * hidden, batch_first=True)
        self.out = nn.Linear(2 * hidden, vocab)

    def forward(self, tokens, lengths, enc_out, hidden):
        context = self.attention(enc_out, self.embed(tokens))
        packed = nn.utils.rnn.pack_padded_sequence(context, lengths, batch_first=True, enforce_sorted=False)
        packed_out, hidden = self.gru(packed, hidden)
        out, _ = nn.utils.rnn.pad_packed_sequence(packed_out, batch_first=True)
        return self.out(out.reshape(-1, out.shape[2])), hidden


encoder, decoder = fill_from_numpy(Encoder(20, 6)), fill_from_numpy(Decoder(25, 6))
src, src_len = ints(20, (3, 6)), torch.tensor([6, 4, 2])
tgt, tgt_len = ints(25, (3, 5)), [5, 3, 5]
params = list(encoder.parameters()) + list(decoder.parameters())
optimizer = torch.optim.Adam(params, lr=0.01)
for step in range(3):
    enc_out, out_len, hidden = encoder(src, src_len)
    logits, _ = decoder(tgt, tgt_len, enc_out, hidden)
    loss = F.cross_entropy(logits, tgt.reshape(-1))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"translator step {step}: loss {loss.item():.5f} grads {grad_sum(encoder) + grad_sum(decoder):.3f}")
print("encoder out", tuple(enc_out.shape), out_len, "| padded tail zero:", bool((enc_out[2, 2:] == 0).all()))
print("hidden", tuple(hidden.shape), "| logits", tuple(logits.shape), logits.dtype)


# --- skip-gram with negative sampling
class SkipGram(nn.Module):
    def __init__(self, vocab, dim):
        super().__init__()
        self.center = nn.Embedding(vocab, dim)
        self.context = nn.Embedding(vocab, dim)

    def forward(self, center, positive, negative):
        c = self.center(center).unsqueeze(2)
        pos = F.logsigmoid(torch.bmm(self.context(positive), c).squeeze()).sum(1)
        neg = F.logsigmoid(torch.bmm(self.context(negative), -c).squeeze()).sum(1)
        return -(pos + neg).mean()


skipgram = fill_from_numpy(SkipGram(30, 5))
optimizer = torch.optim.SGD(skipgram.parameters(), lr=0.5)
center, positive, negative = ints(30, (6,)), ints(30, (6, 4)), ints(30, (6, 12))
for step in range(3):
    loss = skipgram(center, positive, negative)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"skip-gram step {step}: loss {loss.item():.5f}")
print("untouched rows keep zero grad:", int((skipgram.center.weight.grad.abs().sum(1) == 0).sum()))


# --- LSTM language model with detached hidden state between batches
class LanguageModel(nn.Module):
    def __init__(self, vocab, emb, hidden):
        super().__init__()
        self.embed = nn.Embedding(vocab, emb)
        self.lstm = nn.LSTM(emb, hidden)
        self.out = nn.Linear(hidden, vocab)

    def forward(self, text, hidden):
        out, hidden = self.lstm(self.embed(text), hidden)
        return self.out(out.reshape(-1, out.shape[2])), hidden

    def init_hidden(self, batch, hidden):
        weight = next(self.parameters())
        return (weight.new_zeros((1, batch, hidden), requires_grad=True),
                weight.new_zeros((1, batch, hidden), requires_grad=True))


def detach_hidden(h):
    return h.detach() if isinstance(h, torch.Tensor) else tuple(detach_hidden(x) for x in h)


lm = fill_from_numpy(LanguageModel(30, 6, 7))
optimizer = torch.optim.Adam(lm.parameters(), lr=0.01)
hidden = lm.init_hidden(4, 7)
print("init hidden:", hidden[0].shape, hidden[0].dtype, hidden[0].requires_grad, hidden[0].is_leaf)
for step in range(3):
    text = ints(30, (5, 4))
    hidden = detach_hidden(hidden)
    logits, hidden = lm(text, hidden)
    loss = F.cross_entropy(logits, text.reshape(-1))
    optimizer.zero_grad()
    loss.backward()
    nn.utils.clip_grad_norm_(lm.parameters(), 1.0)
    optimizer.step()
    print(f"language model step {step}: loss {loss.item():.5f} ppl {torch.exp(loss).item():.3f}",
          hidden[0].requires_grad)


# --- text CNN: embedding pooled over time with avg_pool2d
class TextCNN(nn.Module):
    def __init__(self, vocab, emb, classes):
        super().__init__()
        self.embed = nn.Embedding(vocab, emb, padding_idx=0)
        self.conv = nn.Conv2d(1, 8, (3, emb))
        self.fc = nn.Linear(8, classes)

    def forward(self, x):                            # x: [time, batch]
        x = self.embed(x).permute(1, 0, 2).unsqueeze(1)
        x = F.relu(self.conv(x)).squeeze(3)
        x = F.avg_pool2d(x, (1, x.shape[2])).squeeze(2)
        return self.fc(x)


cnn = fill_from_numpy(TextCNN(40, 6, 2))
tokens = ints(40, (9, 4))
tokens[7:, 1] = 0
logits = cnn(tokens)
loss = F.binary_cross_entropy_with_logits(logits[:, 0], torch.tensor([1., 0., 1., 0.]))
loss.backward()
print("text cnn:", tuple(logits.shape), f"{loss.item():.5f}", f"{grad_sum(cnn):.5f}",
      "| padding row grad zero:", bool((cnn.embed.weight.grad[0] == 0).all()))
