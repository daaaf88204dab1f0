"""Three training steps of a small convnet (Conv2d without bias, BatchNorm2d in training mode, relu, a linear head) with
Adam; the batch statistics update BatchNorm's running mean and variance at each step. (A conv bias before BatchNorm has a
gradient of rounding noise only, which Adam's normalization turns into steps of any sign: no numbers to compare.)"""
import numpy as np
from tinygrad import Context, Tensor, nn

rng = np.random.default_rng(13)
X = rng.standard_normal((4, 2, 6, 6)).astype(np.float32)
Y = rng.standard_normal((4, 3)).astype(np.float32)
CW = (0.3 * rng.standard_normal((4, 2, 3, 3))).astype(np.float32)
HW = (0.2 * rng.standard_normal((4 * 4 * 4, 3))).astype(np.float32)


def program():
  conv, bn = nn.Conv2d(2, 4, 3, bias=False), nn.BatchNorm2d(4)
  conv.weight, head = Tensor(CW), Tensor(HW)
  opt = nn.optim.Adam([conv.weight, bn.weight, bn.bias, head], lr=0.01)
  with Context(TRAINING=1):
    for _ in range(3):
      opt.zero_grad()
      out = bn(conv(Tensor(X))).relu().flatten(1) @ head
      (out - Tensor(Y)).square().mean().backward()
      opt.step()
  return conv.weight, bn.weight, bn.running_mean, bn.running_var, head
