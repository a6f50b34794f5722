"""spro/practical-pytorch seq2seq-translation-batched: the bidirectional GRU encoder over a packed
batch, Luong attention ('dot', 'general', 'concat': energies written element by element into a
zeros tensor, softmax without dim), the Luong decoder, masked_cross_entropy.py (sequence_mask with
torch.range), all verbatim but for device (USE_CUDA False, the loss's .cuda() dropped); the
notebook's own 2-d `hidden.dot` (an error in PyTorch >= 0.4) printed as caught, then the same
models run with 1-d score vectors; numpy-made batches and starting weights (deterministic)."""
import random
import warnings

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import optim
from torch.autograd import Variable
from torch.nn import functional

USE_CUDA = False
PAD_token, SOS_token, EOS_token = 0, 1, 2


def sequence_mask(sequence_length, max_len=None):
    if max_len is None:
        max_len = sequence_length.data.max()
    batch_size = sequence_length.size(0)
    seq_range = torch.range(0, max_len - 1).long()
    seq_range_expand = seq_range.unsqueeze(0).expand(batch_size, max_len)
    seq_range_expand = Variable(seq_range_expand)
    if sequence_length.is_cuda:
        seq_range_expand = seq_range_expand.cuda()
    seq_length_expand = (sequence_length.unsqueeze(1)
                         .expand_as(seq_range_expand))
    return seq_range_expand < seq_length_expand


def masked_cross_entropy(logits, target, length):
    length = Variable(torch.LongTensor(length))
    logits_flat = logits.view(-1, logits.size(-1))
    log_probs_flat = functional.log_softmax(logits_flat)
    target_flat = target.view(-1, 1)
    losses_flat = -torch.gather(log_probs_flat, dim=1, index=target_flat)
    losses = losses_flat.view(*target.size())
    mask = sequence_mask(sequence_length=length, max_len=target.size(1))
    losses = losses * mask.float()
    loss = losses.sum() / length.float().sum()
    return loss


class EncoderRNN(nn.Module):
    def __init__(self, input_size, hidden_size, n_layers=1, dropout=0.1):
        super(EncoderRNN, self).__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.n_layers = n_layers
        self.dropout = dropout
        self.embedding = nn.Embedding(input_size, hidden_size)
        self.gru = nn.GRU(hidden_size, hidden_size, n_layers, dropout=self.dropout, bidirectional=True)

    def forward(self, input_seqs, input_lengths, hidden=None):
        embedded = self.embedding(input_seqs)
        packed = torch.nn.utils.rnn.pack_padded_sequence(embedded, input_lengths)
        outputs, hidden = self.gru(packed, hidden)
        outputs, output_lengths = torch.nn.utils.rnn.pad_packed_sequence(outputs) # unpack (back to padded)
        outputs = outputs[:, :, :self.hidden_size] + outputs[:, : ,self.hidden_size:] # Sum bidirectional outputs
        return outputs, hidden


class Attn(nn.Module):
    def __init__(self, method, hidden_size, squeeze=False):
        super(Attn, self).__init__()
        self.method = method
        self.hidden_size = hidden_size
        self.squeeze = squeeze      # (1-d score vectors: what the notebook's dot needs today)
        if self.method == 'general':
            self.attn = nn.Linear(self.hidden_size, hidden_size)
        elif self.method == 'concat':
            self.attn = nn.Linear(self.hidden_size * 2, hidden_size)
            self.v = nn.Parameter(torch.FloatTensor(1, hidden_size))

    def forward(self, hidden, encoder_outputs):
        max_len = encoder_outputs.size(0)
        this_batch_size = encoder_outputs.size(1)
        attn_energies = Variable(torch.zeros(this_batch_size, max_len)) # B x S
        if USE_CUDA:
            attn_energies = attn_energies.cuda()
        for b in range(this_batch_size):
            for i in range(max_len):
                attn_energies[b, i] = self.score(hidden[:, b], encoder_outputs[i, b].unsqueeze(0))
        return F.softmax(attn_energies).unsqueeze(1)

    def score(self, hidden, encoder_output):
        if self.method == 'dot':
            if self.squeeze:
                hidden, encoder_output = hidden.squeeze(0), encoder_output.squeeze(0)
            energy = hidden.dot(encoder_output)
            return energy
        elif self.method == 'general':
            energy = self.attn(encoder_output)
            if self.squeeze:
                hidden, energy = hidden.squeeze(0), energy.squeeze(0)
            energy = hidden.dot(energy)
            return energy
        elif self.method == 'concat':
            energy = self.attn(torch.cat((hidden, encoder_output), 1))
            v = self.v
            if self.squeeze:
                v, energy = v.squeeze(0), energy.squeeze(0)
            energy = v.dot(energy)
            return energy


class LuongAttnDecoderRNN(nn.Module):
    def __init__(self, attn_model, hidden_size, output_size, n_layers=1, dropout=0.1, squeeze=False):
        super(LuongAttnDecoderRNN, self).__init__()
        self.attn_model = attn_model
        self.hidden_size = hidden_size
        self.output_size = output_size
        self.n_layers = n_layers
        self.dropout = dropout
        self.embedding = nn.Embedding(output_size, hidden_size)
        self.embedding_dropout = nn.Dropout(dropout)
        self.gru = nn.GRU(hidden_size, hidden_size, n_layers, dropout=dropout)
        self.concat = nn.Linear(hidden_size * 2, hidden_size)
        self.out = nn.Linear(hidden_size, output_size)
        if attn_model != 'none':
            self.attn = Attn(attn_model, hidden_size, squeeze)

    def forward(self, input_seq, last_hidden, encoder_outputs):
        batch_size = input_seq.size(0)
        embedded = self.embedding(input_seq)
        embedded = self.embedding_dropout(embedded)
        embedded = embedded.view(1, batch_size, self.hidden_size) # S=1 x B x N
        rnn_output, hidden = self.gru(embedded, last_hidden)
        attn_weights = self.attn(rnn_output, encoder_outputs)
        context = attn_weights.bmm(encoder_outputs.transpose(0, 1)) # B x S=1 x N
        rnn_output = rnn_output.squeeze(0) # S=1 x B x N -> B x N
        context = context.squeeze(1)       # B x S=1 x N -> B x N
        concat_input = torch.cat((rnn_output, context), 1)
        concat_output = F.tanh(self.concat(concat_input))
        output = self.out(concat_output)
        return output, hidden, attn_weights


def pad_seq(seq, max_length):
    seq += [PAD_token for i in range(max_length - len(seq))]
    return seq


rs = np.random.RandomState(7)
n_in, n_out = 15, 13
pairs = [([int(x) for x in rs.randint(3, n_in, size=rs.randint(2, 7))],
          [int(x) for x in rs.randint(3, n_out, size=rs.randint(2, 6))]) for _ in range(40)]


def random_batch(batch_size):
    input_seqs, target_seqs = [], []
    for i in range(batch_size):
        pair = pairs[rs.randint(len(pairs))]
        input_seqs.append(pair[0] + [EOS_token])
        target_seqs.append(pair[1] + [EOS_token])
    seq_pairs = sorted(zip(input_seqs, target_seqs), key=lambda p: len(p[0]), reverse=True)
    input_seqs, target_seqs = zip(*seq_pairs)
    input_lengths = [len(s) for s in input_seqs]
    input_padded = [pad_seq(list(s), max(input_lengths)) for s in input_seqs]
    target_lengths = [len(s) for s in target_seqs]
    target_padded = [pad_seq(list(s), max(target_lengths)) for s in target_seqs]
    input_var = Variable(torch.LongTensor(input_padded)).transpose(0, 1)
    target_var = Variable(torch.LongTensor(target_padded)).transpose(0, 1)
    return input_var, input_lengths, target_var, target_lengths


def set_weights(model, seed):
    r = np.random.RandomState(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.copy_(torch.from_numpy((r.standard_normal(tuple(p.shape)) * 0.3).astype(np.float32)))


def run(encoder, decoder, input_batches, input_lengths, target_batches, target_lengths):
    batch_size = input_batches.size(1)
    encoder_outputs, encoder_hidden = encoder(input_batches, input_lengths, None)
    max_target_length = max(target_lengths)
    decoder_input = Variable(torch.LongTensor([SOS_token] * batch_size))
    decoder_hidden = encoder_hidden[:decoder.n_layers]
    all_decoder_outputs = Variable(torch.zeros(max_target_length, batch_size, decoder.output_size))
    for t in range(max_target_length):
        decoder_output, decoder_hidden, decoder_attn = decoder(decoder_input, decoder_hidden, encoder_outputs)
        all_decoder_outputs[t] = decoder_output
        decoder_input = target_batches[t]
    loss = masked_cross_entropy(all_decoder_outputs.transpose(0, 1).contiguous(),
                                target_batches.transpose(0, 1).contiguous(), target_lengths)
    return loss, decoder_attn


warnings.simplefilter("ignore")
input_batches, input_lengths, target_batches, target_lengths = random_batch(3)
print('input_batches', input_batches.size(), input_lengths)
print('target_batches', target_batches.size(), target_lengths)
print(sequence_mask(torch.LongTensor(target_lengths)))

# the notebook as written: 2-d operands of Tensor.dot
encoder_test = EncoderRNN(n_in, 8, 2)
decoder_test = LuongAttnDecoderRNN('general', 8, n_out, 2)
try:
    run(encoder_test, decoder_test, input_batches, input_lengths, target_batches, target_lengths)
except RuntimeError as e:
    print("RuntimeError:", e)

for method in ('dot', 'general', 'concat'):
    encoder = EncoderRNN(n_in, 8, 2, dropout=0.0)
    decoder = LuongAttnDecoderRNN(method, 8, n_out, 2, dropout=0.0, squeeze=True)
    set_weights(encoder, 1)
    set_weights(decoder, 2)
    encoder_optimizer = optim.Adam(encoder.parameters(), lr=0.01)
    decoder_optimizer = optim.Adam(decoder.parameters(), lr=0.05)
    for step in range(4):
        batch = random_batch(4)
        encoder_optimizer.zero_grad()
        decoder_optimizer.zero_grad()
        loss, attn = run(encoder, decoder, *batch)
        loss.backward()
        ec = torch.nn.utils.clip_grad_norm_(encoder.parameters(), 50.0)
        dc = torch.nn.utils.clip_grad_norm_(decoder.parameters(), 50.0)
        encoder_optimizer.step()
        decoder_optimizer.step()
        print(method, step, 'loss %.4f' % loss.item(), 'ec %.4f dc %.4f' % (ec, dc), tuple(attn.shape),
              attn.grad_fn.name())
    print(attn[0].detach().numpy().round(3))
