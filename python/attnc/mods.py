"""Score and mask mods written in Python, traced into attn IR.

A score mod is a function ``(score, b, h, q_idx, kv_idx) -> score`` and a
mask mod a function ``(b, h, q_idx, kv_idx) -> bool``, as in
FlexAttention. Called once on tracing values, they record the arith/math
ops that become the ``score`` and ``mask`` regions of an ``attn.attention``
(docs/variants.md): ``attention_ir`` returns the whole kernel function,
which is what a spec's ``custom_ir`` holds (its hash is part of the cache
key, so the same function traced twice is one kernel).

What a mod may use:

- ``+ - * /`` and unary ``-`` on the score (f32), ``+ - * // %`` on the
  indices (``//`` and ``%`` truncate toward zero, as C does: indices are
  never negative in a mask), Python numbers as constants;
- comparisons (``< <= > >= == !=``), giving booleans, and ``&``, ``|``,
  ``~`` on booleans (Python's ``and``/``or``/``not`` and ``if`` cannot be
  traced: use ``where``);
- ``where(cond, a, b)``, ``maximum``, ``minimum``, ``exp``, ``log``,
  ``tanh``, ``sqrt``, ``abs``, and ``to_float(index)``.

Indices mixed with floats are converted to f32 (exact below 2**24).
Per-head data (ALiBi slopes) must come from the indices or be written as
constants: regions take no tensors.

Importing this module needs neither torch nor a GPU nor libattnc.so.
"""

import math

from ._capi import AttncError

__all__ = [
    "TraceError", "abs", "attention_ir", "bundle_spec", "exp", "log", "maximum", "minimum",
    "score_region", "mask_region", "sqrt", "tanh", "to_float", "where",
]

_builtin_abs = abs


class TraceError(AttncError, ValueError):
    """A mod used something that cannot be traced into a region."""


class _Tracer:
    """The ops of one region, as MLIR text lines, and constant reuse."""

    def __init__(self):
        self.lines = []
        self.consts = {}
        self.count = 0

    def fresh(self):
        self.count += 1
        return "%%t%d" % self.count

    def emit(self, text_fn, type_):
        name = self.fresh()
        self.lines.append("    %s = %s" % (name, text_fn))
        return _Value(self, name, type_)

    def const(self, value, type_):
        key = (type_, repr(value))
        if key not in self.consts:
            if type_ == "f32":
                v = float(value)
                if not math.isfinite(v):
                    text = "0x7F800000" if v > 0 else "0xFF800000"
                    if math.isnan(v):
                        raise TraceError("a NaN constant in a mod")
                else:
                    text = repr(v)
            elif type_ == "index":
                text = str(int(value))
            else:
                text = "true" if value else "false"
            self.consts[key] = self.emit(
                "arith.constant %s : %s" % (text, type_), type_)
        return self.consts[key]


def _lift(tracer, x, type_):
    """x as a traced value of `type_` (a constant for Python numbers)."""
    if isinstance(x, _Value):
        if x.tracer is not tracer:
            raise TraceError("a value of another trace")
        if x.type == type_:
            return x
        if x.type == "index" and type_ == "f32":
            return to_float(x)
        raise TraceError("a %s where a %s is needed" % (x.type, type_))
    if isinstance(x, bool):
        if type_ != "i1":
            raise TraceError("a Python bool where a %s is needed" % type_)
        return tracer.const(x, "i1")
    if isinstance(x, int):
        return tracer.const(x, type_ if type_ != "i1" else "index")
    if isinstance(x, float):
        if type_ == "index":
            raise TraceError("a float constant %r with an index" % x)
        return tracer.const(x, "f32")
    raise TraceError("cannot trace a %s" % type(x).__name__)


def _common(a, b):
    """The type two operands meet in: f32 if either is a float."""
    ta = a.type if isinstance(a, _Value) else (
        "f32" if isinstance(a, float) else "index")
    tb = b.type if isinstance(b, _Value) else (
        "f32" if isinstance(b, float) else "index")
    if "i1" in (ta, tb):
        if ta != tb:
            raise TraceError("a boolean in arithmetic")
        return "i1"
    return "f32" if "f32" in (ta, tb) else "index"


_FLOAT_OPS = {"add": "arith.addf", "sub": "arith.subf", "mul": "arith.mulf",
              "div": "arith.divf"}
_INDEX_OPS = {"add": "arith.addi", "sub": "arith.subi", "mul": "arith.muli",
              "floordiv": "arith.divsi", "mod": "arith.remsi"}
_FLOAT_CMP = {"lt": "olt", "le": "ole", "gt": "ogt", "ge": "oge",
              "eq": "oeq", "ne": "une"}
_INDEX_CMP = {"lt": "slt", "le": "sle", "gt": "sgt", "ge": "sge",
              "eq": "eq", "ne": "ne"}


class _Value:
    """A traced SSA value of type f32, index or i1."""

    __slots__ = ("tracer", "name", "type")

    def __init__(self, tracer, name, type_):
        self.tracer, self.name, self.type = tracer, name, type_

    def _binary(self, other, op, swap=False):
        t = _common(self, other)
        a, b = _lift(self.tracer, self, t), _lift(self.tracer, other, t)
        if swap:
            a, b = b, a
        table = _FLOAT_OPS if t == "f32" else _INDEX_OPS
        if t == "i1" or op not in table:
            raise TraceError("'%s' is not traced for %s values" % (op, t))
        return self.tracer.emit("%s %s, %s : %s" % (table[op], a.name, b.name,
                                                    t), t)

    def __add__(self, o): return self._binary(o, "add")
    def __radd__(self, o): return self._binary(o, "add", swap=True)
    def __sub__(self, o): return self._binary(o, "sub")
    def __rsub__(self, o): return self._binary(o, "sub", swap=True)
    def __mul__(self, o): return self._binary(o, "mul")
    def __rmul__(self, o): return self._binary(o, "mul", swap=True)
    def __truediv__(self, o):
        return _lift(self.tracer, self, "f32")._binary(o, "div")

    def __rtruediv__(self, o):
        return _lift(self.tracer, self, "f32")._binary(o, "div", swap=True)

    def __floordiv__(self, o): return self._binary(o, "floordiv")
    def __mod__(self, o): return self._binary(o, "mod")

    def __neg__(self):
        if self.type == "f32":
            return self.tracer.emit("arith.negf %s : f32" % self.name, "f32")
        return 0 - self

    def _compare(self, other, op):
        t = _common(self, other)
        if t == "i1":
            raise TraceError("comparing booleans: use & | ~")
        a, b = _lift(self.tracer, self, t), _lift(self.tracer, other, t)
        if t == "f32":
            text = "arith.cmpf %s, %s, %s : f32" % (_FLOAT_CMP[op], a.name,
                                                    b.name)
        else:
            text = "arith.cmpi %s, %s, %s : index" % (_INDEX_CMP[op], a.name,
                                                      b.name)
        return self.tracer.emit(text, "i1")

    def __lt__(self, o): return self._compare(o, "lt")
    def __le__(self, o): return self._compare(o, "le")
    def __gt__(self, o): return self._compare(o, "gt")
    def __ge__(self, o): return self._compare(o, "ge")
    def __eq__(self, o): return self._compare(o, "eq")
    def __ne__(self, o): return self._compare(o, "ne")
    __hash__ = None

    def _logic(self, other, op):
        if self.type != "i1":
            raise TraceError("'%s' needs booleans (comparisons)" % op)
        b = _lift(self.tracer, other, "i1")
        return self.tracer.emit("%s %s, %s : i1" % (op, self.name, b.name),
                                "i1")

    def __and__(self, o): return self._logic(o, "arith.andi")
    def __rand__(self, o): return self._logic(o, "arith.andi")
    def __or__(self, o): return self._logic(o, "arith.ori")
    def __ror__(self, o): return self._logic(o, "arith.ori")

    def __invert__(self):
        return self._logic(True, "arith.xori")

    def __bool__(self):
        raise TraceError("a traced value has no truth value while tracing: "
                         "use where(cond, a, b), & | ~ instead of if/and/or/"
                         "not")


def _tracer_of(*xs):
    for x in xs:
        if isinstance(x, _Value):
            return x.tracer
    return None


def to_float(x):
    """An index as f32."""
    if not isinstance(x, _Value):
        return float(x)
    if x.type == "f32":
        return x
    if x.type != "index":
        raise TraceError("to_float of a boolean")
    i64 = x.tracer.emit("arith.index_cast %s : index to i64" % x.name, "i64")
    return x.tracer.emit("arith.sitofp %s : i64 to f32" % i64.name, "f32")


def where(cond, a, b):
    """a where cond holds, else b (both of one type)."""
    tracer = _tracer_of(cond, a, b)
    if tracer is None:
        return a if cond else b
    c = _lift(tracer, cond, "i1")
    t = _common(a, b)
    x, y = _lift(tracer, a, t), _lift(tracer, b, t)
    return tracer.emit("arith.select %s, %s, %s : %s" % (c.name, x.name,
                                                         y.name, t), t)


def _minmax(a, b, fop, iop, pyfn):
    tracer = _tracer_of(a, b)
    if tracer is None:
        return pyfn(a, b)
    t = _common(a, b)
    x, y = _lift(tracer, a, t), _lift(tracer, b, t)
    op = fop if t == "f32" else iop
    return tracer.emit("%s %s, %s : %s" % (op, x.name, y.name, t), t)


def maximum(a, b):
    return _minmax(a, b, "arith.maximumf", "arith.maxsi", max)


def minimum(a, b):
    return _minmax(a, b, "arith.minimumf", "arith.minsi", min)


def _unary(name, pyfn):
    def fn(x):
        if not isinstance(x, _Value):
            return pyfn(x)
        v = _lift(x.tracer, x, "f32")
        return x.tracer.emit("math.%s %s : f32" % (name, v.name), "f32")
    fn.__name__ = name
    fn.__doc__ = "math.%s of an f32 (indices are converted)." % name
    return fn


exp = _unary("exp", math.exp)
log = _unary("log", math.log)
tanh = _unary("tanh", math.tanh)
sqrt = _unary("sqrt", math.sqrt)
abs = _unary("absf", _builtin_abs)  # noqa: A001 (the mods' abs)


def _region(fn, args, result_type, what):
    tracer = _Tracer()
    values = [_Value(tracer, "%" + n, t) for n, t in args]
    out = fn(*values)
    if result_type == "i1" and isinstance(out, bool):
        out = tracer.const(out, "i1")
    if not isinstance(out, _Value) and result_type == "f32" and isinstance(
            out, (int, float)):
        out = tracer.const(float(out), "f32")
    if not isinstance(out, _Value):
        raise TraceError("the %s returned a %s, not a traced value" %
                         (what, type(out).__name__))
    out = _lift(tracer, out, result_type)
    header = ", ".join("%%%s: %s" % (n, t) for n, t in args)
    body = "\n".join(tracer.lines)
    return ("  ^bb0(%s):\n%s%s    attn.yield %s : %s" %
            (header, body, "\n" if body else "", out.name, result_type))


def score_region(score_mod):
    """The score region's block (text) of score_mod(score, b, h, q_idx,
    kv_idx)."""
    return _region(score_mod, [("s", "f32"), ("b", "index"), ("h", "index"),
                               ("i", "index"), ("j", "index")], "f32",
                   "score_mod")


def mask_region(mask_mod):
    """The mask region's block (text) of mask_mod(b, h, q_idx, kv_idx)."""
    return _region(mask_mod, [("b", "index"), ("h", "index"), ("i", "index"),
                              ("j", "index")], "i1", "mask_mod")


def attention_ir(*, heads, kv_heads, head_dim, dtype="bf16", causal=False,
                 window=None, softcap=None, scale=None, return_lse=False,
                 score_mod=None, mask_mod=None, sinks=False,
                 name="attention_mod"):
    """The kernel function (MLIR text) of an attention with these options
    and mods: what KernelSpec.custom_ir holds. window: (left, right), -1 or
    None for an unbounded side (with causal, (left, -1) means (left, 0)).
    sinks: the function takes one f32 logit per query head after v (the
    launch's `sinks` tensor), merged after the mods have masked and scored
    every key."""
    elt = {"bf16": "bf16", "fp16": "f16"}.get(dtype)
    if elt is None:
        raise TraceError("dtype must be bf16 or fp16, not %r" % (dtype,))
    t = lambda h: "tensor<?x%dx?x%dx%s>" % (h, head_dim, elt)  # noqa: E731
    lse_t = "tensor<?x%dx?xf32>" % heads
    attrs = []
    if causal:
        attrs.append("causal")
    if scale is not None:
        attrs.append("scale = %r : f32" % float(scale))
    if softcap:
        attrs.append("softcap = %r : f32" % float(softcap))
    if window is not None:
        from ._attention import window_bounds

        left, right = window_bounds(window)
        if causal and left >= 0 and right < 0:
            right = 0
        attrs.append("window = #attn.window<%d, %d>" % (left, right))
    results = t(heads) + (", " + lse_t if return_lse else "")
    outs = "%o, %lse" if return_lse else "%o"
    sinks_t = "tensor<%dxf32>" % heads
    sinks_arg = ", %%sinks: %s" % sinks_t if sinks else ""
    sinks_operand = " sinks(%%sinks : %s)" % sinks_t if sinks else ""
    text = ["func.func @%s(%%q: %s, %%k: %s, %%v: %s%s) -> (%s) {" %
            (name, t(heads), t(kv_heads), t(kv_heads), sinks_arg, results),
            "  %s = attn.attention %%q, %%k, %%v%s%s" %
            (outs, sinks_operand,
             (" {" + ", ".join(attrs) + "}") if attrs else ""),
            "      : %s, %s, %s -> %s" % (t(heads), t(kv_heads), t(kv_heads),
                                          results)]
    regions = []
    if score_mod is not None:
        regions.append("score {\n" + score_region(score_mod) + "\n  }")
    if mask_mod is not None:
        regions.append("mask {\n" + mask_region(mask_mod) + "\n  }")
    if regions:
        text.append("  " + " ".join(regions))
    text += ["  return %s : %s" % (outs, results), "}"]
    return "\n".join(text) + "\n"


def bundle_spec(*, heads, kv_heads, head_dim, dtype="bf16", arch="sm_90a",
                causal=False, window=None, softcap=None, scale=None,
                return_lse=False, score_mod=None, mask_mod=None,
                sinks=False):
    """The spec (a dict for the "specs" list of `attnc bundle --specs`) of
    the kernel attnc.attention(..., score_mod=, mask_mod=) asks for with
    these options: its custom_ir is the mods' trace."""
    from ._attention import window_bounds

    left, right = window_bounds(window)
    extra = {"sinks": True} if sinks else {}
    return {
        **extra,
        "op": "attention_fwd", "dtype": dtype, "heads": int(heads),
        "kv_heads": int(kv_heads), "head_dim": int(head_dim),
        "causal": bool(causal), "window_left": left, "window_right": right,
        "softcap": float(softcap or 0.0),
        "scale": None if scale is None else float(scale),
        "has_lse": bool(return_lse), "arch": arch,
        "custom_ir": attention_ir(
            heads=heads, kv_heads=kv_heads, head_dim=head_dim, dtype=dtype,
            causal=causal, window=window, softcap=softcap, scale=scale,
            return_lse=return_lse, score_mod=score_mod, mask_mod=mask_mod,
            sinks=sinks),
    }
