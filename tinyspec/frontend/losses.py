"""Losses as tinygrad 0.14 writes them; reduction is "mean" (default), "sum" or "none".

cross_entropy takes class probabilities or integer class indices (classes on axis 1, or 0 for a 1-d input) and label
smoothing; sparse_categorical_crossentropy takes indices on the last axis, ignore_index and label smoothing, and its
mean is over the entries not ignored; nll_loss takes log-probabilities, per-class weights and ignore_index (its mean
is weighted); binary_crossentropy takes probabilities, binary_crossentropy_logits logits (through logsigmoid) and an
optional pos_weight."""
from __future__ import annotations

from tinyspec.dtype import dtypes
from tinyspec.frontend.attach import method
from tinyspec.frontend.tensor import Tensor

REDUCTIONS = ("none", "sum", "mean")


def _reduce(x: Tensor, reduction: str) -> Tensor:
  if reduction == "none": return x
  if reduction == "sum": return x.sum()
  if reduction == "mean": return x.mean()
  raise ValueError(f"reduction {reduction!r} is not one of {', '.join(REDUCTIONS)}")


def _check(reduction: str) -> None:
  if reduction not in REDUCTIONS: raise ValueError(f"reduction {reduction!r} is not one of {', '.join(REDUCTIONS)}")


@method
def binary_crossentropy(self: Tensor, Y: Tensor, reduction: str = "mean") -> Tensor:
  return _reduce(-Y * self.log() - (1 - Y) * (1 - self).log(), reduction)


@method
def binary_crossentropy_logits(self: Tensor, Y: Tensor, reduction: str = "mean", pos_weight: Tensor | None = None) -> Tensor:
  log_p, log_1_minus_p = self.logsigmoid(), (-self).logsigmoid()
  return _reduce(-((1 if pos_weight is None else pos_weight) * Y * log_p + (1 - Y) * log_1_minus_p), reduction)


@method
def sparse_categorical_crossentropy(self: Tensor, Y: Tensor, ignore_index: int = -1, label_smoothing: float = 0.0,
                                    reduction: str = "mean") -> Tensor:
  if not 0.0 <= label_smoothing <= 1.0: raise ValueError(f"label_smoothing {label_smoothing} is not in [0, 1]")
  _check(reduction)
  log_probs = self.log_softmax()
  loss_mask = Y != ignore_index if ignore_index != -1 else Tensor.full(Y.shape, True, dtypes.bool)
  y = Y.unsqueeze(-1)._one_hot_along_dim(self.shape[-1], dim=-1) & loss_mask.unsqueeze(-1)
  smoothing = label_smoothing * (log_probs.mean(-1) * loss_mask)
  unreduced = (1 - label_smoothing) * (log_probs * y).sum(-1) + smoothing
  return -unreduced.sum() / loss_mask.sum() if reduction == "mean" else -_reduce(unreduced, reduction)


@method
def cross_entropy(self: Tensor, Y: Tensor, reduction: str = "mean", label_smoothing: float = 0.0) -> Tensor:
  if not 0.0 <= label_smoothing <= 1.0: raise ValueError(f"label_smoothing {label_smoothing} is not in [0, 1]")
  classes = 0 if self.ndim == 1 else 1
  if self.shape != Y.shape:
    if self.max(classes).shape != Y.shape: raise ValueError(f"cross_entropy: input {self.shape} and target {Y.shape} do not match")
    Y = Y.unsqueeze(classes)._one_hot_along_dim(self.shape[classes], dim=classes)
  Y = (1 - label_smoothing) * Y + label_smoothing / Y.shape[classes]
  return _reduce(-(self.log_softmax(classes) * Y).sum(classes), reduction)


@method
def nll_loss(self: Tensor, Y: Tensor, weight: Tensor | None = None, ignore_index: int | None = None, reduction: str = "mean") -> Tensor:
  _check(reduction)
  w = Tensor.full(Y.shape, 1, Y.dtype) if weight is None else weight.gather(0, Y.flatten()).reshape(Y.shape)
  masked = w if ignore_index is None else w * (Y != ignore_index)
  nll = -self.gather(1, Y.unsqueeze(1)).squeeze(1) * masked
  return nll.sum() / masked.sum() if reduction == "mean" else _reduce(nll, reduction)
