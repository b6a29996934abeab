"""Small functions in the style of PyTorch's Dynamo unit tests (`@make_test` cases).

Each function takes tensors only (as `torch._dynamo.testing.standard_test`
calls them: one `torch.randn(10, 10)` per parameter) and exercises one
thing Dynamo handles: arithmetic, slicing and views, constants, Python
containers, control flow on constants and shapes, builtins, closures,
itertools, namedtuples, numpy interop, graph breaks. Written for this
project in that style (PyTorch's own test text is not copied); read by
`benchmarks/dynamo_corpus_runs.py`, which runs each through
`compile_model(..., run_program=True)`.
"""

# ruff: noqa: E731
from __future__ import annotations

import collections
import functools
import itertools
import math
import operator

import numpy as np
import torch
import torch.nn.functional as F

GLOBAL_T = torch.ones(10, 10)
GLOBAL_FLAG = True
torch.manual_seed(0)  # the same weights in the fresh process that imports this module again
GLOBAL_LINEAR = torch.nn.Linear(10, 10)
Point = collections.namedtuple("Point", ["x", "y"])
clamp01 = functools.partial(torch.clamp, min=0.0, max=1.0)


def _helper(a, b, scale=2.0):
    return (a - b) * scale


class Holder:
    k = 3


# --- arithmetic and ops --------------------------------------------------------


def add(a, b):
    return a + b


def sub_mul(a, b, c):
    return a - b * c


def add_alpha_inplace_copy(a, b):
    t = a.clone()
    return t.add_(b, alpha=3.0)


def addcmul(a, b, c):
    return torch.addcmul(a, b, c, value=0.5)


def float_constant(a, b):
    return a * 2.5 - b / 3.0 + 1


def int_constant(a):
    x, y, z = 4, 5, 6
    return a + x * y - z


def math_constants(a):
    return a * math.pi + math.sqrt(2.0)


def partial_clamp(a, b):
    return clamp01(a * b)


def torch_functions(a):
    return torch.sigmoid(a) + torch.tanh(a) - torch.relu(a)


def method_calls(a, b):
    return a.sub(b).mul(2).abs().sum(dim=0)


def bound_method(a, b):
    f = a.mul
    return f(b)


def star_args(a, b):
    args = (a, b)
    return torch.sub(*args)


def star_kwargs(a, b):
    kwargs = {"input": a, "other": b}
    return torch.sub(**kwargs)


def reductions(a):
    return a.sum(), a.mean(dim=1), a.amax(dim=0)


def matmul(a, b):
    return a @ b + torch.mm(b, a)


def softmax_logsoftmax(a):
    return F.softmax(a, dim=-1) + F.log_softmax(a, dim=0)


def pooling(a, b):
    return F.avg_pool2d(a.unsqueeze(0) * b.unsqueeze(0), kernel_size=2)


def where_mask(a, b):
    return torch.where(a > 0, a, b)


def comparison_ops(a, b):
    return (a > b).float() + (a <= b).float() * 2


def cumulative(a):
    return torch.cumsum(a, dim=0) - torch.cumprod(a.sigmoid(), dim=1)


def cat_stack(a, b):
    return torch.cat([a, b], dim=0), torch.stack((a, b))


def cat_kwargs(a, b):
    return torch.cat(tensors=[a, b], dim=1)


def global_tensor(a):
    return a + GLOBAL_T


def global_module(a):
    return GLOBAL_LINEAR(a)


def global_flag(a):
    if GLOBAL_FLAG:
        return a * 2
    return a


def helper_call(a, b):
    return _helper(a, b) + _helper(b, a, scale=0.5)


def lambda_call(a):
    f = lambda t: t * 3 + 1
    return f(a)


def inner_function(a, b):
    def inner(x):
        return x * b

    return inner(a)


def operator_module(a, b):
    return operator.add(a, b), operator.mul(a, 2)


def device_constant(a):
    return a + torch.ones(10, device=torch.device("cpu"))


def dtype_conversion(a):
    return a.to(torch.float64).sum().to(torch.float32), a.int()


def new_tensors(a):
    return torch.zeros_like(a) + torch.ones(10, 10) + torch.full((10, 10), 0.5)


def arange_index(a):
    return a[torch.arange(5)]


# --- slicing, views and aliasing -------------------------------------------------


def slice_index(a):
    return a[3]


def slice_prefix(a):
    return a[:4]


def slice_suffix(a):
    return a[6:]


def slice_middle(a):
    return a[2:7]


def slice_step(a):
    return a[::3]


def slice_2d(a):
    return a[1:, :5]


def unsqueeze_slice(a):
    return torch.unsqueeze(a, 0)[:, 1:]


def transpose_view(a):
    return a.t()


def view_reshape(a):
    return a.view(5, 20), a.reshape(-1)


def permute_shape(a):
    shape = a.size()[:-1] + (2, 5)
    return a.view(*shape).permute(0, 2, 1)


def unpack_slices(a):
    x, y = a[:5], a[5:]
    return x - y


def unpack_list(a):
    parts = [a[:5], a[5:]]
    x, y = parts
    return x * y


def return_input(a, b):
    return a + b, a


def chunk_split(a):
    x, y = a.chunk(2)
    return x + y, a.split(3)


def view_of_intermediate(a, b):
    c = a + b
    return c.view(100), c[0]


def expand_view(a):
    return a[:, :1].expand(10, 10) + 1


def diagonal(a):
    return torch.diagonal(a) * 2


# --- Python containers -----------------------------------------------------------


def tuple_return(a, b):
    return (a - b, b - a, a, b)


def list_return(a, b):
    return [a + 1, b + 1]


def dict_return(a):
    return {"x": a + 1, "y": a * 2}


def dict_ops(a):
    d = {"a": 1, "b": 2}
    d.setdefault("c", 3)
    d.update(e=4)
    return a * d["c"] * d["e"]


def dict_items(a, b):
    d = {"x": a, "y": b}
    out = a
    for _key, v in d.items():
        out = out + v
    return out


def list_ops(a, b):
    items = [a, b]
    items.append(a * b)
    items.extend([a, b])
    items.pop()
    return sum(items)


def deque_ops(a, b):
    d = collections.deque([a, b])
    d.appendleft(a + 1)
    d.rotate(1)
    return list(d)


def ordered_dict(a):
    d = collections.OrderedDict()
    d["x"] = a
    d["y"] = a + 1
    return d["y"] - d["x"]


def set_membership(a):
    s = {1, 2, 3}
    if 2 in s:
        return a + len(s)
    return a


def namedtuple_access(a, b):
    p = Point(a, b)
    return p.x * p.y + p[0]


def namedtuple_return(a, b):
    return Point(a + 1, b - 1)


def namedtuple_replace(a, b):
    p = Point(a, b)
    q = p._replace(x=b)
    return q.x + q.y


def nested_structure(a, b):
    return {"pair": (a, b), "list": [a + b, {"deep": a * b}]}


def len_builtin(a):
    return a + len(a) + len([1, 2, 3])


def enumerate_zip(a, b):
    out = a
    for i, (x, y) in enumerate(zip([a, b], [b, a])):
        out = out + x * y * i
    return out


def itertools_product(a, b):
    out = a
    for x, k in itertools.product([a, b], [1, 2]):
        out = out + x * k
    return out


def itertools_chain(a, b):
    out = a
    for x in itertools.chain([a, b], [1, 2]):
        out = out + x
    return out


def builtins_minmax(a, b):
    return max(a.size(0), 3) * a + min(2, b.size(1)) * b


def isinstance_check(a):
    if isinstance(a, torch.Tensor):
        return a + 1
    return a


def hasattr_class(a):
    if hasattr(Holder, "k"):
        a = a + Holder.k
    if hasattr(Holder, "missing"):
        a = a * 0
    return a


def range_loop(a, b):
    out = a + b
    for _ in range(a.size(0) // 2):
        out = out / (b.abs() + 1)
    return out


def functools_reduce(a, b):
    return functools.reduce(operator.add, [a, b, a * b])


# --- control flow ----------------------------------------------------------------


def if_on_constant(a, b):
    c, d = 2, 3
    if c > d:
        return a - b
    return b - a


def if_on_shape(a):
    if a.shape[0] > 5:
        return a * 2
    return a


def if_on_dtype(a, b):
    if a.dtype == torch.float32:
        return a + b
    return a - b


def if_is_none(a, b):
    if a is not None and b is not None:
        return a * b
    return a


def while_constant(a):
    i = 0
    while i < 3:
        a = a + 1
        i += 1
    return a


def ternary(a, b):
    return a if a.dim() == 2 else b


def finfo_iinfo(a, b):
    if torch.iinfo(torch.int32).bits == 32:
        return torch.finfo(a.dtype).eps * b + a
    return a


def onnx_export_check(a, b):
    if torch.onnx.is_in_onnx_export():
        return a - 1
    return b + 1


def no_grad_block(a, b):
    with torch.no_grad():
        c = a * b
    return c + 1


def enable_grad_block(a):
    with torch.enable_grad():
        return a * 2


# --- constants built in the function ---------------------------------------------


def tensor_from_range(a):
    return a + torch.tensor(range(10))


def tensor_from_list(a):
    return a * torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0])


def numpy_constant(a):
    return a + np.float32(2.0)


def numpy_iinfo(a):
    return a + np.iinfo(np.int16).max


# --- numpy interop -----------------------------------------------------------------


def numpy_roundtrip(a):
    return torch.from_numpy(np.sin(a.numpy()) * 2)


def numpy_result(a, b):
    return np.add(a.numpy(), b.numpy())


# --- graph breaks ------------------------------------------------------------------


def graph_break_print(a):
    b = a * 2
    print("", end="")
    return b + 1


def graph_break_shape_print(a):
    b = a + 1
    print(b.shape, end="\r")
    return b.sum()


def graph_break_item(a):
    if a.sum().item() > 0:
        return a + 1
    return a - 1


def graph_break_data_dependent(a, b):
    c = a + b
    if c.mean() > 0:
        return c * 2
    return c / 2
