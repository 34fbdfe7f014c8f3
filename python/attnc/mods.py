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

Captured tensors: a mod may index tensors it reads from its closure, its
globals or its default arguments (ALiBi slopes ``slopes[h]``, document ids
``doc[b, q_idx]``, a bias table ``bias[h, q_idx - kv_idx + S - 1]``), as
FlexAttention's mods do. ``t[i0, ..., i_{r-1}]`` takes exactly one index per
dimension, each a traced index or a Python int >= 0 (no slices, no negative
indices); a float tensor's element is an f32 value, an integer tensor's an
index, a bool tensor's a boolean. The kernel takes the tensors as arguments
(``captures(...)`` of the ``attn.attention``; every region lists them all
as trailing block arguments), in the order the trace first indexes them.
Their dtype and rank are part of the trace (all dimensions are dynamic, so
one kernel serves every shape); their values and shapes are read on every
launch, so rebinding a captured variable to another tensor of the same
dtype and rank launches the same kernel with the new tensor. Supported:
float32, float16, bfloat16, int32, int64, int8, uint8 and bool, rank 1 to
4, at most 8 tensors. The kernel does no bounds checks (like FlexAttention):
an index outside the tensor reads outside it. Tensors reached another way
(an attribute, a dict, a list) cannot be captured: bind them to a variable
the mod reads. Python numbers a mod reads are constants of its trace.

Importing this module needs neither torch nor a GPU nor libattnc.so; a
tensor is anything with ``data_ptr()``, ``dtype``, ``shape`` and
``stride()``.
"""

import collections
import math
import types
import weakref

from ._capi import AttncError

__all__ = [
    "Capture", "MAX_CAPTURES", "ModTrace", "TraceError", "abs", "attention_ir",
    "bundle_spec", "exp", "log", "mask_region", "maximum", "minimum",
    "score_region", "sqrt", "tanh", "tensor_like", "to_float", "trace_mods",
    "where",
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
        # (capture number, index names) -> the element read, so that a
        # region reads an element once however often the mod indexes it.
        self.reads = {}

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

    def __index__(self):
        # Reached when a traced index subscripts a list, a tuple or a
        # tensor that is not captured (and by int(), range()).
        raise TraceError("a traced value cannot be used as a Python int: "
                         "only captured tensors (read from the mod's "
                         "closure, globals or defaults) take traced indices")


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


# --- captured tensors --------------------------------------------------------

# At most this many captured tensors per kernel (the runtime's limit).
MAX_CAPTURES = 8

# str(dtype) -> (element type in the IR and the ABI, how an element becomes
# a traced value: "f32" as it is, "extf" widened to f32, "index" through
# index_cast, "s8"/"u8" sign/zero extended to i32 then index_cast, "bool"
# zero extended, then compared with 0).
_CAPTURE_DTYPES = {
    "torch.float32": ("f32", "f32"),
    "torch.float16": ("f16", "extf"),
    "torch.bfloat16": ("bf16", "extf"),
    "torch.int32": ("i32", "index"),
    "torch.int64": ("i64", "index"),
    "torch.int8": ("i8", "s8"),
    "torch.uint8": ("i8", "u8"),
    "torch.bool": ("i8", "bool"),
}
_SUPPORTED = ("float32, float16, bfloat16, int32, int64, int8, uint8 or "
              "bool")


def _dtype_name(dtype):
    name = str(dtype)
    return name if name.startswith("torch.") else "torch." + name


def _capture_kind(dtype, what):
    kind = _CAPTURE_DTYPES.get(_dtype_name(dtype))
    if kind is not None:
        return kind
    name = _dtype_name(dtype)
    if name == "torch.float64":
        hint = "cast it to float32 (t.float()) before the call"
    elif name.startswith("torch.float") or name.startswith("torch.complex"):
        hint = "cast it to float32"
    else:
        hint = "cast it to int32"
    raise TraceError("%s has dtype %s; a captured tensor must be %s: %s"
                     % (what, dtype, _SUPPORTED, hint))


def _rank(t):
    shape = getattr(t, "shape", None)
    return len(shape) if shape is not None else int(t.dim())


def _is_tensor(x):
    """Whether a value a mod reads is a tensor it may capture (duck-typed:
    data_ptr(), dtype, stride(), and shape or dim())."""
    if isinstance(x, (type, types.ModuleType, _Value, _Captured)):
        return False
    try:
        return (callable(getattr(x, "data_ptr", None))
                and hasattr(x, "dtype")
                and callable(getattr(x, "stride", None))
                and (hasattr(x, "shape") or callable(getattr(x, "dim",
                                                             None))))
    except Exception:  # a property that raises: not a tensor
        return False


class _TensorLike:
    """A stand-in for a tensor of a dtype and shape (tensor_like())."""

    __slots__ = ("dtype", "shape")

    def __init__(self, dtype, shape):
        self.dtype, self.shape = dtype, tuple(int(x) for x in shape)

    def dim(self):
        return len(self.shape)

    def stride(self):
        out, n = [], 1
        for size in reversed(self.shape):
            out.insert(0, n)
            n *= max(size, 1)
        return tuple(out)

    def data_ptr(self):
        return 0

    def __repr__(self):
        return "tensor_like(%s, %s)" % (self.dtype, self.shape)


def tensor_like(dtype, shape):
    """An object a mod may capture in place of a tensor of this dtype
    (a torch dtype or its name, e.g. "int32") and shape, to trace a mod
    (attention_ir, bundle_spec) without torch or the data. A trace depends
    only on the dtype and rank (and on the shape when the mod reads it),
    so the kernel is the one a launch with the real tensor uses."""
    name = _dtype_name(dtype)
    _capture_kind(name, "tensor_like")
    return _TensorLike(name, shape)


# One captured tensor of a trace: its block argument name ("c0"), tensor
# type, element type (the ABI's dtype string), rank and the variable the
# mod read it from.
Capture = collections.namedtuple("Capture",
                                 "name type element rank variable")


class _AttributeTraceError(TraceError, AttributeError):
    """An attribute of a captured tensor that a mod cannot read (an
    AttributeError too, so that hasattr() says False)."""


class _Captured:
    """What a mod reads in place of a tensor while it is traced: indexing
    it reads one element in the kernel."""

    __slots__ = ("_state", "_tensor", "_variable", "_number", "_shape_read",
                 "_touched")

    def __init__(self, state, tensor, variable):
        self._state, self._tensor, self._variable = state, tensor, variable
        self._number = None  # its capture number, once indexed
        self._shape_read = False  # the trace depends on its shape
        self._touched = False  # the trace depends on its dtype and rank

    def _what(self):
        return "captured tensor %r" % self._variable

    def __getitem__(self, key):
        state = self._state
        tracer = state.tracer
        if tracer is None:
            raise TraceError("%s indexed outside a trace" % self._what())
        tensor = self._tensor
        elt, read = _capture_kind(tensor.dtype, self._what())
        rank = _rank(tensor)
        if not 1 <= rank <= 4:
            raise TraceError("%s has %d dimensions; a captured tensor has 1 "
                             "to 4" % (self._what(), rank))
        key = key if isinstance(key, tuple) else (key,)
        if len(key) != rank:
            raise TraceError(
                "%s has %d dimension%s but is indexed with %d: index every "
                "dimension, t[%s], each with a traced index or an int >= 0"
                % (self._what(), rank, "s" if rank > 1 else "", len(key),
                   ", ".join("i%d" % d for d in range(rank))))
        names = []
        for d, x in enumerate(key):
            if isinstance(x, _Value):
                if x.tracer is not tracer:
                    raise TraceError("a value of another trace")
                if x.type != "index":
                    raise TraceError(
                        "%s: index %d is a %s value; an index is a traced "
                        "index (b, h, q_idx, kv_idx and integer arithmetic "
                        "on them) or an int" % (self._what(), d,
                                                {"i1": "boolean"}.get(
                                                    x.type, x.type)))
                names.append(x.name)
                continue
            if isinstance(x, slice) or x is Ellipsis or x is None:
                raise TraceError(
                    "%s: index %d is %r; slices, ... and None are not "
                    "traced: index one element per dimension"
                    % (self._what(), d, x))
            if isinstance(x, bool) or not hasattr(type(x), "__index__"):
                raise TraceError("%s: index %d is a %s; an index is a traced "
                                 "index or an int" % (self._what(), d,
                                                      type(x).__name__))
            value = x.__index__()
            if value < 0:
                raise TraceError(
                    "%s: index %d is %d; negative indices do not wrap in the "
                    "kernel: write the index from the start (size - %d)"
                    % (self._what(), d, value, -value))
            names.append(tracer.const(value, "index").name)
        number = state.capture(self)
        self._touched = True
        memo = (number, tuple(names))
        out = tracer.reads.get(memo)
        if out is None:
            ttype = _tensor_type(elt, rank)
            x = tracer.emit("tensor.extract %%c%d[%s] : %s"
                            % (number, ", ".join(names), ttype), elt)
            if read == "extf":
                x = tracer.emit("arith.extf %s : %s to f32" % (x.name, elt),
                                "f32")
            elif read in ("s8", "u8", "bool"):
                op = "arith.extsi" if read == "s8" else "arith.extui"
                x = tracer.emit("%s %s : i8 to i32" % (op, x.name), "i32")
            if read != "f32" and read != "extf":
                x = tracer.emit("arith.index_cast %s : %s to index"
                                % (x.name, "i32" if x.type == "i32" else elt),
                                "index")
            if read == "bool":
                x = x != 0
            out = tracer.reads[memo] = x
        return out

    # What the trace may read of a captured tensor besides its elements;
    # its shape then becomes part of the trace.
    @property
    def shape(self):
        self._touched = self._shape_read = True
        return tuple(self._tensor.shape)

    def size(self, dim=None):
        shape = self.shape
        return shape if dim is None else shape[dim]

    def dim(self):
        self._touched = True
        return _rank(self._tensor)

    ndim = property(dim)

    def __len__(self):
        return self.shape[0]

    @property
    def dtype(self):
        self._touched = True
        return self._tensor.dtype

    def _unsupported(self, *_):
        raise TraceError("%s can only be indexed in a mod (t[i, j] with one "
                         "traced index or int per dimension); compute a "
                         "derived tensor before the call" % self._what())

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = \
        __truediv__ = __rtruediv__ = __floordiv__ = __mod__ = __neg__ = \
        __lt__ = __le__ = __gt__ = __ge__ = __bool__ = __iter__ = \
        __float__ = __int__ = __index__ = _unsupported

    def __getattr__(self, name):
        raise _AttributeTraceError(
            "%s: .%s is not traced; it can only be indexed in a mod (and "
            "its shape, dtype and dim() read)" % (self._what(), name))


def _tensor_type(elt, rank):
    return "tensor<%s%s>" % ("?x" * rank, elt)


def _cell_reader(cell):
    return lambda: cell.cell_contents


def _global_reader(namespace, name):
    return lambda: namespace[name]


# Default-argument readers hold the function weakly: a trace kept by a
# launch plan must not keep the mod (and the tensors it holds) alive.
def _default_reader(fn, n):
    ref = weakref.ref(fn)
    return lambda: ref().__defaults__[n]


def _kwdefault_reader(fn, name):
    ref = weakref.ref(fn)
    return lambda: ref().__kwdefaults__[name]


def _global_names(code):
    """The names a code object (and the functions defined in it) may read
    from its globals."""
    names = list(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names += _global_names(const)
    return names


# How deep the functions a mod calls are searched for tensors (mod ->
# helper -> helper ...).
_MAX_DEPTH = 4


class _CaptureState:
    """The tensors the mods of one trace read, and which of them they
    index (the captures, numbered in that order)."""

    def __init__(self):
        self.tracer = None  # the region being traced
        self.proxies = {}  # id(tensor) -> _Captured
        self.tensors = []  # keeps the ids of `proxies` unique while tracing
        self.reads = []  # (read(), _Captured): where each tensor was found
        self.captured = []  # the indexed ones, in capture order
        self.patched = {}  # id(function) -> the function the trace calls

    def capture(self, proxy):
        if proxy._number is None:
            if len(self.captured) == MAX_CAPTURES:
                raise TraceError(
                    "the mods index more than %d captured tensors (%s and "
                    "%r); a kernel takes at most %d: stack tensors of one "
                    "dtype into one"
                    % (MAX_CAPTURES, ", ".join(repr(p._variable)
                                               for p in self.captured),
                       proxy._variable, MAX_CAPTURES))
            proxy._number = len(self.captured)
            self.captured.append(proxy)
        return proxy._number

    def substitute(self, value, read, variable, depth):
        if _is_tensor(value):
            proxy = self.proxies.get(id(value))
            if proxy is None:
                proxy = self.proxies[id(value)] = _Captured(self, value,
                                                            variable)
                self.tensors.append(value)
            self.reads.append((read, proxy))
            return proxy
        if (isinstance(value, types.FunctionType) and depth < _MAX_DEPTH
                and value.__globals__ is not _MODULE_GLOBALS):
            return self.patch(value, depth + 1)
        return value

    def patch(self, fn, depth=0):
        """fn, rebuilt with a _Captured in place of every tensor it reads
        from its closure, globals and defaults (and so the functions it
        calls); fn itself when it reads none."""
        done = self.patched.get(id(fn))
        if done is not None:
            return done
        self.patched[id(fn)] = fn  # a recursive reference: the original
        code, changed = fn.__code__, False
        closure = fn.__closure__
        if closure:
            cells = list(closure)
            for n, (name, cell) in enumerate(zip(code.co_freevars, closure)):
                try:
                    value = cell.cell_contents
                except ValueError:  # not bound yet
                    continue
                new = self.substitute(value, _cell_reader(cell), name, depth)
                if new is not value:
                    cells[n] = types.CellType(new)
                    changed = True
            closure = tuple(cells)
        namespace = fn.__globals__
        new_globals = None
        for name in dict.fromkeys(_global_names(code)):
            if name not in namespace:
                continue
            value = namespace[name]
            new = self.substitute(value, _global_reader(namespace, name),
                                  name, depth)
            if new is not value:
                if new_globals is None:
                    new_globals = dict(namespace)
                new_globals[name] = new
        defaults = fn.__defaults__
        if defaults:
            first = code.co_argcount - len(defaults)
            values = list(defaults)
            for n, value in enumerate(defaults):
                new = self.substitute(value, _default_reader(fn, n),
                                      code.co_varnames[first + n], depth)
                if new is not value:
                    values[n] = new
                    changed = True
            defaults = tuple(values)
        kwdefaults = fn.__kwdefaults__
        if kwdefaults:
            kwdefaults = dict(kwdefaults)
            for name, value in kwdefaults.items():
                new = self.substitute(value, _kwdefault_reader(fn, name),
                                      name, depth)
                if new is not value:
                    kwdefaults[name] = new
                    changed = True
        if not changed and new_globals is None:
            return fn
        out = types.FunctionType(code, namespace if new_globals is None
                                 else new_globals, fn.__name__, defaults,
                                 closure)
        out.__kwdefaults__ = kwdefaults
        self.patched[id(fn)] = out
        return out


_MODULE_GLOBALS = globals()


class ModTrace:
    """The trace of a score mod and a mask mod (trace_mods()): each
    region's block (MLIR text, None for a mod not given) and the captured
    tensors, in the order of their block arguments and of the launch's
    captures."""

    def __init__(self, score, mask, captures, reads, metas, capture_slots):
        self.score, self.mask = score, mask
        self.captures = tuple(captures)
        # (read(), slot): where the trace found each tensor it depends on;
        # metas[slot]: (dtype, rank, shape or None) it saw there.
        self._reads, self._metas = reads, metas
        self._capture_slots = capture_slots

    def current(self):
        """The tensors the mods read now, in capture order, or None when
        a variable the trace read a tensor from now holds something else
        than a tensor of that dtype and rank (and shape, when the mod read
        it), or two variables that held one tensor no longer do: the mods
        must be traced again."""
        found = [None] * len(self._metas)
        try:
            for read, slot in self._reads:
                t = read()
                prev = found[slot]
                if prev is None:
                    dtype, rank, shape = self._metas[slot]
                    if (t.dtype != dtype or len(t.shape) != rank
                            or (shape is not None
                                and tuple(t.shape) != shape)):
                        return None
                    found[slot] = t
                elif prev is not t:
                    return None
        except Exception:  # unbound, deleted, or not a tensor any more
            return None
        return [found[s] for s in self._capture_slots]

    def func_args(self):
        """The kernel function's capture arguments (text): %arg_c0, ...
        (MLIR's parser does not let a region's block arguments shadow the
        function's names)."""
        return "".join(", %%arg_%s: %s" % (c.name, c.type)
                       for c in self.captures)

    def operand(self):
        """The attn.attention's captures group (text; "" without any)."""
        if not self.captures:
            return ""
        return " captures(%s : %s)" % (
            ", ".join("%arg_" + c.name for c in self.captures),
            ", ".join(c.type for c in self.captures))


def _trace_region(state, fn, args, result_type, what):
    """The ops of one region (lines) and the name of what it yields."""
    tracer = _Tracer()
    values = [_Value(tracer, "%" + n, t) for n, t in args]
    if isinstance(fn, types.FunctionType):
        fn = state.patch(fn)
    elif isinstance(fn, types.MethodType) and isinstance(
            fn.__func__, types.FunctionType):
        fn = types.MethodType(state.patch(fn.__func__), fn.__self__)
    state.tracer = tracer
    try:
        out = fn(*values)
    except (IndexError, TypeError) as e:
        # torch refuses a traced index or a captured tensor (naming its
        # type) instead of calling __index__ or reporting an attribute.
        if "_Value" in str(e):
            raise TraceError(
                "the %s indexes a tensor with a traced value but the tensor "
                "is not captured: a mod captures the tensors it reads from a "
                "variable (its closure, its module's globals, its "
                "defaults), not from an attribute, a dict or a list (%s)"
                % (what, e)) from None
        if "_Captured" in str(e):
            raise TraceError(
                "the %s passes a captured tensor to a function; a captured "
                "tensor can only be indexed in a mod (t[i, j]): compute a "
                "derived tensor before the call (%s)" % (what, e)) from None
        raise
    finally:
        state.tracer = None
    if result_type == "i1" and isinstance(out, bool):
        out = tracer.const(out, "i1")
    if not isinstance(out, _Value) and result_type == "f32" and isinstance(
            out, (int, float)):
        out = tracer.const(float(out), "f32")
    if not isinstance(out, _Value):
        raise TraceError("the %s returned a %s, not a traced value" %
                         (what, type(out).__name__))
    out = _lift(tracer, out, result_type)
    return tracer.lines, out.name


_SCORE_ARGS = [("s", "f32"), ("b", "index"), ("h", "index"), ("i", "index"),
               ("j", "index")]
_MASK_ARGS = [("b", "index"), ("h", "index"), ("i", "index"),
              ("j", "index")]


def trace_mods(score_mod=None, mask_mod=None):
    """Traces a score mod and a mask mod together (the score mod first): a
    ModTrace. A tensor both mods read is one capture; every region takes
    every capture."""
    state = _CaptureState()
    traced = []
    try:
        for fn, args, result_type, what in (
                (score_mod, _SCORE_ARGS, "f32", "score_mod"),
                (mask_mod, _MASK_ARGS, "i1", "mask_mod")):
            traced.append(None if fn is None else (args, result_type) +
                          _trace_region(state, fn, args, result_type, what))
        captures = []
        for p in state.captured:
            elt = _capture_kind(p._tensor.dtype, p._what())[0]
            rank = _rank(p._tensor)
            captures.append(Capture("c%d" % p._number,
                                    _tensor_type(elt, rank), elt, rank,
                                    p._variable))
        # The tensors the trace depends on, each in a slot.
        slots, metas = {}, []
        for p in state.proxies.values():
            if p._touched:
                slots[id(p)] = len(metas)
                t = p._tensor
                metas.append((t.dtype, _rank(t),
                              tuple(t.shape) if p._shape_read else None))
        reads = [(read, slots[id(p)]) for read, p in state.reads
                 if id(p) in slots]
        capture_slots = [slots[id(p)] for p in state.captured]
    finally:
        # The trace keeps no tensor alive: a launch reads them again.
        for p in state.proxies.values():
            p._tensor = None
        state.tensors.clear()
    blocks = []
    for item in traced:
        if item is None:
            blocks.append(None)
            continue
        args, result_type, lines, out = item
        header = ", ".join("%%%s: %s" % (n, t) for n, t in args)
        header += "".join(", %%%s: %s" % (c.name, c.type) for c in captures)
        body = "\n".join(lines)
        blocks.append("  ^bb0(%s):\n%s%s    attn.yield %s : %s"
                      % (header, body, "\n" if body else "", out,
                         result_type))
    return ModTrace(blocks[0], blocks[1], captures, reads, metas,
                    capture_slots)


def score_region(score_mod):
    """The score region's block (text) of score_mod(score, b, h, q_idx,
    kv_idx), with the tensors it captures as trailing block arguments."""
    return trace_mods(score_mod=score_mod).score


def mask_region(mask_mod):
    """The mask region's block (text) of mask_mod(b, h, q_idx, kv_idx),
    with the tensors it captures as trailing block arguments."""
    return trace_mods(mask_mod=mask_mod).mask


def attention_ir(*, heads, kv_heads, head_dim, dtype="bf16", causal=False,
                 window=None, softcap=None, scale=None, return_lse=False,
                 score_mod=None, mask_mod=None, sinks=False,
                 name="attention_mod", mod_trace=None, kv_bounds=False,
                 varlen=False):
    """The kernel function (MLIR text) of an attention with these options
    and mods: what KernelSpec.custom_ir holds. window: (left, right), -1 or
    None for an unbounded side (with causal, (left, -1) means (left, 0)).
    sinks: the function takes one f32 logit per query head after v (the
    launch's `sinks` tensor), merged after the mods have masked and scored
    every key. The tensors the mods capture are the function's last
    arguments and the attention's captures, in ModTrace.captures' order.
    mod_trace: trace_mods(score_mod, mask_mod) when already made.
    kv_bounds: the function takes each query row's key range ([B, Sq, 2]
    i32, the launch's kv_bounds) after the sinks, a mask of its own: the
    kernel skips the KV tiles outside a query tile's ranges and runs those
    inside every row's range unmasked.
    varlen: packed sequences (attnc.attention_varlen): q, k, v and o are
    [total, heads, head_dim], the LSE [heads, total_q], and the function
    takes cu_seqlens_q and cu_seqlens_k after the sinks; the mods see the
    sequence as b and positions within it as q_idx and kv_idx."""
    elt = {"bf16": "bf16", "fp16": "f16"}.get(dtype)
    if elt is None:
        raise TraceError("dtype must be bf16 or fp16, not %r" % (dtype,))
    if varlen and kv_bounds:
        raise TraceError("kv_bounds do not combine with varlen")
    if mod_trace is None and (score_mod is not None or mask_mod is not None):
        mod_trace = trace_mods(score_mod, mask_mod)
    if varlen:
        t = lambda h: "tensor<?x%dx%dx%s>" % (h, head_dim, elt)  # noqa: E731
        lse_t = "tensor<%dx?xf32>" % heads
    else:
        t = lambda h: "tensor<?x%dx?x%dx%s>" % (h, head_dim, elt)  # noqa
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
    cu_t = "tensor<?xi32>"
    if varlen:
        sinks_arg += ", %%cu_q: %s, %%cu_k: %s" % (cu_t, cu_t)
        sinks_operand += " varlen(%%cu_q, %%cu_k : %s, %s)" % (cu_t, cu_t)
    bounds_t = "tensor<?x?x2xi32>"
    bounds_arg = ", %%kv_bounds: %s" % bounds_t if kv_bounds else ""
    bounds_operand = (" kv_bounds(%%kv_bounds : %s)" % bounds_t
                      if kv_bounds else "")
    capture_args = mod_trace.func_args() if mod_trace else ""
    capture_operand = mod_trace.operand() if mod_trace else ""
    text = ["func.func @%s(%%q: %s, %%k: %s, %%v: %s%s%s) -> (%s) {" %
            (name, t(heads), t(kv_heads), t(kv_heads), sinks_arg,
             bounds_arg + capture_args, results),
            "  %s = attn.attention %%q, %%k, %%v%s%s%s" %
            (outs, sinks_operand, bounds_operand + capture_operand,
             (" {" + ", ".join(attrs) + "}") if attrs else ""),
            "      : %s, %s, %s -> %s" % (t(heads), t(kv_heads), t(kv_heads),
                                          results)]
    regions = []
    if mod_trace is not None and mod_trace.score is not None:
        regions.append("score {\n" + mod_trace.score + "\n  }")
    if mod_trace is not None and mod_trace.mask is not None:
        regions.append("mask {\n" + mod_trace.mask + "\n  }")
    if regions:
        text.append("  " + " ".join(regions))
    text += ["  return %s : %s" % (outs, results), "}"]
    return "\n".join(text) + "\n"


def bundle_spec(*, heads, kv_heads, head_dim, dtype="bf16", arch="sm_90a",
                causal=False, window=None, softcap=None, scale=None,
                return_lse=False, score_mod=None, mask_mod=None,
                sinks=False, kv_bounds=False, varlen=False):
    """The spec (a dict for the "specs" list of `attnc bundle --specs`) of
    the kernel attnc.attention(..., score_mod=, mask_mod=) (with varlen:
    attnc.attention_varlen) asks for with these options: its custom_ir is
    the mods' trace."""
    from ._attention import window_bounds

    left, right = window_bounds(window)
    extra = {"sinks": True} if sinks else {}
    if varlen:
        extra["varlen"] = True
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
            sinks=sinks, kv_bounds=kv_bounds, varlen=varlen),
    }


def document_kv_bounds(doc_ids, causal=True):
    """The kv_bounds of a document mask (row i sees the keys of its own
    document; with causal only those up to i): doc_ids is an integer
    [batch, seq] torch tensor whose ids are non-decreasing along each
    sequence (packed documents, one after another). Returns int32
    [batch, seq, 2] on its device."""
    import torch

    if doc_ids.dim() != 2:
        raise ValueError("doc_ids must be [batch, seq], got shape %s"
                         % (tuple(doc_ids.shape),))
    b, s = doc_ids.shape
    idx = torch.arange(s, device=doc_ids.device).expand(b, s)
    new = torch.ones(b, s, dtype=torch.bool, device=doc_ids.device)
    new[:, 1:] = doc_ids[:, 1:] != doc_ids[:, :-1]
    first = torch.cummax(torch.where(new, idx, 0), dim=1).values
    if causal:
        end = idx + 1
    else:  # the next document's first row, from the right
        last = torch.ones_like(new)
        last[:, :-1] = new[:, 1:]
        end = torch.flip(torch.cummin(torch.flip(
            torch.where(last, idx + 1, s), [1]), dim=1).values, [1])
    return torch.stack([first, end], dim=-1).to(torch.int32).contiguous()
