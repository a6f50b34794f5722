"""nn.Transformer building blocks: MultiheadAttention, TransformerEncoder(Layer), masks, a copy task."""
import math

import torch
import torch.nn as nn

torch.manual_seed(0)


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, dropout=0.1, max_len=100):
        super().__init__()
        self.dropout = nn.Dropout(p=dropout)
        position = torch.arange(max_len).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, 1, d_model)
        pe[:, 0, 0::2] = torch.sin(position * div_term)
        pe[:, 0, 1::2] = torch.cos(position * div_term)
        self.register_buffer('pe', pe)

    def forward(self, x):
        x = x + self.pe[:x.size(0)]
        return self.dropout(x)


pe = PositionalEncoding(8, dropout=0.0)
print(pe.pe.shape, pe.pe[1, 0, :4])
print(nn.Transformer.generate_square_subsequent_mask(4))

mha = nn.MultiheadAttention(embed_dim=16, num_heads=4, batch_first=True)
q = torch.randn(2, 5, 16)
out, weights = mha(q, q, q)
print(out.shape, weights.shape, torch.allclose(weights.sum(-1), torch.ones(2, 5)))
out, weights = mha(q, q, q, need_weights=True, average_attn_weights=False)
print(weights.shape)
key_padding_mask = torch.tensor([[False] * 5, [False, False, False, True, True]])
out, weights = mha(q, q, q, key_padding_mask=key_padding_mask)
print(weights[1, :, 3:].abs().max().item())


class TransformerModel(nn.Module):
    def __init__(self, ntoken, d_model, nhead, d_hid, nlayers, dropout=0.0):
        super().__init__()
        self.model_type = 'Transformer'
        self.pos_encoder = PositionalEncoding(d_model, dropout)
        encoder_layers = nn.TransformerEncoderLayer(d_model, nhead, d_hid, dropout)
        self.transformer_encoder = nn.TransformerEncoder(encoder_layers, nlayers, enable_nested_tensor=False)
        self.embedding = nn.Embedding(ntoken, d_model)
        self.d_model = d_model
        self.linear = nn.Linear(d_model, ntoken)
        self.init_weights()

    def init_weights(self):
        initrange = 0.1
        self.embedding.weight.data.uniform_(-initrange, initrange)
        self.linear.bias.data.zero_()
        self.linear.weight.data.uniform_(-initrange, initrange)

    def forward(self, src, src_mask=None):
        src = self.embedding(src) * math.sqrt(self.d_model)
        src = self.pos_encoder(src)
        if src_mask is None:
            src_mask = nn.Transformer.generate_square_subsequent_mask(len(src))
        output = self.transformer_encoder(src, src_mask)
        output = self.linear(output)
        return output


ntokens, seq_len, bsz = 10, 8, 16
model = TransformerModel(ntokens, 32, 4, 64, 2)
print(sum(p.numel() for p in model.parameters()))
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 1.0, gamma=0.95)

# Predict the previous token (a shifted copy): causal attention can learn it.
losses = []
model.train()
for step in range(80):
    src = torch.randint(0, ntokens, (seq_len, bsz))
    target = torch.cat([torch.zeros(1, bsz, dtype=torch.long), src[:-1]])
    output = model(src)
    loss = criterion(output.view(-1, ntokens), target.view(-1))
    optimizer.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
    optimizer.step()
    losses.append(loss.item())
    if step % 20 == 19:
        scheduler.step()
print('loss decreased:', sum(losses[-10:]) < sum(losses[:10]))
print('lr after 4 decays:', round(scheduler.get_last_lr()[0], 6))

model.eval()
with torch.no_grad():
    src = torch.randint(0, ntokens, (seq_len, 2))
    print(model(src).shape)

layer = nn.TransformerEncoderLayer(d_model=16, nhead=2, dim_feedforward=32, batch_first=True, dropout=0.0)
enc = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
print(enc(torch.randn(3, 7, 16)).shape, len(enc.layers))
dec_layer = nn.TransformerDecoderLayer(d_model=16, nhead=2, dim_feedforward=32, batch_first=True)
dec = nn.TransformerDecoder(dec_layer, num_layers=1)
print(dec(torch.randn(3, 4, 16), torch.randn(3, 7, 16)).shape)
t = nn.Transformer(d_model=16, nhead=2, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=32, batch_first=True)
print(t(torch.randn(2, 6, 16), torch.randn(2, 3, 16)).shape)
