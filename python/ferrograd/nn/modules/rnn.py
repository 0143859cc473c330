"""Recurrent layers: ``RNN``, ``LSTM``, ``GRU`` and the cells ``RNNCell``, ``LSTMCell``, ``GRUCell``.

A port of PyTorch's ``torch/nn/modules/rnn.py``. PyTorch hands the computation to fused
ATen kernels (``_VF.lstm`` etc.); here it is written with tensor ops: the input projection
of a layer is one ``F.linear`` over the whole sequence, then a Python loop over time steps
does the recurrent part (a few ops per step). A ``PackedSequence`` input runs the same loop
over its time steps with a batch that shrinks as sequences end (and grows, in the reverse
direction, as they start), and gives a ``PackedSequence`` output.
"""

import math
import numbers
import warnings
import weakref

from ... import _core
from ..._core import cat, stack
from ..._factories import empty, zeros
from .. import functional as F, init
from ..parameter import Parameter
from ..utils.rnn import PackedSequence
from .module import Module

__all__ = [
    "RNNBase",
    "RNN",
    "LSTM",
    "GRU",
    "RNNCellBase",
    "RNNCell",
    "LSTMCell",
    "GRUCell",
]


def _apply_permutation(tensor, permutation, dim=1):
    return tensor.index_select(dim, permutation)


def _is_packed(input):
    """Whether ``input`` is a packed sequence: a PackedSequence, or a named tuple with its
    fields (``batch_sizes``, ...) holding ferrograd tensors."""
    if isinstance(input, PackedSequence):
        return True
    if isinstance(input, tuple) and hasattr(input, "batch_sizes"):
        if not isinstance(input[0], _core.Tensor):
            raise TypeError(
                f"expected a PackedSequence of ferrograd tensors (ferrograd.nn.utils.rnn.pack_sequence / "
                f"pack_padded_sequence), but got one holding {type(input[0]).__module__}.{type(input[0]).__name__}"
            )
        return True
    return False


# ---------------------------------------------------------------------------- cell math
# Gate order and formulas follow PyTorch's documentation. ``gi`` is the input projection
# ``W_i* x + b_i*`` (already computed), ``h`` the previous hidden state.


def _rnn_step(gi, h, w_hh, b_hh, act):
    return act(gi + F.linear(h, w_hh, b_hh))


def _lstm_step(gi, h, c, w_hh, b_hh, w_hr):
    # the gates i, f, g, o and c' = f c + i g, h = o tanh(c') in one fused op
    h, c = _core._lstm_cell(gi + F.linear(h, w_hh, b_hh), c)
    if w_hr is not None:
        h = F.linear(h, w_hr)
    return h, c


def _gru_step(gi, h, w_hh, b_hh):
    # r, z, n and h' = (1 - z) n + z h in one fused op
    return _core._gru_cell(gi, F.linear(h, w_hh, b_hh), h)


def _tanh(x):
    return x.tanh()


def _relu(x):
    return x.relu()


# ------------------------------------------------------------------------ cell checks


def _check_rnn_cell_forward_input(input, input_size):
    if input.size(1) != input_size:
        raise RuntimeError(f"input has inconsistent input_size: got {input.size(1)} expected {input_size}")


def _check_rnn_cell_forward_hidden(input, hx, hidden_size, hidden_label):
    if input.size(0) != hx.size(0):
        raise RuntimeError(
            f"Input batch size {input.size(0)} doesn't match hidden{hidden_label} batch size {hx.size(0)}"
        )
    if hx.size(1) != hidden_size:
        raise RuntimeError(
            f"hidden{hidden_label} has inconsistent hidden_size: got {hx.size(1)}, expected {hidden_size}"
        )


def _rnn_cell(input, hx, w_ih, w_hh, b_ih, b_hh, act):
    _check_rnn_cell_forward_input(input, w_ih.size(1))
    _check_rnn_cell_forward_hidden(input, hx, w_hh.size(1), 0)
    return _rnn_step(F.linear(input, w_ih, b_ih), hx, w_hh, b_hh, act)


def _lstm_cell(input, hx, w_ih, w_hh, b_ih, b_hh):
    _check_rnn_cell_forward_input(input, w_ih.size(1))
    hidden_size = w_hh.size(1)
    _check_rnn_cell_forward_hidden(input, hx[0], hidden_size, 0)
    _check_rnn_cell_forward_hidden(input, hx[1], hidden_size, 1)
    return _lstm_step(F.linear(input, w_ih, b_ih), hx[0], hx[1], w_hh, b_hh, None)


def _gru_cell(input, hx, w_ih, w_hh, b_ih, b_hh):
    _check_rnn_cell_forward_input(input, w_ih.size(1))
    _check_rnn_cell_forward_hidden(input, hx, w_hh.size(1), 0)
    return _gru_step(F.linear(input, w_ih, b_ih), hx, w_hh, b_hh)


# ----------------------------------------------------------------------------- RNNBase


class RNNBase(Module):
    r"""Base class for RNN modules (RNN, LSTM, GRU).

    Holds the per-layer, per-direction parameters ``weight_ih_l{k}``, ``weight_hh_l{k}``,
    ``bias_ih_l{k}``, ``bias_hh_l{k}`` (and ``weight_hr_l{k}`` for a projected LSTM), with the
    suffix ``_reverse`` for the backward direction, in PyTorch's registration order.
    """

    __constants__ = [
        "mode",
        "input_size",
        "hidden_size",
        "num_layers",
        "bias",
        "batch_first",
        "dropout",
        "bidirectional",
        "proj_size",
    ]
    __jit_unused_properties__ = ["all_weights"]

    def __init__(
        self,
        mode,
        input_size,
        hidden_size,
        num_layers=1,
        bias=True,
        batch_first=False,
        dropout=0.0,
        bidirectional=False,
        proj_size=0,
        device=None,
        dtype=None,
    ):
        factory_kwargs = {"device": device, "dtype": dtype}
        super().__init__()
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        self._flat_weight_refs = []
        num_directions = 2 if bidirectional else 1

        if not isinstance(dropout, numbers.Number) or not 0 <= dropout <= 1 or isinstance(dropout, bool):
            raise ValueError(
                "dropout should be a number in range [0, 1] "
                "representing the probability of an element being "
                "zeroed"
            )
        if dropout > 0 and num_layers == 1:
            warnings.warn(
                "dropout option adds dropout after all but last "
                "recurrent layer, so non-zero dropout expects "
                f"num_layers greater than 1, but got dropout={dropout} and "
                f"num_layers={num_layers}",
                stacklevel=2,
            )

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

        if mode == "LSTM":
            gate_size = 4 * hidden_size
        elif mode == "GRU":
            gate_size = 3 * hidden_size
        elif mode == "RNN_TANH":
            gate_size = hidden_size
        elif mode == "RNN_RELU":
            gate_size = hidden_size
        else:
            raise ValueError("Unrecognized RNN mode: " + mode)

        self._flat_weights_names = []
        self._all_weights = []
        for layer in range(num_layers):
            for direction in range(num_directions):
                real_hidden_size = proj_size if proj_size > 0 else hidden_size
                layer_input_size = input_size if layer == 0 else real_hidden_size * num_directions

                w_ih = Parameter(empty((gate_size, layer_input_size), **factory_kwargs))
                w_hh = Parameter(empty((gate_size, real_hidden_size), **factory_kwargs))
                b_ih = Parameter(empty(gate_size, **factory_kwargs))
                # Second bias vector included for CuDNN compatibility. Only one
                # bias vector is needed in standard definition.
                b_hh = Parameter(empty(gate_size, **factory_kwargs))
                if self.proj_size == 0:
                    if bias:
                        layer_params = (w_ih, w_hh, b_ih, b_hh)
                    else:
                        layer_params = (w_ih, w_hh)
                else:
                    w_hr = Parameter(empty((proj_size, hidden_size), **factory_kwargs))
                    if bias:
                        layer_params = (w_ih, w_hh, b_ih, b_hh, w_hr)
                    else:
                        layer_params = (w_ih, w_hh, w_hr)

                suffix = "_reverse" if direction == 1 else ""
                param_names = ["weight_ih_l{}{}", "weight_hh_l{}{}"]
                if bias:
                    param_names += ["bias_ih_l{}{}", "bias_hh_l{}{}"]
                if self.proj_size > 0:
                    param_names += ["weight_hr_l{}{}"]
                param_names = [x.format(layer, suffix) for x in param_names]

                for name, param in zip(param_names, layer_params):
                    setattr(self, name, param)
                self._flat_weights_names.extend(param_names)
                self._all_weights.append(param_names)

        self._init_flat_weights()
        self.reset_parameters()

    def _init_flat_weights(self):
        self._flat_weights = [getattr(self, wn) if hasattr(self, wn) else None for wn in self._flat_weights_names]
        self._flat_weight_refs = [weakref.ref(w) if w is not None else None for w in self._flat_weights]
        self.flatten_parameters()

    def __setattr__(self, attr, value):
        if hasattr(self, "_flat_weights_names") and attr in self._flat_weights_names:
            # keep self._flat_weights up to date if you do self.weight = ...
            idx = self._flat_weights_names.index(attr)
            self._flat_weights[idx] = value
        super().__setattr__(attr, value)

    def flatten_parameters(self):
        """Reset parameter data pointers for cuDNN; a no-op here (CPU only, no cuDNN)."""

    def _apply(self, fn, recurse=True):
        self._flat_weight_refs = []
        ret = super()._apply(fn, recurse)
        # Conversions may replace the Parameter objects: refresh _flat_weights.
        self._init_flat_weights()
        return ret

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def check_input(self, input, batch_sizes):
        if input.dtype != self._flat_weights[0].dtype:
            raise ValueError(
                f"RNN input dtype ({input.dtype}) does not match weight dtype ({self._flat_weights[0].dtype}). "
                f"Convert input: input.to({self._flat_weights[0].dtype}), or convert model: model.to({input.dtype})"
            )
        expected_input_dim = 2 if batch_sizes is not None else 3
        if input.dim() != expected_input_dim:
            raise RuntimeError(f"input must have {expected_input_dim} dimensions, got {input.dim()}")
        if self.input_size != input.size(-1):
            raise RuntimeError(
                f"input.size(-1) must be equal to input_size. Expected {self.input_size}, got {input.size(-1)}"
            )

    def get_expected_hidden_size(self, input, batch_sizes):
        if batch_sizes is not None:
            mini_batch = int(batch_sizes[0])
        else:
            mini_batch = input.size(0) if self.batch_first else input.size(1)
        num_directions = 2 if self.bidirectional else 1
        if self.proj_size > 0:
            expected_hidden_size = (self.num_layers * num_directions, mini_batch, self.proj_size)
        else:
            expected_hidden_size = (self.num_layers * num_directions, mini_batch, self.hidden_size)
        return expected_hidden_size

    def check_hidden_size(self, hx, expected_hidden_size, msg="Expected hidden size {}, got {}"):
        if hx.size() != expected_hidden_size:
            raise RuntimeError(msg.format(expected_hidden_size, list(hx.size())))

    def _weights_have_changed(self):
        # True if the weight tensors have changed since the last forward pass.
        weights_changed = False
        for ref, name in zip(self._flat_weight_refs, self._flat_weights_names):
            weight = getattr(self, name) if hasattr(self, name) else None
            if weight is not None and ref is not None and ref() is not weight:
                weights_changed = True
                break
        return weights_changed

    def check_forward_args(self, input, hidden, batch_sizes):
        self.check_input(input, batch_sizes)
        expected_hidden_size = self.get_expected_hidden_size(input, batch_sizes)
        self.check_hidden_size(hidden, expected_hidden_size)

    def permute_hidden(self, hx, permutation):
        if permutation is None:
            return hx
        return _apply_permutation(hx, permutation)

    def extra_repr(self):
        s = "{input_size}, {hidden_size}"
        if self.proj_size != 0:
            s += ", proj_size={proj_size}"
        if self.num_layers != 1:
            s += ", num_layers={num_layers}"
        if self.bias is not True:
            s += ", bias={bias}"
        if self.batch_first is not False:
            s += ", batch_first={batch_first}"
        if self.dropout != 0:
            s += ", dropout={dropout}"
        if self.bidirectional is not False:
            s += ", bidirectional={bidirectional}"
        return s.format(**self.__dict__)

    def _update_flat_weights(self):
        if self._weights_have_changed():
            self._init_flat_weights()

    def __getstate__(self):
        # If weights have been changed, update the _flat_weights in __getstate__ here.
        self._update_flat_weights()
        # Don't serialize the weight references.
        state = super().__getstate__()
        state.pop("_flat_weight_refs", None)
        return state

    def __setstate__(self, d):
        super().__setstate__(d)
        if "all_weights" in d:
            self._all_weights = d["all_weights"]
        if "proj_size" not in d:
            self.proj_size = 0
        self._flat_weights = [getattr(self, wn) if hasattr(self, wn) else None for wn in self._flat_weights_names]
        self._flat_weight_refs = [weakref.ref(w) if w is not None else None for w in self._flat_weights]

    @property
    def all_weights(self):
        return [[getattr(self, weight) for weight in weights] for weights in self._all_weights]

    # -------------------------------------------------------------- the computation

    def _layer_weights(self, idx):
        """(w_ih, w_hh, b_ih, b_hh, w_hr) of layer-direction ``idx`` (None where absent)."""
        num_weights = (4 if self.bias else 2) + (1 if self.proj_size > 0 else 0)
        weights = self._flat_weights[idx * num_weights:(idx + 1) * num_weights]
        b_ih, b_hh = (weights[2], weights[3]) if self.bias else (None, None)
        w_hr = weights[-1] if self.proj_size > 0 else None
        return weights[0], weights[1], b_ih, b_hh, w_hr

    def _step_fn(self, w_hh, b_hh, w_hr):
        """``step(gi, h, c) -> (h', c')`` of this layer's cell (``c`` is None but for LSTM)."""
        if self.mode == "LSTM":
            return lambda gi, h, c: _lstm_step(gi, h, c, w_hh, b_hh, w_hr)
        if self.mode == "GRU":
            return lambda gi, h, c: (_gru_step(gi, h, w_hh, b_hh), None)
        act = _tanh if self.mode == "RNN_TANH" else _relu
        return lambda gi, h, c: (_rnn_step(gi, h, w_hh, b_hh, act), None)

    def _forward_packed(self, input, hx):
        """``forward`` of a PackedSequence: the output is packed like the input; ``hx`` and the
        final hidden state are in the batch order before packing."""
        data, batch_sizes, sorted_indices, unsorted_indices = input
        is_lstm = self.mode == "LSTM"
        max_batch_size = int(batch_sizes[0])
        num_directions = 2 if self.bidirectional else 1
        real_hidden_size = self.proj_size if self.proj_size > 0 else self.hidden_size
        if hx is None:
            h_zeros = zeros(
                self.num_layers * num_directions, max_batch_size, real_hidden_size, dtype=data.dtype
            )
            if is_lstm:
                c_zeros = zeros(
                    self.num_layers * num_directions, max_batch_size, self.hidden_size, dtype=data.dtype
                )
                hx = (h_zeros, c_zeros)
            else:
                hx = h_zeros
        else:
            hx = self.permute_hidden(hx, sorted_indices)
        self.check_forward_args(data, hx, batch_sizes)
        output, hidden = self._run_packed(data, batch_sizes, hx)
        return (
            PackedSequence(output, batch_sizes, sorted_indices, unsorted_indices),
            self.permute_hidden(hidden, unsorted_indices),
        )

    def _run_packed(self, data, batch_sizes, hx):
        """All layers over packed ``data`` ``(sum(batch_sizes), input_size)``; returns
        ``(output data, h_n)`` or ``(output data, (h_n, c_n))``, hidden states in sorted order."""
        is_lstm = self.mode == "LSTM"
        sizes = batch_sizes.tolist()
        num_directions = 2 if self.bidirectional else 1
        h0 = (hx[0] if is_lstm else hx).unbind(0)
        c0 = hx[1].unbind(0) if is_lstm else [None] * len(h0)

        layer_input = data
        h_n, c_n = [], []
        for layer in range(self.num_layers):
            dir_outputs = []
            for direction in range(num_directions):
                idx = layer * num_directions + direction
                w_ih, w_hh, b_ih, b_hh, w_hr = self._layer_weights(idx)
                step = self._step_fn(w_hh, b_hh, w_hr)
                gis = F.linear(layer_input, w_ih, b_ih).split(sizes)
                run = _packed_forward if direction == 0 else _packed_reverse
                outputs, h, c = run(step, gis, sizes, h0[idx], c0[idx])
                dir_outputs.append(cat(outputs))
                h_n.append(h)
                c_n.append(c)
            layer_output = dir_outputs[0] if num_directions == 1 else cat(dir_outputs, 1)
            if self.dropout != 0 and self.training and layer < self.num_layers - 1:
                layer_output = F.dropout(layer_output, self.dropout, True)
            layer_input = layer_output

        if is_lstm:
            return layer_input, (stack(h_n, 0), stack(c_n, 0))
        return layer_input, stack(h_n, 0)

    def _run(self, input, hx):
        """Run all layers over ``input`` (3-D, batch-first if ``self.batch_first``).

        ``hx`` is the initial hidden state ``(L * D, B, H_out)``, or a pair ``(h0, c0)`` for
        LSTM. Returns ``(output, h_n)`` or ``(output, (h_n, c_n))`` like ``_VF.lstm``.
        An LSTM without projections and a GRU run each layer and direction as one native op
        (``_run_layers``); the others loop over time steps here (``_run_steps``).
        """
        time_dim = 1 if self.batch_first else 0
        if input.size(time_dim) == 0:
            raise RuntimeError("Expected sequence length to be larger than 0 in RNN")
        if (self.mode == "LSTM" and self.proj_size == 0) or self.mode == "GRU":
            return self._run_layers(input, hx)
        return self._run_steps(input, hx)

    def _run_layers(self, input, hx):
        """``_run`` of an LSTM without projections or a GRU: each layer and direction is one
        ``_core._lstm_layer`` / ``_core._gru_layer`` call over the whole (time-major) sequence,
        one graph node whose backward is back-propagation through time in native code; dropout
        between layers."""
        is_lstm = self.mode == "LSTM"
        num_directions = 2 if self.bidirectional else 1
        h0 = (hx[0] if is_lstm else hx).unbind(0)
        c0 = hx[1].unbind(0) if is_lstm else None
        layer_input = input.transpose(0, 1) if self.batch_first else input
        h_n, c_n = [], []
        for layer in range(self.num_layers):
            dir_outputs = []
            for direction in range(num_directions):
                idx = layer * num_directions + direction
                w_ih, w_hh, b_ih, b_hh, _ = self._layer_weights(idx)
                reverse = direction == 1
                if is_lstm:
                    out, h, c = _core._lstm_layer(layer_input, h0[idx], c0[idx], w_ih, w_hh, b_ih, b_hh, reverse)
                    c_n.append(c)
                else:
                    out, h = _core._gru_layer(layer_input, h0[idx], w_ih, w_hh, b_ih, b_hh, reverse)
                dir_outputs.append(out)
                h_n.append(h)
            layer_output = dir_outputs[0] if num_directions == 1 else cat(dir_outputs, 2)
            if self.dropout != 0 and self.training and layer < self.num_layers - 1:
                layer_output = F.dropout(layer_output, self.dropout, True)
            layer_input = layer_output
        output = layer_input.transpose(0, 1) if self.batch_first else layer_input
        if is_lstm:
            return output, (stack(h_n, 0), stack(c_n, 0))
        return output, stack(h_n, 0)

    def _run_steps(self, input, hx):
        """``_run`` as a Python loop over time steps, a few ops per step."""
        is_lstm = self.mode == "LSTM"
        time_dim = 1 if self.batch_first else 0
        if self.mode == "RNN_TANH":
            act = _tanh
        elif self.mode == "RNN_RELU":
            act = _relu

        num_directions = 2 if self.bidirectional else 1
        num_weights = (4 if self.bias else 2) + (1 if self.proj_size > 0 else 0)
        h0 = (hx[0] if is_lstm else hx).unbind(0)
        c0 = hx[1].unbind(0) if is_lstm else None

        layer_input = input
        h_n, c_n = [], []
        for layer in range(self.num_layers):
            dir_outputs = []
            for direction in range(num_directions):
                idx = layer * num_directions + direction
                weights = self._flat_weights[idx * num_weights:(idx + 1) * num_weights]
                w_ih, w_hh = weights[0], weights[1]
                b_ih, b_hh = (weights[2], weights[3]) if self.bias else (None, None)
                w_hr = weights[-1] if self.proj_size > 0 else None

                # Input projection of every time step at once: (T, B, G) or (B, T, G).
                steps = F.linear(layer_input, w_ih, b_ih).unbind(time_dim)
                if direction == 1:
                    steps = steps[::-1]
                h = h0[idx]
                c = c0[idx] if is_lstm else None
                outputs = []
                for gi in steps:
                    if is_lstm:
                        h, c = _lstm_step(gi, h, c, w_hh, b_hh, w_hr)
                    elif self.mode == "GRU":
                        h = _gru_step(gi, h, w_hh, b_hh)
                    else:
                        h = _rnn_step(gi, h, w_hh, b_hh, act)
                    outputs.append(h)
                if direction == 1:
                    outputs.reverse()
                dir_outputs.append(stack(outputs, time_dim))
                h_n.append(h)
                c_n.append(c)
            layer_output = dir_outputs[0] if num_directions == 1 else cat(dir_outputs, 2)
            if self.dropout != 0 and self.training and layer < self.num_layers - 1:
                layer_output = F.dropout(layer_output, self.dropout, True)
            layer_input = layer_output

        if is_lstm:
            return layer_input, (stack(h_n, 0), stack(c_n, 0))
        return layer_input, stack(h_n, 0)


def _packed_forward(step, gis, sizes, h0, c0):
    """The forward direction over packed time steps: the batch shrinks as sequences end; the
    final state of each sequence is its state at its last step."""
    h, c = h0, c0
    done_h, done_c = [], []  # the states of the sequences that ended, latest (lowest rows) last
    outputs = []
    for gi, bs in zip(gis, sizes):
        if bs < h.size(0):
            done_h.append(h[bs:])
            h = h[:bs]
            if c is not None:
                done_c.append(c[bs:])
                c = c[:bs]
        h, c = step(gi, h, c)
        outputs.append(h)
    if done_h:
        h = cat([h] + done_h[::-1])
        if c is not None:
            c = cat([c] + done_c[::-1])
    return outputs, h, c


def _packed_reverse(step, gis, sizes, h0, c0):
    """The reverse direction over packed time steps: each sequence starts from its initial
    state at its own last step, so the batch grows as the loop goes back in time."""
    n = sizes[-1]
    h = h0[:n]
    c = c0[:n] if c0 is not None else None
    outputs = [None] * len(sizes)
    for t in range(len(sizes) - 1, -1, -1):
        bs = sizes[t]
        if bs > h.size(0):
            h = cat([h, h0[h.size(0):bs]])
            if c is not None:
                c = cat([c, c0[c.size(0):bs]])
        h, c = step(gis[t], h, c)
        outputs[t] = h
    return outputs, h, c


# ------------------------------------------------------------------------- RNN / LSTM / GRU


class RNN(RNNBase):
    r"""Multi-layer Elman RNN with tanh or ReLU non-linearity:
    ``h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh)``.

    Arguments: ``input_size, hidden_size, num_layers=1, nonlinearity='tanh', bias=True,
    batch_first=False, dropout=0.0, bidirectional=False, device=None, dtype=None``.
    """

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if len(args) > 3:
            self.nonlinearity = args[3]
            args = args[:3] + args[4:]
        else:
            self.nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if self.nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif self.nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(f"Unknown nonlinearity '{self.nonlinearity}'. Select from 'tanh' or 'relu'.")
        super().__init__(mode, *args, **kwargs)

    def forward(self, input, hx=None):
        self._update_flat_weights()
        if _is_packed(input):
            return self._forward_packed(input, hx)
        num_directions = 2 if self.bidirectional else 1
        batch_sizes = None
        if input.dim() not in (2, 3):
            raise ValueError(f"RNN: Expected input to be 2D or 3D, got {input.dim()}D tensor instead")
        is_batched = input.dim() == 3
        batch_dim = 0 if self.batch_first else 1
        if not is_batched:
            input = input.unsqueeze(batch_dim)
            if hx is not None:
                if hx.dim() != 2:
                    raise RuntimeError(
                        f"For unbatched 2-D input, hx should also be 2-D but got {hx.dim()}-D tensor"
                    )
                hx = hx.unsqueeze(1)
        else:
            if hx is not None and hx.dim() != 3:
                raise RuntimeError(f"For batched 3-D input, hx should also be 3-D but got {hx.dim()}-D tensor")
        max_batch_size = input.size(0) if self.batch_first else input.size(1)
        if hx is None:
            hx = zeros(
                self.num_layers * num_directions,
                max_batch_size,
                self.hidden_size,
                dtype=input.dtype,
                device=input.device,
            )

        self.check_forward_args(input, hx, batch_sizes)
        if self.mode != "RNN_TANH" and self.mode != "RNN_RELU":
            raise AssertionError(f"mode must be RNN_TANH or RNN_RELU, got {self.mode}")
        output, hidden = self._run(input, hx)

        if not is_batched:
            output = output.squeeze(batch_dim)
            hidden = hidden.squeeze(1)
        return output, hidden


class LSTM(RNNBase):
    r"""Multi-layer long short-term memory RNN. Gates in PyTorch's order ``i, f, g, o``::

        i = sigmoid(W_ii x + b_ii + W_hi h + b_hi)    f = sigmoid(W_if x + b_if + W_hf h + b_hf)
        g = tanh(W_ig x + b_ig + W_hg h + b_hg)       o = sigmoid(W_io x + b_io + W_ho h + b_ho)
        c' = f * c + i * g                            h' = o * tanh(c')   (then W_hr h' if proj_size > 0)
    """

    def __init__(self, *args, **kwargs):
        super().__init__("LSTM", *args, **kwargs)

    def get_expected_cell_size(self, input, batch_sizes):
        if batch_sizes is not None:
            mini_batch = int(batch_sizes[0])
        else:
            mini_batch = input.size(0) if self.batch_first else input.size(1)
        num_directions = 2 if self.bidirectional else 1
        return (self.num_layers * num_directions, mini_batch, self.hidden_size)

    def check_forward_args(self, input, hidden, batch_sizes):
        self.check_input(input, batch_sizes)
        self.check_hidden_size(
            hidden[0],
            self.get_expected_hidden_size(input, batch_sizes),
            "Expected hidden[0] size {}, got {}",
        )
        self.check_hidden_size(
            hidden[1],
            self.get_expected_cell_size(input, batch_sizes),
            "Expected hidden[1] size {}, got {}",
        )

    def permute_hidden(self, hx, permutation):
        if permutation is None:
            return hx
        return _apply_permutation(hx[0], permutation), _apply_permutation(hx[1], permutation)

    def forward(self, input, hx=None):
        self._update_flat_weights()
        if _is_packed(input):
            return self._forward_packed(input, hx)
        batch_sizes = None
        num_directions = 2 if self.bidirectional else 1
        real_hidden_size = self.proj_size if self.proj_size > 0 else self.hidden_size
        if input.dim() not in (2, 3):
            raise ValueError(f"LSTM: Expected input to be 2D or 3D, got {input.dim()}D instead")
        is_batched = input.dim() == 3
        batch_dim = 0 if self.batch_first else 1
        if not is_batched:
            input = input.unsqueeze(batch_dim)
        max_batch_size = input.size(0) if self.batch_first else input.size(1)
        if hx is None:
            h_zeros = zeros(
                self.num_layers * num_directions,
                max_batch_size,
                real_hidden_size,
                dtype=input.dtype,
                device=input.device,
            )
            c_zeros = zeros(
                self.num_layers * num_directions,
                max_batch_size,
                self.hidden_size,
                dtype=input.dtype,
                device=input.device,
            )
            hx = (h_zeros, c_zeros)
            self.check_forward_args(input, hx, batch_sizes)
        else:
            if is_batched:
                if hx[0].dim() != 3 or hx[1].dim() != 3:
                    msg = (
                        "For batched 3-D input, hx and cx should "
                        f"also be 3-D but got ({hx[0].dim()}-D, {hx[1].dim()}-D) tensors"
                    )
                    raise RuntimeError(msg)
            else:
                if hx[0].dim() != 2 or hx[1].dim() != 2:
                    msg = (
                        "For unbatched 2-D input, hx and cx should "
                        f"also be 2-D but got ({hx[0].dim()}-D, {hx[1].dim()}-D) tensors"
                    )
                    raise RuntimeError(msg)
                hx = (hx[0].unsqueeze(1), hx[1].unsqueeze(1))
            # Each batch of the hidden state should match the input sequence that
            # the user believes he/she is passing in.
            self.check_forward_args(input, hx, batch_sizes)

        output, hidden = self._run(input, hx)

        if not is_batched:
            output = output.squeeze(batch_dim)
            hidden = (hidden[0].squeeze(1), hidden[1].squeeze(1))
        return output, hidden


class GRU(RNNBase):
    r"""Multi-layer gated recurrent unit RNN. Gates in PyTorch's order ``r, z, n``::

        r = sigmoid(W_ir x + b_ir + W_hr h + b_hr)    z = sigmoid(W_iz x + b_iz + W_hz h + b_hz)
        n = tanh(W_in x + b_in + r * (W_hn h + b_hn)) h' = (1 - z) * n + z * h
    """

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)

    def forward(self, input, hx=None):
        self._update_flat_weights()
        if _is_packed(input):
            return self._forward_packed(input, hx)
        batch_sizes = None
        if input.dim() not in (2, 3):
            raise ValueError(f"GRU: Expected input to be 2D or 3D, got {input.dim()}D instead")
        is_batched = input.dim() == 3
        batch_dim = 0 if self.batch_first else 1
        if not is_batched:
            input = input.unsqueeze(batch_dim)
            if hx is not None:
                if hx.dim() != 2:
                    raise RuntimeError(
                        f"For unbatched 2-D input, hx should also be 2-D but got {hx.dim()}-D tensor"
                    )
                hx = hx.unsqueeze(1)
        else:
            if hx is not None and hx.dim() != 3:
                raise RuntimeError(f"For batched 3-D input, hx should also be 3-D but got {hx.dim()}-D tensor")
        max_batch_size = input.size(0) if self.batch_first else input.size(1)
        if hx is None:
            num_directions = 2 if self.bidirectional else 1
            hx = zeros(
                self.num_layers * num_directions,
                max_batch_size,
                self.hidden_size,
                dtype=input.dtype,
                device=input.device,
            )

        self.check_forward_args(input, hx, batch_sizes)
        output, hidden = self._run(input, hx)

        if not is_batched:
            output = output.squeeze(batch_dim)
            hidden = hidden.squeeze(1)
        return output, hidden


# ------------------------------------------------------------------------------- cells


class RNNCellBase(Module):
    __constants__ = ["input_size", "hidden_size", "bias"]

    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        factory_kwargs = {"device": device, "dtype": dtype}
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_ih = Parameter(empty((num_chunks * hidden_size, input_size), **factory_kwargs))
        self.weight_hh = Parameter(empty((num_chunks * hidden_size, hidden_size), **factory_kwargs))
        if bias:
            self.bias_ih = Parameter(empty(num_chunks * hidden_size, **factory_kwargs))
            self.bias_hh = Parameter(empty(num_chunks * hidden_size, **factory_kwargs))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)

        self.reset_parameters()

    def extra_repr(self):
        s = "{input_size}, {hidden_size}"
        if "bias" in self.__dict__ and self.bias is not True:
            s += ", bias={bias}"
        if "nonlinearity" in self.__dict__ and self.nonlinearity != "tanh":
            s += ", nonlinearity={nonlinearity}"
        return s.format(**self.__dict__)

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)


class RNNCell(RNNCellBase):
    r"""An Elman RNN cell: ``h' = tanh(W_ih x + b_ih + W_hh h + b_hh)`` (or ReLU)."""

    __constants__ = ["input_size", "hidden_size", "bias", "nonlinearity"]

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None, dtype=None):
        factory_kwargs = {"device": device, "dtype": dtype}
        super().__init__(input_size, hidden_size, bias, num_chunks=1, **factory_kwargs)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        if input.dim() not in (1, 2):
            raise ValueError(f"RNNCell: Expected input to be 1D or 2D, got {input.dim()}D instead")
        if hx is not None and hx.dim() not in (1, 2):
            raise ValueError(f"RNNCell: Expected hidden to be 1D or 2D, got {hx.dim()}D instead")
        is_batched = input.dim() == 2
        if not is_batched:
            input = input.unsqueeze(0)

        if hx is None:
            hx = zeros(input.size(0), self.hidden_size, dtype=input.dtype, device=input.device)
        else:
            hx = hx.unsqueeze(0) if not is_batched else hx

        if self.nonlinearity == "tanh":
            act = _tanh
        elif self.nonlinearity == "relu":
            act = _relu
        else:
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        ret = _rnn_cell(input, hx, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh, act)

        if not is_batched:
            ret = ret.squeeze(0)
        return ret


class LSTMCell(RNNCellBase):
    r"""A long short-term memory cell (gates ``i, f, g, o``); returns ``(h', c')``."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        factory_kwargs = {"device": device, "dtype": dtype}
        super().__init__(input_size, hidden_size, bias, num_chunks=4, **factory_kwargs)

    def forward(self, input, hx=None):
        if input.dim() not in (1, 2):
            raise ValueError(f"LSTMCell: Expected input to be 1D or 2D, got {input.dim()}D instead")
        if hx is not None:
            for idx, value in enumerate(hx):
                if value.dim() not in (1, 2):
                    raise ValueError(f"LSTMCell: Expected hx[{idx}] to be 1D or 2D, got {value.dim()}D instead")
        is_batched = input.dim() == 2
        if not is_batched:
            input = input.unsqueeze(0)

        if hx is None:
            zeros_ = zeros(input.size(0), self.hidden_size, dtype=input.dtype, device=input.device)
            hx = (zeros_, zeros_)
        else:
            hx = (hx[0].unsqueeze(0), hx[1].unsqueeze(0)) if not is_batched else hx

        ret = _lstm_cell(input, hx, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)

        if not is_batched:
            ret = (ret[0].squeeze(0), ret[1].squeeze(0))
        return ret


class GRUCell(RNNCellBase):
    r"""A gated recurrent unit cell (gates ``r, z, n``)."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        factory_kwargs = {"device": device, "dtype": dtype}
        super().__init__(input_size, hidden_size, bias, num_chunks=3, **factory_kwargs)

    def forward(self, input, hx=None):
        if input.dim() not in (1, 2):
            raise ValueError(f"GRUCell: Expected input to be 1D or 2D, got {input.dim()}D instead")
        if hx is not None and hx.dim() not in (1, 2):
            raise ValueError(f"GRUCell: Expected hidden to be 1D or 2D, got {hx.dim()}D instead")
        is_batched = input.dim() == 2
        if not is_batched:
            input = input.unsqueeze(0)

        if hx is None:
            hx = zeros(input.size(0), self.hidden_size, dtype=input.dtype, device=input.device)
        else:
            hx = hx.unsqueeze(0) if not is_batched else hx

        ret = _gru_cell(input, hx, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)

        if not is_batched:
            ret = ret.squeeze(0)
        return ret
