"""In the style of graykode/nlp-tutorial (Seq2Seq(Attention), Transformer(Greedy_decoder), BERT):
one-hot RNN encoder/decoder with dot attention scored position by position into a torch.zeros
buffer, the decoder outputs written into torch.empty rows; a tiny transformer with a padding mask
(seq.data.eq(0)), a subsequent mask from np.triu(...).byte(), torch.gt of their sum,
masked_fill_(mask, -1e9), a frozen sinusoid Embedding.from_pretrained table, Conv1d(kernel 1)
position-wise FFN and greedy decoding; then the losses NLP scripts write by hand: a masked NLL
-(log_softmax * mask).sum(), label smoothing through KLDivLoss with a zeroed padding row
(index_fill_ on torch.nonzero rows), and the gradients of the masked rows (printed zeros).
Weights from numpy; no dropout."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def fill(module, seed, scale=0.3):
    rng = np.random.RandomState(seed)
    with torch.no_grad():
        for name, p in module.named_parameters():
            if p.requires_grad:
                p.copy_(torch.from_numpy(rng.uniform(-scale, scale, tuple(p.shape)).astype(np.float32)))


# -- an RNN seq2seq with position-by-position attention --------------------------------------
sentences = ['ich mag kalten kaffee P', 'S i like cold coffee', 'i like cold coffee E']
word_list = sorted(set(" ".join(sentences).split()))
word_dict = {w: i for i, w in enumerate(word_list)}
number_dict = {i: w for i, w in enumerate(word_list)}
n_class, n_hidden = len(word_dict), 6


class Attn(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc_cell = nn.RNN(input_size=n_class, hidden_size=n_hidden)
        self.dec_cell = nn.RNN(input_size=n_class, hidden_size=n_hidden)
        self.attn = nn.Linear(n_hidden, n_hidden)
        self.out = nn.Linear(n_hidden * 2, n_class)

    def forward(self, enc_inputs, hidden, dec_inputs):
        enc_inputs, dec_inputs = enc_inputs.transpose(0, 1), dec_inputs.transpose(0, 1)
        enc_outputs, enc_hidden = self.enc_cell(enc_inputs, hidden)
        weights, hidden = [], enc_hidden
        n_step = len(dec_inputs)
        model = torch.empty([n_step, 1, n_class])
        for i in range(n_step):
            dec_output, hidden = self.dec_cell(dec_inputs[i].unsqueeze(0), hidden)
            scores = torch.zeros(len(enc_outputs))
            for j in range(len(enc_outputs)):
                scores[j] = torch.dot(dec_output.view(-1), self.attn(enc_outputs[j]).view(-1))
            attn_weights = F.softmax(scores, dim=0).view(1, 1, -1)
            weights.append(attn_weights.squeeze().data.numpy())
            context = attn_weights.bmm(enc_outputs.transpose(0, 1)).squeeze(1)
            model[i] = self.out(torch.cat((dec_output.squeeze(0), context), 1))
        return model.transpose(0, 1).squeeze(0), weights


def one_hot_batch(words):
    return torch.FloatTensor(np.array([np.eye(n_class)[[word_dict[n] for n in words.split()]]]))


enc, dec = one_hot_batch(sentences[0]), one_hot_batch(sentences[1])
target = torch.LongTensor([[word_dict[n] for n in sentences[2].split()]])
model = Attn()
fill(model, 0)
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
hidden = torch.zeros(1, 1, n_hidden)
for epoch in range(30):
    optimizer.zero_grad()
    output, _ = model(enc, hidden, dec)
    loss = nn.CrossEntropyLoss()(output, target.squeeze(0))
    if (epoch + 1) % 10 == 0:
        print('Epoch:', '%04d' % (epoch + 1), 'cost =', '{:.6f}'.format(loss))
    loss.backward()
    optimizer.step()
print(type(output.grad_fn).__name__, model.out.weight.grad.abs().sum())
predict, weights = model(enc, hidden, one_hot_batch('S P P P P'))
print([number_dict[n.item()] for n in predict.data.max(1, keepdim=True)[1].squeeze()])
print(np.round(np.array(weights), 4))

# -- a tiny transformer: masks, frozen sinusoid table, greedy decoding -----------------------
src_vocab = {'P': 0, 'ich': 1, 'mag': 2, 'kalten': 3, 'kaffee': 4}
tgt_vocab = {'P': 0, 'i': 1, 'like': 2, 'cold': 3, 'coffee': 4, 'S': 5, 'E': 6}
d_model, d_ff, d_k, n_heads = 8, 16, 4, 2


def sinusoid_table(n_position, d):
    angle = np.array([[pos / np.power(10000, 2 * (i // 2) / d) for i in range(d)] for pos in range(n_position)])
    angle[:, 0::2], angle[:, 1::2] = np.sin(angle[:, 0::2]), np.cos(angle[:, 1::2])
    return torch.FloatTensor(angle)


def pad_mask(seq_q, seq_k):
    b, len_q = seq_q.size()
    b, len_k = seq_k.size()
    return seq_k.data.eq(0).unsqueeze(1).expand(b, len_q, len_k)


def subsequent_mask(seq):
    return torch.from_numpy(np.triu(np.ones([seq.size(0), seq.size(1), seq.size(1)]), k=1)).byte()


class MHA(nn.Module):
    def __init__(self):
        super().__init__()
        self.W_Q, self.W_K, self.W_V = (nn.Linear(d_model, d_k * n_heads) for _ in range(3))
        self.linear, self.norm = nn.Linear(n_heads * d_k, d_model), nn.LayerNorm(d_model)

    def forward(self, Q, K, V, mask):
        b = Q.size(0)
        q = self.W_Q(Q).view(b, -1, n_heads, d_k).transpose(1, 2)
        k = self.W_K(K).view(b, -1, n_heads, d_k).transpose(1, 2)
        v = self.W_V(V).view(b, -1, n_heads, d_k).transpose(1, 2)
        mask = mask.unsqueeze(1).repeat(1, n_heads, 1, 1)
        scores = torch.matmul(q, k.transpose(-1, -2)) / np.sqrt(d_k)
        scores.masked_fill_(mask, -1e9)
        attn = nn.Softmax(dim=-1)(scores)
        ctx = torch.matmul(attn, v).transpose(1, 2).contiguous().view(b, -1, n_heads * d_k)
        return self.norm(self.linear(ctx) + Q), attn


class FFN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv1d(d_model, d_ff, kernel_size=1)
        self.conv2 = nn.Conv1d(d_ff, d_model, kernel_size=1)
        self.norm = nn.LayerNorm(d_model)

    def forward(self, x):
        out = self.conv2(nn.ReLU()(self.conv1(x.transpose(1, 2)))).transpose(1, 2)
        return self.norm(out + x)


class Tiny(nn.Module):
    def __init__(self):
        super().__init__()
        self.src_emb, self.tgt_emb = nn.Embedding(5, d_model), nn.Embedding(7, d_model)
        self.pos_emb = nn.Embedding.from_pretrained(sinusoid_table(6, d_model), freeze=True)
        self.enc_attn, self.enc_ffn = MHA(), FFN()
        self.self_attn, self.cross_attn, self.dec_ffn = MHA(), MHA(), FFN()
        self.projection = nn.Linear(d_model, 7, bias=False)

    def encode(self, enc_inputs):
        x = self.src_emb(enc_inputs) + self.pos_emb(torch.LongTensor([[1, 2, 3, 4, 0]]))
        x, attn = self.enc_attn(x, x, x, pad_mask(enc_inputs, enc_inputs))
        return self.enc_ffn(x), attn

    def decode(self, dec_inputs, enc_inputs, enc_outputs):
        y = self.tgt_emb(dec_inputs) + self.pos_emb(torch.LongTensor([[5, 1, 2, 3, 4]]))
        self_mask = torch.gt(pad_mask(dec_inputs, dec_inputs) + subsequent_mask(dec_inputs), 0)
        y, _ = self.self_attn(y, y, y, self_mask)
        y, cross = self.cross_attn(y, enc_outputs, enc_outputs, pad_mask(dec_inputs, enc_inputs))
        return self.dec_ffn(y), cross

    def forward(self, enc_inputs, dec_inputs):
        enc_outputs, _ = self.encode(enc_inputs)
        out, cross = self.decode(dec_inputs, enc_inputs, enc_outputs)
        logits = self.projection(out)
        return logits.view(-1, logits.size(-1)), cross


enc_inputs = torch.LongTensor([[1, 2, 3, 4, 0]])
dec_inputs = torch.LongTensor([[5, 1, 2, 3, 4]])
targets = torch.LongTensor([[1, 2, 3, 4, 6]])
tiny = Tiny()
fill(tiny, 1)
print(tiny.pos_emb.weight.requires_grad, subsequent_mask(dec_inputs).dtype,
      torch.gt(pad_mask(dec_inputs, dec_inputs) + subsequent_mask(dec_inputs), 0)[0].int())
opt = torch.optim.Adam(tiny.parameters(), lr=0.01)
for epoch in range(15):
    opt.zero_grad()
    logits, cross = tiny(enc_inputs, dec_inputs)
    loss = nn.CrossEntropyLoss()(logits, targets.contiguous().view(-1))
    if (epoch + 1) % 5 == 0:
        print('Epoch:', '%04d' % (epoch + 1), 'cost =', '{:.6f}'.format(loss))
    loss.backward()
    opt.step()
print(cross[0, 0].detach().numpy().round(4))

enc_outputs, _ = tiny.encode(enc_inputs)
greedy = torch.zeros(1, 5).type_as(enc_inputs.data)
next_symbol = tgt_vocab['S']
for i in range(5):
    greedy[0][i] = next_symbol
    out, _ = tiny.decode(greedy, enc_inputs, enc_outputs)
    next_symbol = tiny.projection(out).squeeze(0).max(dim=-1, keepdim=False)[1].data[i].item()
print(greedy)

# -- losses written by hand: masked NLL, label smoothing with a padding row ---------------------
logits = torch.tensor([[0.5, 1.0, -0.3, 2.0, 0.1], [1.5, -1.0, 0.3, 0.2, 0.0],
                       [0.0, 0.4, 0.8, -0.5, 1.1], [0.3, -0.3, 0.6, 0.9, -0.2]], requires_grad=True)
gold = torch.tensor([3, 0, 2, 1])
mask = (gold != 0).float().unsqueeze(1)
nll = -(F.log_softmax(logits, dim=-1) * F.one_hot(gold, 5) * mask).sum() / mask.sum()
nll.backward()
print(nll, logits.grad)

logits.grad = None
probs = logits.softmax(-1)
(-(probs.gather(1, gold.unsqueeze(1)) * mask)).sum().backward()
print(logits.grad)


class LabelSmoothing(nn.Module):
    def __init__(self, size, padding_idx, smoothing=0.0):
        super().__init__()
        self.criterion = nn.KLDivLoss(reduction='sum')
        self.padding_idx, self.size = padding_idx, size
        self.confidence, self.smoothing = 1.0 - smoothing, smoothing
        self.true_dist = None

    def forward(self, x, target):
        assert x.size(1) == self.size
        true_dist = x.data.clone()
        true_dist.fill_(self.smoothing / (self.size - 2))
        true_dist.scatter_(1, target.data.unsqueeze(1), self.confidence)
        true_dist[:, self.padding_idx] = 0
        rows = torch.nonzero(target.data == self.padding_idx)
        if rows.dim() > 0:
            true_dist.index_fill_(0, rows.squeeze(), 0.0)
        self.true_dist = true_dist
        return self.criterion(x, true_dist.requires_grad_(False))


logits.grad = None
crit = LabelSmoothing(5, 0, smoothing=0.2)
loss = crit(logits.log_softmax(-1), gold)
loss.backward()
print(loss, crit.true_dist)
print(logits.grad)
print(torch.nonzero(gold == 0), torch.nonzero(gold == 0).squeeze().shape)
print(torch.tensor([-0.0, -0.0, 1.0]).cumsum(0), torch.tensor([0.0, 2.0]).cumsum(0))
