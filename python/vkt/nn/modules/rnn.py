"""RNN, LSTM and GRU, and their one-step cells, with torch's parameter names (weight_ih_l0_reverse, ...), shapes,
initialisation, checks and error messages, so torch state dicts load. Each layer projects the whole sequence's
input in one matmul; a time step is then the recurrent product and its gates, a handful of ops. A PackedSequence
runs the same steps on a batch narrowed to the sequences still running."""
import math
import numbers
import warnings

from ... import addmm, cat, empty, stack, zeros
from .. import functional as F
from .. import init
from ..parameter import Parameter
from ..utils.rnn import PackedSequence
from .module import Module

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


def _input_bias(mode, b_ih, b_hh):
    """The bias added to the input projection. RNN and LSTM take b_hh there too, so a step needs no bias add;
    GRU keeps b_hh for the step, as its n gate multiplies b_hn by r."""
    if b_ih is None or mode == "GRU":
        return b_ih
    return b_ih + b_hh


def _step(mode, w_hh, b_hh, w_hr=None):
    """One time step, (xp, state) -> state: xp is this step's input projection (with _input_bias), state is (h,)
    or LSTM's (h, c), h in (N, H) (or (N, proj_size))."""
    w_hh_t = w_hh.t()
    if mode in ("RNN_TANH", "RNN_RELU"):
        act = F.tanh if mode == "RNN_TANH" else F.relu
        return lambda xp, state: (act(addmm(xp, state[0], w_hh_t)),)
    if mode == "LSTM":
        w_hr_t = None if w_hr is None else w_hr.t()

        def lstm(xp, state):
            i, f, g, o = addmm(xp, state[0], w_hh_t).chunk(4, 1)
            c = f.sigmoid() * state[1] + i.sigmoid() * g.tanh()
            h = o.sigmoid() * c.tanh()
            return (h if w_hr_t is None else h.mm(w_hr_t)), c
        return lstm
    hidden = w_hh.shape[1]

    def gru(xp, state):
        h = state[0]
        gh = F.linear(h, w_hh, b_hh)
        r, z = (xp.narrow(1, 0, 2 * hidden) + gh.narrow(1, 0, 2 * hidden)).sigmoid().chunk(2, 1)
        n = (xp.narrow(1, 2 * hidden, hidden) + r * gh.narrow(1, 2 * hidden, hidden)).tanh()
        return (n + z * (h - n),)  # torch's (1 - z) * n + z * h, one op fewer
    return gru


def _permute(state, indices):
    """state's tensors with their batch (dim 1) reordered by indices; as they are when indices is None."""
    return state if indices is None else tuple(s.index_select(1, indices) for s in state)


def _rows(state, start, length):
    return tuple(s.narrow(0, start, length) for s in state)


def _check_cell_input(input, input_size):
    if input.shape[1] != input_size:
        raise RuntimeError(f"input has inconsistent input_size: got {input.shape[1]} expected {input_size}")


def _check_cell_hidden(input, hx, hidden_size, label):
    if input.shape[0] != hx.shape[0]:
        raise RuntimeError(f"Input batch size {input.shape[0]} doesn't match hidden{label} batch size {hx.shape[0]}")
    if hx.shape[1] != hidden_size:
        raise RuntimeError(f"hidden{label} has inconsistent hidden_size: got {hx.shape[1]}, expected {hidden_size}")


class RNNBase(Module):
    """The layers' shared parameters, checks and time loop; mode is "RNN_TANH", "RNN_RELU", "LSTM" or "GRU"."""

    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__()
        self.mode = mode
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
        self.bias, self.batch_first, self.dropout = bias, batch_first, float(dropout)
        self.bidirectional, self.proj_size = bidirectional, proj_size
        if not isinstance(dropout, numbers.Number) or not 0 <= dropout <= 1 or isinstance(dropout, bool):
            raise ValueError("dropout should be a number in range [0, 1] representing the probability of an "
                             "element being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so non-zero dropout "
                          f"expects num_layers greater than 1, but got dropout={dropout} and "
                          f"num_layers={num_layers}", stacklevel=2)
        _check_sizes(bias, batch_first, input_size, hidden_size, num_layers, proj_size)
        if mode not in _GATES:
            raise ValueError("Unrecognized RNN mode: " + mode)
        gate_size = _GATES[mode] * hidden_size
        num_directions = 2 if bidirectional else 1
        real_hidden_size = proj_size if proj_size > 0 else hidden_size
        kw = {"device": device, "dtype": dtype}
        self._flat_weights_names, self._all_weights = [], []
        for layer in range(num_layers):
            layer_input_size = input_size if layer == 0 else real_hidden_size * num_directions
            for direction in range(num_directions):
                shapes = {"weight_ih": (gate_size, layer_input_size), "weight_hh": (gate_size, real_hidden_size)}
                if bias:
                    shapes.update(bias_ih=(gate_size,), bias_hh=(gate_size,))
                if proj_size > 0:
                    shapes["weight_hr"] = (proj_size, hidden_size)
                suffix = "_reverse" if direction == 1 else ""
                names = []
                for kind, shape in shapes.items():
                    names.append(f"{kind}_l{layer}{suffix}")
                    setattr(self, names[-1], Parameter(empty(*shape, **kw)))
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def flatten_parameters(self):
        """A no-op: torch packs the weights into one buffer for cuDNN; vkt uses them as they are."""

    @property
    def _flat_weights(self):
        return [getattr(self, name, None) for name in self._flat_weights_names]

    @property
    def all_weights(self):
        return [[getattr(self, name) for name in names] for names in self._all_weights]

    def check_input(self, input, batch_sizes):
        weight_dtype = self._flat_weights[0].dtype
        if input.dtype != weight_dtype:
            raise ValueError(f"RNN input dtype ({input.dtype}) does not match weight dtype ({weight_dtype}). "
                             f"Convert input: input.to({weight_dtype}), or convert model: model.to({input.dtype})")
        expected_input_dim = 2 if batch_sizes is not None else 3
        if input.dim() != expected_input_dim:
            raise RuntimeError(f"input must have {expected_input_dim} dimensions, got {input.dim()}")
        if self.input_size != input.shape[-1]:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, "
                               f"got {input.shape[-1]}")

    def _mini_batch(self, input, batch_sizes):
        if batch_sizes is not None:
            return int(batch_sizes[0])
        return input.shape[0] if self.batch_first else input.shape[1]

    def get_expected_hidden_size(self, input, batch_sizes):
        mini_batch = self._mini_batch(input, batch_sizes)
        num_directions = 2 if self.bidirectional else 1
        return (self.num_layers * num_directions, mini_batch,
                self.proj_size if self.proj_size > 0 else self.hidden_size)

    def check_hidden_size(self, hx, expected_hidden_size, msg="Expected hidden size {}, got {}"):
        if tuple(hx.shape) != expected_hidden_size:
            raise RuntimeError(msg.format(expected_hidden_size, list(hx.shape)))

    def check_forward_args(self, input, hidden, batch_sizes):
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden, self.get_expected_hidden_size(input, batch_sizes))

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size != 0:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s

    def _zero_state(self, input, batch):
        """The state when hx is not given, as a tuple: (h,) here, (h, c) for LSTM."""
        return (self._zeros(input, batch, self.hidden_size),)

    def _zeros(self, input, batch, size):
        num_directions = 2 if self.bidirectional else 1
        return zeros(self.num_layers * num_directions, batch, size, dtype=input.dtype, device=input.device)

    def _initial_state(self, input, hx, is_batched):
        """hx as a tuple of (num_layers * num_directions, N, *) tensors, checked as torch does: (h,) here."""
        if hx is not None and hx.dim() != (3 if is_batched else 2):
            if is_batched:
                raise RuntimeError(f"For batched 3-D input, hx should also be 3-D but got {hx.dim()}-D tensor")
            raise RuntimeError(f"For unbatched 2-D input, hx should also be 2-D but got {hx.dim()}-D tensor")
        if hx is None:
            hx = self._zero_state(input, self._mini_batch(input, None))[0]
        elif not is_batched:
            hx = hx.unsqueeze(1)
        self.check_forward_args(input, hx, None)
        return (hx,)

    def forward(self, input, hx=None):
        if isinstance(input, PackedSequence):
            return self._forward_packed(input, hx)
        name = type(self).__name__
        if input.dim() not in (2, 3):
            tensor = " tensor" if self.mode.startswith("RNN") else ""
            raise ValueError(f"{name}: Expected input to be 2D or 3D, got {input.dim()}D{tensor} instead")
        is_batched = input.dim() == 3
        batch_dim = 0 if self.batch_first else 1
        if not is_batched:
            input = input.unsqueeze(batch_dim)
        state = self._initial_state(input, hx, is_batched)
        if input.shape[1 - batch_dim] == 0:
            raise RuntimeError("Expected sequence length to be larger than 0 in RNN")
        output, state = self._layers(input.transpose(0, 1) if self.batch_first else input, state)
        if self.batch_first:
            output = output.transpose(0, 1)
        if not is_batched:
            output = output.squeeze(batch_dim)
            state = tuple(s.squeeze(1) for s in state)
        return output, (state if self.mode == "LSTM" else state[0])

    def _forward_packed(self, input, hx):
        """As torch: the steps run in the packed (sorted) batch order, so hx is permuted into it by sorted_indices
        and h_n (and c_n) back by unsorted_indices; the output is a PackedSequence like the input."""
        data, batch_sizes, sorted_indices, unsorted_indices = input
        sizes = batch_sizes.tolist()
        lstm = self.mode == "LSTM"
        if hx is None:
            state = self._zero_state(data, sizes[0])
        else:
            state = _permute(tuple(hx) if lstm else (hx,), sorted_indices)
        self.check_forward_args(data, state if lstm else state[0], batch_sizes)
        output, state = self._layers(data, state, sizes)
        state = _permute(state, unsorted_indices)
        return PackedSequence(output, batch_sizes, sorted_indices, unsorted_indices), (state if lstm else state[0])

    def _layers(self, x, state, batch_sizes=None):
        """x in (L, N, H_in), or packed data (sum(batch_sizes), H_in), through every layer and direction; state's
        tensors are unbound per (layer, direction) and the final ones stacked back in that order."""
        num_directions = 2 if self.bidirectional else 1
        initial = [s.unbind(0) for s in state]
        finals = []
        for layer in range(self.num_layers):
            outputs = []
            for direction in range(num_directions):
                k = layer * num_directions + direction
                weights = [getattr(self, n) for n in self._all_weights[k]]
                out, final = self._direction(x, tuple(s[k] for s in initial), weights, direction == 1, batch_sizes)
                outputs.append(out)
                finals.append(final)
            x = outputs[0] if num_directions == 1 else cat(outputs, -1)
            if self.dropout > 0 and self.training and layer < self.num_layers - 1:
                x = F.dropout(x, self.dropout, training=True)
        return x, tuple(stack([f[i] for f in finals]) for i in range(len(state)))

    def _direction(self, x, state, weights, reverse, batch_sizes):
        """One layer in one direction: the input projection of all L steps in one matmul, then the steps. Packed,
        step t runs the first batch_sizes[t] sequences (sorted longest first): going forward, the rows that stop
        keep their state as their final one; in reverse, rows join from the initial state at their last step."""
        w_ih, w_hh = weights[:2]
        b_ih, b_hh = weights[2:4] if self.bias else (None, None)
        step = _step(self.mode, w_hh, b_hh, weights[-1] if self.proj_size > 0 else None)
        proj = F.linear(x, w_ih, _input_bias(self.mode, b_ih, b_hh))
        steps = proj.unbind(0) if batch_sizes is None else proj.split(batch_sizes)
        initial, ended, outputs = state, [], []
        if reverse:
            steps = steps[::-1]
            if batch_sizes is not None:  # only the rows that run the last step start there
                state = _rows(state, 0, steps[0].shape[0])
        for xp in steps:
            n, have = xp.shape[0], state[0].shape[0]
            if n < have:
                ended.append(_rows(state, n, have - n))
                state = _rows(state, 0, n)
            elif n > have:
                state = tuple(cat([s, s0.narrow(0, have, n - have)]) for s, s0 in zip(state, initial))
            state = step(xp, state)
            outputs.append(state[0])
        if reverse:
            outputs.reverse()
        if ended:  # the longest sequences ended last and come first in the batch
            state = tuple(cat([s] + [e[i] for e in reversed(ended)]) for i, s in enumerate(state))
        return (stack(outputs) if batch_sizes is None else cat(outputs)), state


def _check_sizes(bias, batch_first, input_size, hidden_size, num_layers, proj_size):
    if not isinstance(bias, bool):
        raise TypeError(f"bias should be of type bool, got: {type(bias).__name__}")
    if not isinstance(batch_first, bool):
        raise TypeError(f"batch_first should be of type bool, got: {type(batch_first).__name__}")
    if not isinstance(input_size, int):
        raise TypeError(f"input_size should be of type int, got: {type(input_size).__name__}")
    if input_size <= 0:
        raise ValueError("input_size must be greater than zero")
    if not isinstance(hidden_size, int):
        raise TypeError(f"hidden_size should be of type int, got: {type(hidden_size).__name__}")
    if hidden_size <= 0:
        raise ValueError("hidden_size must be greater than zero")
    if num_layers <= 0:
        raise ValueError("num_layers must be greater than zero")
    if proj_size < 0:
        raise ValueError("proj_size should be a positive integer or zero to disable projections")
    if proj_size >= hidden_size:
        raise ValueError("proj_size has to be smaller than hidden_size")


class RNN(RNNBase):
    """h_t = nonlinearity(W_ih x_t + b_ih + W_hh h_(t-1) + b_hh); RNN(input_size, hidden_size, num_layers=1,
    nonlinearity='tanh', bias=True, batch_first=False, dropout=0.0, bidirectional=False)."""

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if len(args) > 3:
            self.nonlinearity = args[3]
            args = args[:3] + args[4:]
        else:
            self.nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if self.nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity '{self.nonlinearity}'. Select from 'tanh' or 'relu'.")
        super().__init__("RNN_TANH" if self.nonlinearity == "tanh" else "RNN_RELU", *args, **kwargs)


class LSTM(RNNBase):
    """The gates i, f, g, o (in that order in weight_ih/weight_hh) give c_t = f * c_(t-1) + i * g and
    h_t = o * tanh(c_t), projected by weight_hr when proj_size > 0; forward returns (output, (h_n, c_n))."""

    def __init__(self, *args, **kwargs):
        super().__init__("LSTM", *args, **kwargs)

    def get_expected_cell_size(self, input, batch_sizes):
        mini_batch = self._mini_batch(input, batch_sizes)
        num_directions = 2 if self.bidirectional else 1
        return (self.num_layers * num_directions, mini_batch, self.hidden_size)

    def check_forward_args(self, input, hidden, batch_sizes):
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden[0], self.get_expected_hidden_size(input, batch_sizes),
                               "Expected hidden[0] size {}, got {}")
        self.check_hidden_size(hidden[1], self.get_expected_cell_size(input, batch_sizes),
                               "Expected hidden[1] size {}, got {}")

    def _zero_state(self, input, batch):
        return (self._zeros(input, batch, self.proj_size if self.proj_size > 0 else self.hidden_size),
                self._zeros(input, batch, self.hidden_size))

    def _initial_state(self, input, hx, is_batched):
        if hx is None:
            hx = self._zero_state(input, self._mini_batch(input, None))
        else:
            want = 3 if is_batched else 2
            if hx[0].dim() != want or hx[1].dim() != want:
                kind = "batched 3-D" if is_batched else "unbatched 2-D"
                raise RuntimeError(f"For {kind} input, hx and cx should also be {want}-D but got "
                                   f"({hx[0].dim()}-D, {hx[1].dim()}-D) tensors")
            if not is_batched:
                hx = (hx[0].unsqueeze(1), hx[1].unsqueeze(1))
        self.check_forward_args(input, hx, None)
        return tuple(hx)


class GRU(RNNBase):
    """The gates r, z, n (in that order) give n = tanh(W_in x + b_in + r * (W_hn h + b_hn)) and
    h_t = (1 - z) * n + z * h_(t-1)."""

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)


class RNNCellBase(Module):
    """One time step's weights: weight_ih (num_chunks * hidden_size, input_size), weight_hh
    (num_chunks * hidden_size, hidden_size) and, with bias, bias_ih and bias_hh."""

    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        super().__init__()
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        kw = {"device": device, "dtype": dtype}
        self.weight_ih = Parameter(empty(num_chunks * hidden_size, input_size, **kw))
        self.weight_hh = Parameter(empty(num_chunks * hidden_size, hidden_size, **kw))
        if bias:
            self.bias_ih = Parameter(empty(num_chunks * hidden_size, **kw))
            self.bias_hh = Parameter(empty(num_chunks * hidden_size, **kw))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def _batched(self, input, hx, hx_label):
        """torch's dim checks; the input and hx (a tuple) with a batch dimension, hx zeros when not given."""
        name = type(self).__name__
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        for label, h in zip(hx_label, hx or ()):
            if h.dim() not in (1, 2):
                raise ValueError(f"{name}: Expected {label} to be 1D or 2D, got {h.dim()}D instead")
        is_batched = input.dim() == 2
        if not is_batched:
            input = input.unsqueeze(0)
        if hx is None:
            hx = (zeros(input.shape[0], self.hidden_size, dtype=input.dtype, device=input.device),) * len(hx_label)
        elif not is_batched:
            hx = tuple(h.unsqueeze(0) for h in hx)
        _check_cell_input(input, self.input_size)
        for label, h in enumerate(hx):
            _check_cell_hidden(input, h, self.hidden_size, label)
        return input, hx, is_batched

    def _cell(self, mode, input, hx, hx_label):
        input, hx, is_batched = self._batched(input, hx, hx_label)
        xp = F.linear(input, self.weight_ih, _input_bias(mode, self.bias_ih, self.bias_hh))
        state = _step(mode, self.weight_hh, self.bias_hh)(xp, hx)
        return state if is_batched else tuple(s.squeeze(0) for s in state)


class RNNCell(RNNCellBase):
    """h' = nonlinearity(W_ih x + b_ih + W_hh h + b_hh)."""

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=1, device=device, dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        if self.nonlinearity not in ("tanh", "relu"):
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        mode = "RNN_TANH" if self.nonlinearity == "tanh" else "RNN_RELU"
        return self._cell(mode, input, None if hx is None else (hx,), ("hidden",))[0]


class LSTMCell(RNNCellBase):
    """One LSTM step: forward(input, (h, c)) returns (h', c')."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=4, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        return self._cell("LSTM", input, None if hx is None else tuple(hx), ("hx[0]", "hx[1]"))


class GRUCell(RNNCellBase):
    """One GRU step: forward(input, h) returns h'."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=3, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        return self._cell("GRU", input, None if hx is None else (hx,), ("hidden",))[0]
