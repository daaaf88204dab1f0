"""Default initialisation of nn.Linear, nn.Conv2d and nn.Embedding from a fixed seed: tinygrad's THREEFRY random bits,
turned into uniform floats and scaled (kaiming_uniform for the weights, uniform for the biases)."""
from tinygrad import Tensor, nn


def program():
  Tensor.manual_seed(11)
  lin, conv, emb = nn.Linear(3, 2), nn.Conv2d(2, 3, 3), nn.Embedding(5, 3)
  return lin.weight, lin.bias, conv.weight, conv.bias, emb.weight
