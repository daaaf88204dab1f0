"""Random numbers from a fixed seed: Tensor.rand, randn (Box-Muller over two uniform draws), randint, uniform,
kaiming_uniform and glorot_uniform; every draw advances the RNG counter (an assign) and hashes it with THREEFRY."""
from tinygrad import Tensor


def program():
  Tensor.manual_seed(5)
  return (Tensor.rand(2, 3), Tensor.randn(4), Tensor.randint(2, 3, low=-5, high=9), Tensor.uniform(3, 2, low=-2, high=3),
          Tensor.kaiming_uniform(4, 3), Tensor.glorot_uniform(3, 4))
