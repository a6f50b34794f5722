"""Learn-the-basics 'Build the Neural Network': module printing, layers one by one, parameters."""
import torch
from torch import nn

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
print(f"Using {device} device")


class NeuralNetwork(nn.Module):
    def __init__(self):
        super().__init__()
        self.flatten = nn.Flatten()
        self.linear_relu_stack = nn.Sequential(
            nn.Linear(28 * 28, 512),
            nn.ReLU(),
            nn.Linear(512, 512),
            nn.ReLU(),
            nn.Linear(512, 10),
        )

    def forward(self, x):
        x = self.flatten(x)
        logits = self.linear_relu_stack(x)
        return logits


model = NeuralNetwork().to(device)
print(model)

X = torch.rand(1, 28, 28, device=device)
logits = model(X)
pred_probab = nn.Softmax(dim=1)(logits)
y_pred = pred_probab.argmax(1)
print(pred_probab.shape, y_pred.shape, y_pred.dtype)
print(f"sums to one: {abs(pred_probab.sum().item() - 1) < 1e-5}")

input_image = torch.rand(3, 28, 28)
print(input_image.size())
flatten = nn.Flatten()
flat_image = flatten(input_image)
print(flat_image.size())
layer1 = nn.Linear(in_features=28 * 28, out_features=20)
hidden1 = layer1(flat_image)
print(hidden1.size())
hidden1 = nn.ReLU()(hidden1)
print("non-negative after ReLU:", bool((hidden1 >= 0).all()))
seq_modules = nn.Sequential(flatten, layer1, nn.ReLU(), nn.Linear(20, 10))
logits = seq_modules(input_image)
softmax = nn.Softmax(dim=1)
pred_probab = softmax(logits)
print(pred_probab.shape)

print(f"Model structure: {model}\n\n")
for name, param in model.named_parameters():
    print(f"Layer: {name} | Size: {param.size()} | dtype: {param.dtype}")
print(sum(p.numel() for p in model.parameters() if p.requires_grad))
print(len(list(model.modules())), [type(m).__name__ for m in model.children()])
print(model.linear_relu_stack[0])
print(model.linear_relu_stack[0].weight.shape, model.training)
model.eval()
print(model.training, model.linear_relu_stack.training)
print(list(model.state_dict().keys()))
