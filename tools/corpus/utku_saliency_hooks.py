"""Saliency maps with hooks, after utkuozbulak/pytorch-cnn-visualizations (src/vanilla_backprop.py,
guided_backprop.py, gradcam.py, integrated_gradients.py).

Adapted: torchvision's pretrained AlexNet -> a small AlexNet-shaped CNN (same features/classifier
indices) with weights drawn from numpy; a synthetic 67x67 image; images are printed as summaries
instead of saved.  The classes are the repository's, unchanged except for PIL resizing in GradCam
(nearest-neighbour in numpy).
"""
import numpy as np
import torch
import torch.nn as nn
from torch.nn import ReLU


class SmallAlexNet(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 6, kernel_size=11, stride=4, padding=2), nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2),
            nn.Conv2d(6, 8, kernel_size=5, padding=2), nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2),
            nn.Conv2d(8, 8, kernel_size=3, padding=1), nn.ReLU(inplace=True),
            nn.Conv2d(8, 8, kernel_size=3, padding=1), nn.ReLU(inplace=True),
            nn.Conv2d(8, 8, kernel_size=3, padding=1), nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True))
        self.avgpool = nn.AdaptiveAvgPool2d((2, 2))
        self.classifier = nn.Sequential(
            nn.Dropout(), nn.Linear(8 * 2 * 2, 16), nn.ReLU(inplace=True),
            nn.Dropout(), nn.Linear(16, 16), nn.ReLU(inplace=True), nn.Linear(16, num_classes))

    def forward(self, x):
        x = self.features(x)
        x = self.avgpool(x)
        return self.classifier(torch.flatten(x, 1))


rng = np.random.RandomState(0)
model = SmallAlexNet()
with torch.no_grad():
    for p in model.parameters():
        fan_in = int(np.prod(p.shape[1:])) if p.dim() > 1 else 1
        scale = np.sqrt(2.0 / fan_in) if p.dim() > 1 else 0.05
        p.copy_(torch.from_numpy((rng.randn(*p.shape) * scale).astype(np.float32)))
model.eval()

yy, xx = np.mgrid[0:67, 0:67]
img = np.stack([np.sin(xx / (5 + c)) + np.cos(yy / (4 + c)) for c in range(3)]).astype(np.float32)
prep_img = torch.from_numpy(img)[None].requires_grad_(True)
target_class = 3


def summary(name, a):
    a = np.asarray(a, dtype=np.float64)
    print(name, a.shape, "mean|.| %.5f min %.5f max %.5f" % (np.abs(a).mean(), a.min(), a.max()))


def convert_to_grayscale(im_as_arr):
    grayscale_im = np.sum(np.abs(im_as_arr), axis=0)
    im_max = np.percentile(grayscale_im, 99)
    im_min = np.min(grayscale_im)
    grayscale_im = (np.clip((grayscale_im - im_min) / (im_max - im_min), 0, 1))
    return np.expand_dims(grayscale_im, axis=0)


class VanillaBackprop():
    def __init__(self, model):
        self.model = model
        self.gradients = None
        self.model.eval()
        self.hook_layers()

    def hook_layers(self):
        def hook_function(module, grad_in, grad_out):
            self.gradients = grad_in[0]
        first_layer = list(self.model.features._modules.items())[0][1]
        first_layer.register_backward_hook(hook_function)

    def generate_gradients(self, input_image, target_class):
        model_output = self.model(input_image)
        self.model.zero_grad()
        one_hot_output = torch.FloatTensor(1, model_output.size()[-1]).zero_()
        one_hot_output[0][target_class] = 1
        model_output.backward(gradient=one_hot_output)
        gradients_as_arr = self.gradients.data.numpy()[0]
        return gradients_as_arr


class GuidedBackprop():
    def __init__(self, model):
        self.model = model
        self.gradients = None
        self.forward_relu_outputs = []
        self.model.eval()
        self.update_relus()
        self.hook_layers()

    def hook_layers(self):
        def hook_function(module, grad_in, grad_out):
            self.gradients = grad_in[0]
        first_layer = list(self.model.features._modules.items())[0][1]
        first_layer.register_backward_hook(hook_function)

    def update_relus(self):
        def relu_backward_hook_function(module, grad_in, grad_out):
            corresponding_forward_output = self.forward_relu_outputs[-1]
            corresponding_forward_output[corresponding_forward_output > 0] = 1
            modified_grad_out = corresponding_forward_output * torch.clamp(grad_in[0], min=0.0)
            del self.forward_relu_outputs[-1]
            return (modified_grad_out,)

        def relu_forward_hook_function(module, ten_in, ten_out):
            self.forward_relu_outputs.append(ten_out)

        for pos, module in self.model.features._modules.items():
            if isinstance(module, ReLU):
                module.register_backward_hook(relu_backward_hook_function)
                module.register_forward_hook(relu_forward_hook_function)

    def generate_gradients(self, input_image, target_class):
        model_output = self.model(input_image)
        self.model.zero_grad()
        one_hot_output = torch.FloatTensor(1, model_output.size()[-1]).zero_()
        one_hot_output[0][target_class] = 1
        model_output.backward(gradient=one_hot_output)
        gradients_as_arr = self.gradients.data.numpy()[0]
        return gradients_as_arr


class CamExtractor():
    def __init__(self, model, target_layer):
        self.model = model
        self.target_layer = target_layer
        self.gradients = None

    def save_gradient(self, grad):
        self.gradients = grad

    def forward_pass_on_convolutions(self, x):
        conv_output = None
        for module_pos, module in self.model.features._modules.items():
            x = module(x)
            if int(module_pos) == self.target_layer:
                x.register_hook(self.save_gradient)
                conv_output = x
        return conv_output, x

    def forward_pass(self, x):
        conv_output, x = self.forward_pass_on_convolutions(x)
        x = self.model.avgpool(x)
        x = x.view(x.size(0), -1)
        x = self.model.classifier(x)
        return conv_output, x


class GradCam():
    def __init__(self, model, target_layer):
        self.model = model
        self.model.eval()
        self.extractor = CamExtractor(self.model, target_layer)

    def generate_cam(self, input_image, target_class=None):
        conv_output, model_output = self.extractor.forward_pass(input_image)
        if target_class is None:
            target_class = np.argmax(model_output.data.numpy())
        one_hot_output = torch.FloatTensor(1, model_output.size()[-1]).zero_()
        one_hot_output[0][target_class] = 1
        self.model.features.zero_grad()
        self.model.classifier.zero_grad()
        model_output.backward(gradient=one_hot_output, retain_graph=True)
        guided_gradients = self.extractor.gradients.data.numpy()[0]
        target = conv_output.data.numpy()[0]
        weights = np.mean(guided_gradients, axis=(1, 2))
        cam = np.ones(target.shape[1:], dtype=np.float32)
        for i, w in enumerate(weights):
            cam += w * target[i, :, :]
        cam = np.maximum(cam, 0)
        cam = (cam - np.min(cam)) / (np.max(cam) - np.min(cam))
        cam = np.uint8(cam * 255)
        h, w = input_image.shape[2], input_image.shape[3]   # (adapted: numpy nearest resize)
        cam = cam[np.arange(h) * cam.shape[0] // h][:, np.arange(w) * cam.shape[1] // w] / 255
        return cam


class IntegratedGradients():
    def __init__(self, model):
        self.model = model
        self.gradients = None
        self.model.eval()
        self.hook_layers()

    def hook_layers(self):
        def hook_function(module, grad_in, grad_out):
            self.gradients = grad_in[0]
        first_layer = list(self.model.features._modules.items())[0][1]
        first_layer.register_backward_hook(hook_function)

    def generate_images_on_linear_path(self, input_image, steps):
        step_list = np.arange(steps + 1) / steps
        xbar_list = [input_image * step for step in step_list]
        return xbar_list

    def generate_gradients(self, input_image, target_class):
        model_output = self.model(input_image)
        self.model.zero_grad()
        one_hot_output = torch.FloatTensor(1, model_output.size()[-1]).zero_()
        one_hot_output[0][target_class] = 1
        model_output.backward(gradient=one_hot_output)
        gradients_as_arr = self.gradients.data.numpy()[0]
        return gradients_as_arr

    def generate_integrated_gradients(self, input_image, target_class, steps):
        xbar_list = self.generate_images_on_linear_path(input_image, steps)
        integrated_grads = np.zeros(input_image.size())
        for xbar_image in xbar_list:
            single_integrated_grad = self.generate_gradients(xbar_image, target_class)
            integrated_grads = integrated_grads + single_integrated_grad / steps
        return integrated_grads[0]


import warnings
warnings.simplefilter("ignore", FutureWarning)     # (the non-full backward hook deprecation)

print("logits", model(prep_img).detach().numpy().round(4))
VBP = VanillaBackprop(model)
vanilla_grads = VBP.generate_gradients(prep_img, target_class)
summary("vanilla", vanilla_grads)
summary("vanilla gray", convert_to_grayscale(vanilla_grads))
print("hook saw the image gradient:", np.allclose(vanilla_grads, prep_img.grad.numpy()[0]))

model2 = SmallAlexNet()
model2.load_state_dict(model.state_dict())
GBP = GuidedBackprop(model2)
guided_grads = GBP.generate_gradients(prep_img, target_class)
summary("guided", guided_grads)
pos = np.maximum(0, guided_grads) / guided_grads.max()
summary("guided positive", pos)

model3 = SmallAlexNet()
model3.load_state_dict(model.state_dict())
grad_cam = GradCam(model3, target_layer=11)
cam = grad_cam.generate_cam(prep_img, target_class)
summary("gradcam", cam)
summary("guided gradcam", np.multiply(cam, guided_grads))

model4 = SmallAlexNet()
model4.load_state_dict(model.state_dict())
IG = IntegratedGradients(model4)
integrated_grads = IG.generate_integrated_gradients(prep_img, target_class, 6)
summary("integrated", integrated_grads)
