# Course autograder style: student implementations checked against torch, scores printed.
import torch
import torch.nn.functional as F

def student_softmax(x, dim=-1):
    e = torch.exp(x - x.max(dim=dim, keepdim=True).values)
    return e / e.sum(dim=dim, keepdim=True)

def student_sigmoid_bad(x):
    return 1 / (1 + torch.exp(x))  # sign bug

def student_linear_backward(x, w, dout):
    return dout @ w, dout.t() @ x

def student_relu(x):
    return x.clamp(min=0)

def grade(name, fn, points):
    try:
        fn()
        print(f"{name}: {points}/{points}")
        return points
    except AssertionError as e:
        first = str(e).split("\n")
        print(f"{name}: 0/{points} -- {first[0]}")
        for line in first[1:]:
            print("   ", line)
        return 0
    except Exception as e:
        print(f"{name}: 0/{points} -- {type(e).__name__}: {e}")
        return 0

x = torch.tensor([[1.0, 2.0, 3.0], [-1.0, 0.0, 1.0]], dtype=torch.float64)
w = torch.tensor([[0.5, -0.5, 1.0], [2.0, 0.0, -1.0]], dtype=torch.float64)

def test_softmax():
    torch.testing.assert_close(student_softmax(x), F.softmax(x, dim=-1))
    torch.testing.assert_close(student_softmax(x, 0), torch.softmax(x, 0))

def test_sigmoid():
    torch.testing.assert_close(student_sigmoid_bad(x), torch.sigmoid(x), msg=lambda m: "sigmoid wrong!\n" + m)

def test_linear_backward():
    xr = x.clone().requires_grad_(True)
    wr = w.clone().requires_grad_(True)
    out = xr @ wr.t()
    dout = torch.ones_like(out)
    out.backward(dout)
    dx, dw = student_linear_backward(x, w, dout)
    torch.testing.assert_close(dx, xr.grad)
    torch.testing.assert_close(dw, wr.grad)

def test_relu_grad():
    xr = x.clone().requires_grad_()
    student_relu(xr).sum().backward()
    expected = (x > 0).double()
    assert torch.equal(xr.grad, expected), f"relu grad mismatch: {xr.grad} vs {expected}"

def test_shape():
    out = student_softmax(torch.zeros(2, 3, 4))
    assert out.shape == (2, 3, 5), f"expected (2, 3, 5), got {tuple(out.shape)}"

def test_dtype():
    out = student_relu(torch.arange(3))
    torch.testing.assert_close(out, torch.tensor([0.0, 1.0, 2.0]))

def test_gradcheck():
    assert torch.autograd.gradcheck(student_softmax, (x.clone().requires_grad_(),))

def test_error_type():
    student_softmax(torch.zeros(2, 3), dim=5)

total = 0
total += grade("softmax", test_softmax, 10)
total += grade("sigmoid", test_sigmoid, 10)
total += grade("linear_backward", test_linear_backward, 20)
total += grade("relu_grad", test_relu_grad, 10)
total += grade("shape", test_shape, 5)
total += grade("dtype", test_dtype, 5)
total += grade("gradcheck", test_gradcheck, 10)
total += grade("error_type", test_error_type, 5)
print(f"TOTAL {total}/75")
