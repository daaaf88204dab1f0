"""Image storage: the addressing helper, the form at every stage (each rule firing on a bad form and silent on a good one),
the evaluator's meaning (an image is its flat storage), pyrender's round trip, and image-backed kernels on OpenCL (reads
through read_imagef, whole-pixel writes through write_imagef) against the flat lowering, the reference evaluator, numpy
and the C stand-in."""
from __future__ import annotations

import numpy as np
import pytest
from builders import assert_breaks_exactly, buf, c, f32, group, i32, ic, kgraph_of, program, rng, sink

from tinyspec import Stage, check
from tinyspec.dtype import dtypes
from tinyspec.frontend import Tensor
from tinyspec.frontend.tensor import inputs_of
from tinyspec.lower.base import Tables
from tinyspec.lower.linearize import fold_image, linearize_body, pm_lower_index
from tinyspec.lower.pipeline import PASSES, lower
from tinyspec.pyread import read_graph
from tinyspec.rewrite import PatternMatcher
from tinyspec.semantics import EvalError, evaluate
from tinyspec.semantics.kernel import evaluate_kernel
from tinyspec.ops.image import choose_image_dims, image_coords
from tinyspec.pyrender import render_module
from tinyspec.uop import AddrSpace, BufferArg, Ops, ParamArg, UOp, kernel_calls, substitute

pytestmark = pytest.mark.spec


# ---- the addressing helper and the choice of dims ----
def test_image_coords_by_hand():
  # element 17 of an image 3 pixels wide: pixel 4 (elements 16..19), channel 1; pixel 4 is x=1 of row y=1
  assert image_coords(17, 3) == (1, 1, 1)
  assert image_coords(0, 5) == (0, 0, 0)
  assert image_coords(23, 2) == (1, 2, 3)  # pixel 5: row 2, column 1, last channel
  xs, ys, cs = image_coords(np.arange(8 * 4), 4)
  assert list(xs[::4]) == [0, 1, 2, 3, 0, 1, 2, 3] and list(ys[::4]) == [0, 0, 0, 0, 1, 1, 1, 1] and list(cs[:5]) == [0, 1, 2, 3, 0]


def test_choose_image_dims():
  assert choose_image_dims(4 * 6, f32) == (1, 6)
  assert choose_image_dims(4 * 8192 * 2, f32) == (2, 8192)
  assert choose_image_dims(4 * 3 * 2731, f32) == (3, 2731)  # 8193 pixels: no width of 8192 divides them
  assert choose_image_dims(4 * 8209, f32) is None  # a prime number of pixels past the width limit
  assert choose_image_dims(18, f32) is None and choose_image_dims(16, i32) is None
  assert choose_image_dims(16, dtypes.float16) == (1, 4)


# ---- the form at each stage ----
def _reads(img_dims=(2, 2), n=16, dt=f32, over=None):
  """out[i] = in[i] + 1 over n elements, the input read through IMAGE(PARAM 1) of img_dims (None: flat)."""
  r = rng(n, 0)
  p1 = UOp.param(1, dt, n) if over is None else over
  src = p1 if img_dims is None else p1.image(img_dims)
  return sink(UOp.param(0, dt, n).index(r).store(src.index(r).load() + c(1.0, dt)).end(r))


def test_tensor_image_buffer():
  good = UOp(Ops.BUFFER, f32, (), BufferArg(7001, 16, image=(2, 2)))
  assert check(sink(good), Stage.TENSOR) == []
  assert_breaks_exactly(sink(UOp(Ops.BUFFER, f32, (), BufferArg(7002, 12, image=(2, 2)))), Stage.TENSOR, {"tensor.image_buffer"})
  assert_breaks_exactly(sink(UOp(Ops.BUFFER, i32, (), BufferArg(7003, 16, image=(2, 2)))), Stage.TENSOR, {"tensor.image_buffer"})
  assert_breaks_exactly(sink(UOp(Ops.BUFFER, f32, (), BufferArg(7004, 16, image=(0, 4)))), Stage.TENSOR, {"tensor.image_buffer"})
  assert_breaks_exactly(sink(UOp(Ops.BUFFER, f32, (), BufferArg(7005, 16, image=(2, 2.0)))), Stage.TENSOR, {"node.arg"})


def test_kgraph_image_buffer():
  body = _reads()
  out, img = buf(16, id=7010), UOp(Ops.BUFFER, f32, (), BufferArg(7011, 16, image=(1, 4)))
  assert check(sink(out.after(UOp(Ops.CALL, src=(body, out, img)))), Stage.KERNEL_GRAPH) == []
  bad = UOp(Ops.BUFFER, f32, (), BufferArg(7012, 16, image=(4, 4)))
  assert_breaks_exactly(sink(out.after(UOp(Ops.CALL, src=(body, out, bad)))), Stage.KERNEL_GRAPH, {"kgraph.image_buffer"})


def test_kernel_image_view():
  assert check(_reads(), Stage.KERNEL) == [] and check(kgraph_of(_reads()), Stage.KERNEL_GRAPH) == []
  assert_breaks_exactly(_reads((2, 3)), Stage.KERNEL, {"kernel.image_view"})  # 24 elements over a PARAM of 16
  assert_breaks_exactly(_reads((1, 8193), n=4 * 8193), Stage.KERNEL, {"kernel.image_view"})  # wider than the device's limit
  assert_breaks_exactly(_reads((1, 4), dt=dtypes.int32), Stage.KERNEL, {"kernel.image_view"})
  assert check(_reads((1, 4), dt=dtypes.float16), Stage.KERNEL) == []  # HALF_FLOAT images
  local = UOp.buffer(f32, 16, addrspace=AddrSpace.LOCAL)
  r = rng(16, 0)
  over_buffer = sink(UOp.param(0, f32, 16).index(r).store(local.image((2, 2)).index(r).load()).end(r))
  assert "kernel.image_view" in {v.rule for v in check(over_buffer, Stage.KERNEL)}
  # the view over an AFTER of the PARAM, not the PARAM itself
  p1 = UOp.param(1, f32, 16)
  assert "kernel.image_view" in {v.rule for v in check(_reads(over=p1.after(r)), Stage.KERNEL)}


def test_kernel_image_param():
  # a PARAM carrying dims (a view linearize folded) is legal at KERNEL when an image of them holds its storage
  assert check(_reads(None, over=UOp(Ops.PARAM, f32, (), ParamArg(1, 16, image=(2, 2)))), Stage.KERNEL) == []
  assert_breaks_exactly(_reads(None, over=UOp(Ops.PARAM, f32, (), ParamArg(1, 16, image=(1, 2)))), Stage.KERNEL, {"kernel.image_param"})


def test_a_kernel_halfway_through_folding_its_views_is_legal():
  """linearize folds one IMAGE view per rule application: with two images, the kernel after the first fold holds one
  view and one PARAM carrying dims, and is legal (a campaign's per-rewrite check found this illegal once)."""
  r = rng(16, 0)
  p0, p1, p2 = UOp.param(0, f32, 16), UOp.param(1, f32, 16), UOp.param(2, f32, 16)
  body = sink(p0.index(r).store(p1.image((2, 2)).index(r).load() + p2.image((1, 4)).index(r).load()).end(r))
  half = substitute(body, {p1.image((2, 2)): fold_image(p1.image((2, 2)), p1)})
  assert half is not body and check(half, Stage.KERNEL) == []


def test_the_images_pass_makes_every_view_of_a_kernel_in_one_application():
  """A kernel that sees a PARAM flat in one access and as an image in another is illegal, so the images pass puts all
  of a kernel's accesses of its images behind their views at once (a campaign's per-rewrite check found the one by
  one rewrite illegal halfway)."""
  from tinyspec.lower.images import eligible, image_index
  r = rng(16, 0)
  p0, p1 = UOp.param(0, f32, 16), UOp.param(1, f32, 16)
  body = sink(p0.index(r).store(p1.index(r).load() + p1.index(r + UOp.const(dtypes.index, 0)).load()).end(r))
  ctx = eligible(body, None, True)
  assert p1 in ctx
  once = image_index(ctx, body)
  assert once is not None and check(once, Stage.KERNEL) == []
  assert sum(u.op is Ops.IMAGE for u in once.toposort()) == 1 and image_index(ctx, once) is None


def test_kernel_image_one_form():
  r = rng(16, 0)
  p0, p1 = UOp.param(0, f32, 16), UOp.param(1, f32, 16)
  both = sink(p0.index(r).store(p1.image((2, 2)).index(r).load() + p1.index(r).load()).end(r))  # an image and flat
  assert_breaks_exactly(both, Stage.KERNEL, {"kernel.image_one_form"})
  two_dims = sink(p0.index(r).store(p1.image((2, 2)).index(r).load() + p1.image((1, 4)).index(r).load()).end(r))
  assert_breaks_exactly(two_dims, Stage.KERNEL, {"kernel.image_one_form"})
  same = sink(p0.index(r).store(p1.image((2, 2)).index(r).load() + p1.image((2, 2)).index(r).load()).end(r))
  assert check(same, Stage.KERNEL) == []
  # at PROGRAM: two PARAMs of one slot, one carrying the image, one flat
  ri = rng(16, 0, i32)
  img1 = UOp(Ops.PARAM, f32, (), ParamArg(1, 16, image=(2, 2)))
  mixed = sink(UOp.param(0, f32, 16).index(ri).store(img1.index(ri).load() + p1.index(ri).load()).end(ri))
  assert "kernel.image_one_form" in {v.rule for v in check(program(mixed), Stage.PROGRAM)}


def _program(body: UOp, fold: bool = True) -> UOp:
  unfolded = PatternMatcher([r for r in pm_lower_index.rules if r.name != "fold_image"], "pm_lower_index")
  return linearize_body(body, "k", Tables([pm_lower_index if fold else unfolded]))


def test_program_folds_the_view_and_no_view_is_left():
  prg = _program(_reads())
  assert check(prg, Stage.PROGRAM) == []
  params = {u.arg.slot: u.arg for u in prg.src[1].src if u.op is Ops.PARAM}
  assert params[1].image == (2, 2) and params[0].image is None
  assert not any(u.op is Ops.IMAGE for u in prg.src[1].src)
  assert_breaks_exactly(_program(_reads(), fold=False), Stage.PROGRAM, {"program.no_image_view"})


def test_program_image_param():
  r = rng(16, 0, i32)
  p1 = UOp(Ops.PARAM, f32, (), ParamArg(1, 16, image=(1, 2)))  # a 1x2 image holds 8 elements, the PARAM 16
  body = sink(UOp.param(0, f32, 16).index(r).store(p1.index(r).load()).end(r))
  assert_breaks_exactly(program(body), Stage.PROGRAM, {"kernel.image_param"})


def test_program_image_access():
  # a kernel that reads and writes one image: legal as KERNEL (a layout), not as an OpenCL 1.2 program
  p0, r = UOp.param(0, f32, 16), rng(4, 0)
  img = p0.image((1, 4))
  reads = [img.index(r * ic(4) + ic(ch)).load() for ch in range(4)]
  stores = [img.index(r * ic(4) + ic(ch)).store(reads[3 - ch]) for ch in range(4)]
  body = sink(group(*stores).end(r))
  assert check(body, Stage.KERNEL) == []
  assert "program.image_access" in {v.rule for v in check(_program(body), Stage.PROGRAM)}
  atomic = sink(img.index(r).atomic(Ops.ADD, c(1.0)).end(r))
  assert "program.image_access" in {v.rule for v in check(_program(atomic), Stage.PROGRAM)}


def _writes(channels=(0, 1, 2, 3), base_mul=4, gate=None):
  """out viewed as a (1, 4) image, written per pixel r by STOREs of the channels given, at r * base_mul + channel."""
  p0, p1, r = UOp.param(0, f32, 16), UOp.param(1, f32, 16), rng(4, 0)
  img = p0.image((1, 4))
  stores = [img.index(r * ic(base_mul) + ic(ch)).store(p1.index(r * ic(4) + ic(ch % 4)).load(), *(() if gate is None else (gate(r),)))
            for ch in channels]
  return sink(group(*stores).end(r))


def test_program_image_store_whole_pixels():
  assert check(_program(_writes()), Stage.PROGRAM) == []
  assert check(_program(_writes((2, 0, 3, 1))), Stage.PROGRAM) == []  # any order inside the group
  assert_breaks_exactly(_program(_writes((0, 1, 2))), Stage.PROGRAM, {"program.image_store"})  # a channel missing
  assert "program.image_store" in {v.rule for v in check(_program(_writes((0, 1, 2, 3), base_mul=2)), Stage.PROGRAM)}  # not per pixel
  gated = _program(_writes(gate=lambda r: r < ic(3)))
  assert "program.image_store" in {v.rule for v in check(gated, Stage.PROGRAM)}
  # four stores of one pixel, each in its own loop body: no one block writes the pixel
  p0, p1, r = UOp.param(0, f32, 16), UOp.param(1, f32, 16), rng(4, 0)
  img = p0.image((1, 4))
  apart = sink(*(img.index(ic(ch)).store(p1.index(r).load()).end(r) if ch == 0 else img.index(ic(ch)).store(c(0.0)) for ch in range(4)))
  assert "program.image_store" in {v.rule for v in check(_program(apart), Stage.PROGRAM)}


# ---- the evaluator: an image means its flat storage ----
def _transpose(dims, dt=f32):
  """out[i, j] = in[j, i] over 8x8, the input through an image of dims (None: flat)."""
  i, j = rng(8, 0), rng(8, 1)
  src = UOp.param(1, dt, 64)
  src = src if dims is None else src.image(dims)
  return sink(UOp.param(0, dt, 64).index(i * ic(8) + j).store(src.index(j * ic(8) + i).load()).end(i, j))


@pytest.mark.parametrize("dims,dt", [((4, 4), f32), ((1, 16), f32), ((16, 1), f32), ((2, 8), dtypes.float16)])
def test_evaluator_image_kernel_equals_flat_kernel(dims, dt):
  x = np.random.default_rng(1).standard_normal(64).astype(dt.np)
  flat, img = np.zeros(64, dt.np), np.zeros(64, dt.np)
  evaluate_kernel(_transpose(None, dt), [flat, x])
  evaluate_kernel(_transpose(dims, dt), [img, x])
  np.testing.assert_array_equal(img, x.reshape(8, 8).T.reshape(-1))
  np.testing.assert_array_equal(img, flat)
  evaluate_kernel(_program(_transpose(dims, dt)), [img := np.zeros(64, dt.np), x])  # the folded PROGRAM means the same
  np.testing.assert_array_equal(img, flat)


def test_evaluator_image_errors_as_flat_storage():
  r = rng(17, 0)
  over = sink(UOp.param(0, f32, 17).index(r).store(UOp.param(1, f32, 16).image((2, 2)).index(r).load()).end(r))
  with pytest.raises(EvalError, match="out of bounds"): evaluate_kernel(over, [np.zeros(17, np.float32), np.zeros(16, np.float32)])
  with pytest.raises(EvalError, match="holds 24 elements"): evaluate_kernel(_reads((2, 3)), [np.zeros(16, np.float32)] * 2)


# ---- pyrender ----
def test_pyrender_round_trip():
  img_buf = UOp(Ops.BUFFER, f32, (), BufferArg(7050, 16, image=(2, 2)))
  root = sink(_reads(), _program(_reads()), img_buf)
  src = render_module(root)
  assert "image=(2, 2, )" in src and read_graph(src) is root
  assert "image" not in render_module(sink(UOp.param(0, f32, 4)))  # flat storage is written as before images existed


# ---- lowering, renderers and runtimes ----
def _np_conv(x: np.ndarray, w: np.ndarray, pad: int) -> np.ndarray:
  n, cin, h, wd = x.shape
  cout, _, kh, kw = w.shape
  xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
  oh, ow = h + 2 * pad - kh + 1, wd + 2 * pad - kw + 1
  out = np.zeros((n, cout, oh, ow))
  for a in range(kh):
    for b in range(kw): out += np.einsum("nchw,oc->nohw", xp[:, :, a:a + oh, b:b + ow], w[:, :, a, b].astype(np.float64))
  return out


def _conv_graph():
  g = np.random.default_rng(0)
  x, w = g.standard_normal((1, 4, 6, 6)).astype(np.float32), g.standard_normal((8, 4, 3, 3)).astype(np.float32)
  root = sink(Tensor(x).conv2d(Tensor(w), padding=1).uop)
  return root, inputs_of(root), _np_conv(x, w, 1)


def _sources(root: UOp, **options) -> list[str]:
  return [k.src[0].src[2].arg.text for k in kernel_calls(lower(root, **options)["render"])]


def test_images_are_off_by_default():
  root, _, _ = _conv_graph()
  stages = lower(root, backend="opencl")
  assert not any(u.op is Ops.IMAGE for u in stages["images"].toposort())
  assert not any("image2d_t" in s for s in _sources(root, backend="opencl"))


def test_conv_with_image_inputs_on_opencl(opencl):
  from tinyspec.runtime import cpu
  from tinyspec.runtime import opencl as ocl
  root, inputs, want = _conv_graph()
  text = "\n".join(_sources(root, backend="opencl", images=True))
  # the input and the weights are read as images, the output is written flat (the kernel stores it one element at a time)
  assert text.count("read_only image2d_t data") == 2 and "read_imagef(" in text and "ts_read_image(data" in text
  assert "write_only" not in text and "__global float* restrict data0" in text
  imaged = ocl.run(root, inputs, images=True)[0]
  plain = ocl.run(root, inputs)[0]
  ref = evaluate(root, inputs)[0]
  np.testing.assert_allclose(imaged, want, rtol=1e-5, atol=1e-5)
  np.testing.assert_allclose(imaged, plain, rtol=1e-6, atol=1e-6)
  np.testing.assert_allclose(imaged, ref, rtol=1e-6, atol=1e-6)
  c_text = "\n".join(_sources(root, backend="c", images=True))
  assert "image2d_t" not in c_text  # the C stand-in: an image is its flat pointer
  np.testing.assert_allclose(cpu.run(root, inputs, images=True)[0], ref, rtol=1e-6, atol=1e-6)


def _affine_graph(rows: int = 8):
  x = np.arange(rows * 4, dtype=np.float32).reshape(rows, 4) - 7.5
  root = sink((Tensor(x) * 2 + 1).uop)
  return root, inputs_of(root), x * 2 + 1


@pytest.mark.parametrize("rows", [8, 16384])  # 16384 pixels do not fit one row of 8192: a (2, 8192) image, y is 0 and 1
def test_whole_pixel_writes_on_opencl(opencl, rows):
  from tinyspec.runtime import cpu
  from tinyspec.runtime import opencl as ocl
  root, inputs, want = _affine_graph(rows)
  unroll = (("unroll", 1),)  # the 4-wide last axis unrolled: each thread stores the four channels of a pixel
  text = "\n".join(_sources(root, backend="opencl", images=True, opts=unroll))
  assert "write_only image2d_t data0" in text and text.count("write_imagef(") == 1 and "read_only image2d_t data1" in text
  np.testing.assert_array_equal(ocl.run(root, inputs, images=True, opts=unroll)[0], want)
  np.testing.assert_array_equal(cpu.run(root, inputs, images=True, opts=unroll)[0], want)
  # without the unroll a thread stores one channel: the output stays flat, the input is still an image
  text = "\n".join(_sources(root, backend="opencl", images=True))
  assert "write_only" not in text and "read_only image2d_t data1" in text
  np.testing.assert_array_equal(ocl.run(root, inputs, images=True)[0], want)


def test_an_image_buffer_is_an_image_without_the_option(opencl):
  from tinyspec.runtime import opencl as ocl
  x = np.arange(32, dtype=np.float32)
  b = UOp(Ops.BUFFER, f32, (), BufferArg(7060, 32, image=(4, 2)))
  flipped = b.reshape((4, 8)).flip((True, False)).reshape((32,))  # row r of the result reads row 3 - r: pixels of every y
  root = sink(flipped * c(3.0).reshape((1,)).expand((32,)).reshape((32,)))
  assert check(root, Stage.TENSOR) == []
  text = "\n".join(_sources(root, backend="opencl"))
  assert "read_only image2d_t" in text and "% 2" in text  # read through its own dims: rows of 2 pixels
  np.testing.assert_array_equal(ocl.run(root, {7060: x})[0], x.reshape(4, 8)[::-1].reshape(-1) * 3)


def test_storage_given_twice_stays_flat():
  # the same buffer at slots 1 and 2: an image is a copy made for the launch, so neither slot becomes one
  r = rng(16, 0)
  body = sink(UOp.param(0, f32, 16).index(r).store(UOp.param(1, f32, 16).index(r).load() + UOp.param(2, f32, 16).index(r).load()).end(r))
  out, x = buf(16, id=7070), buf(16, id=7071)
  g = sink(out.after(UOp(Ops.CALL, src=(body, out, x, x))))
  stages = lower(g, passes=[p for p in PASSES if p.stage_in is not Stage.TENSOR],
                 backend="opencl", images=True)
  assert not any(u.op is Ops.IMAGE for u in stages["images"].toposort())
  one = sink(out.after(UOp(Ops.CALL, src=(body, out, x, buf(16, id=7072)))))
  stages = lower(one, passes=[p for p in PASSES if p.stage_in is not Stage.TENSOR],
                 backend="opencl", images=True)
  assert sum(u.op is Ops.IMAGE for u in stages["images"].toposort()) == 2


def test_cli_lower_and_run_with_images(tmp_path, capsys, opencl):
  from tinyspec.cli import main
  f = tmp_path / "scaled.py"
  f.write_text("import numpy as np\nfrom tinyspec.frontend import Tensor\nfrom tinyspec.frontend.tensor import inputs_of\n"
               "from tinyspec.uop import UOp, Ops\n"
               "_root = UOp(Ops.SINK, src=((Tensor(np.arange(16, dtype=np.float32)) * 3).uop,))\n"
               "def graph(): return _root\ndef inputs(): return inputs_of(_root)\n")
  assert main(["lower", str(f), "--backend", "opencl", "--images"]) == 0
  out = capsys.readouterr().out
  assert "images:" in out and "read_only image2d_t data1" in out
  assert main(["lower", str(f), "--backend", "opencl"]) == 0
  assert "image2d_t" not in capsys.readouterr().out
  assert main(["run", str(f), "--backend", "opencl", "--images"]) == 0
  assert "[ 0.  3.  6.  9. 12. 15. 18. 21. 24. 27. 30. 33. 36. 39. 42. 45.]" in capsys.readouterr().out


def test_float16_images_on_opencl(opencl):
  # HALF_FLOAT images: read_imagef gives the half's value as a float, write_imagef of a value already rounded to half is exact
  from tinyspec.runtime import cpu
  from tinyspec.runtime import opencl as ocl
  x = ((np.arange(32, dtype=np.float16) - 7.5) * np.float16(0.3)).reshape(8, 4)
  root = sink((Tensor(x) * 2 + 1).uop)
  inputs, unroll = inputs_of(root), (("unroll", 1),)
  want = (x.astype(np.float32) * np.float16(2)).astype(np.float16).astype(np.float32) + 1  # rounded to half after each op
  want = want.astype(np.float16)
  text = "\n".join(_sources(root, backend="opencl", images=True, opts=unroll))
  assert "write_only image2d_t data0" in text and "read_only image2d_t data1" in text and "write_imagef(" in text
  got = ocl.run(root, inputs, images=True, opts=unroll)[0]
  assert got.dtype == np.float16
  np.testing.assert_array_equal(got, want)
  np.testing.assert_array_equal(got, evaluate(root, inputs)[0])
  np.testing.assert_array_equal(cpu.run(root, inputs, images=True, opts=unroll)[0], want)
