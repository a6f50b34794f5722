"""phlippe/uvadlc_notebooks tutorial 12 (autoregressive image modeling): PixelCNN's masked
convolutions (`self.conv.weight.data *= self.mask` on every forward) and the receptive-field
demo, which backpropagates from the centre pixel through a growing stack of layers with
retain_graph=True and prints the input's gradient map (the notebook plots it)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class MaskedConvolution(nn.Module):

    def __init__(self, c_in, c_out, mask, **kwargs):
        super().__init__()
        kernel_size = (mask.shape[0], mask.shape[1])
        dilation = 1 if "dilation" not in kwargs else kwargs["dilation"]
        padding = tuple([dilation*(kernel_size[i]-1)//2 for i in range(2)])
        self.conv = nn.Conv2d(c_in, c_out, kernel_size, padding=padding, **kwargs)
        self.register_buffer('mask', mask[None, None])

    def forward(self, x):
        self.conv.weight.data *= self.mask  # Ensures zero's at masked positions
        return self.conv(x)


class VerticalStackConvolution(MaskedConvolution):

    def __init__(self, c_in, c_out, kernel_size=3, mask_center=False, **kwargs):
        mask = torch.ones(kernel_size, kernel_size)
        mask[kernel_size//2+1:, :] = 0
        if mask_center:
            mask[kernel_size//2, :] = 0
        super().__init__(c_in, c_out, mask, **kwargs)


class HorizontalStackConvolution(MaskedConvolution):

    def __init__(self, c_in, c_out, kernel_size=3, mask_center=False, **kwargs):
        mask = torch.ones(1, kernel_size)
        mask[0, kernel_size//2+1:] = 0
        if mask_center:
            mask[0, kernel_size//2] = 0
        super().__init__(c_in, c_out, mask, **kwargs)


class GatedMaskedConv(nn.Module):

    def __init__(self, c_in, **kwargs):
        super().__init__()
        self.conv_vert = VerticalStackConvolution(c_in, c_out=2*c_in, **kwargs)
        self.conv_horiz = HorizontalStackConvolution(c_in, c_out=2*c_in, **kwargs)
        self.conv_vert_to_horiz = nn.Conv2d(2*c_in, 2*c_in, kernel_size=1, padding=0)
        self.conv_horiz_1x1 = nn.Conv2d(c_in, c_in, kernel_size=1, padding=0)

    def forward(self, v_stack, h_stack):
        v_stack_feat = self.conv_vert(v_stack)
        v_val, v_gate = v_stack_feat.chunk(2, dim=1)
        v_stack_out = torch.tanh(v_val) * torch.sigmoid(v_gate)
        h_stack_feat = self.conv_horiz(h_stack)
        h_stack_feat = h_stack_feat + self.conv_vert_to_horiz(v_stack_feat)
        h_val, h_gate = h_stack_feat.chunk(2, dim=1)
        h_stack_feat = torch.tanh(h_val) * torch.sigmoid(h_gate)
        h_stack_out = self.conv_horiz_1x1(h_stack_feat)
        h_stack_out = h_stack_out + h_stack
        return v_stack_out, h_stack_out


inp_img = torch.zeros(1, 1, 11, 11)
inp_img.requires_grad_()


def show_center_recep_field(img, out):
    loss = out[0, :, img.shape[2]//2, img.shape[3]//2].sum()
    loss.backward(retain_graph=True)
    img_grads = img.grad.abs()
    img.grad.fill_(0)
    img = img_grads.squeeze().cpu().numpy()
    print((img > 0).astype(int))
    print("centre gradient:", img[img.shape[0]//2, img.shape[1]//2], "total:", img.sum())


show_center_recep_field(inp_img, inp_img)

horiz_conv = HorizontalStackConvolution(c_in=1, c_out=1, kernel_size=3, mask_center=True)
horiz_conv.conv.weight.data.fill_(1)
horiz_conv.conv.bias.data.fill_(0)
horiz_img = horiz_conv(inp_img)
show_center_recep_field(inp_img, horiz_img)

vert_conv = VerticalStackConvolution(c_in=1, c_out=1, kernel_size=3, mask_center=True)
vert_conv.conv.weight.data.fill_(1)
vert_conv.conv.bias.data.fill_(0)
vert_img = vert_conv(inp_img)
show_center_recep_field(inp_img, vert_img)

horiz_img = vert_img + horiz_img
show_center_recep_field(inp_img, horiz_img)

horiz_conv = HorizontalStackConvolution(c_in=1, c_out=1, kernel_size=3, mask_center=False)
horiz_conv.conv.weight.data.fill_(1)
horiz_conv.conv.bias.data.fill_(0)
vert_conv = VerticalStackConvolution(c_in=1, c_out=1, kernel_size=3, mask_center=False)
vert_conv.conv.weight.data.fill_(1)
vert_conv.conv.bias.data.fill_(0)

for l_idx in range(4):
    vert_img = vert_conv(vert_img)
    horiz_img = horiz_conv(horiz_img) + vert_img
    print(f"Layer {l_idx+2}")
    show_center_recep_field(inp_img, horiz_img)

print("weight versions:", horiz_conv.conv.weight._version, vert_conv.conv.weight._version)

# A gated layer with dilation, weights from a fixed formula: the masked entries stay zero after
# a few optimizer steps because every forward re-applies the mask through .data.
layer = GatedMaskedConv(2, dilation=2)
for i, p in enumerate(layer.parameters()):
    p.data.copy_(0.2 * torch.cos(torch.arange(p.numel(), dtype=torch.float32) + i).view_as(p))
opt = torch.optim.SGD(layer.parameters(), lr=0.5)
img = torch.linspace(-1, 1, 2 * 7 * 7).view(1, 2, 7, 7)
for step in range(3):
    v_out, h_out = layer(img, img)
    loss = F.mse_loss(h_out, img.flip(-1)) + v_out.pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"step {step} loss {loss.item():.6f}")
print(layer.conv_vert.conv.weight[0, 0])
print(layer.conv_horiz.conv.weight[:2, 0])
