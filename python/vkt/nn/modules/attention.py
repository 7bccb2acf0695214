"""MultiheadAttention with PyTorch's parameters (in_proj_weight/in_proj_bias or q/k/v_proj_weight,
out_proj, bias_k/bias_v), so its state dicts load; the attention itself is vkt.nn.functional's
scaled_dot_product_attention, or softmax(q k^T) @ v spelled out when the weights are returned."""
import math

from ... import bool as vkt_bool
from ... import cat, empty, zeros
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .linear import Linear
from .module import Module


class NonDynamicallyQuantizableLinear(Linear):
    """PyTorch's name for MultiheadAttention's out_proj, kept so reprs match."""


def _float_mask(mask, dtype):
    """A bool mask (True: not allowed) as an additive float mask; a float mask as it is."""
    if mask is None or mask.dtype != vkt_bool:
        return mask
    return zeros(*mask.shape, dtype=dtype, device=mask.device).masked_fill(mask, float("-inf"))


def _check_attn_mask(mask, batch_heads, lq, lk):
    if mask.dim() == 2 and tuple(mask.shape) != (lq, lk):
        raise RuntimeError(f"The shape of the 2D attn_mask is {mask.shape}, but should be {(lq, lk)}.")
    if mask.dim() == 3 and tuple(mask.shape) != (batch_heads, lq, lk):
        raise RuntimeError(
            f"The shape of the 3D attn_mask is {mask.shape}, but should be {(batch_heads, lq, lk)}.")
    if mask.dim() not in (2, 3):
        raise RuntimeError(f"attn_mask's dimension {mask.dim()} is not supported")


class MultiheadAttention(Module):
    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False, add_zero_attn=False,
                 kdim=None, vdim=None, batch_first=False, device=None, dtype=None):
        super().__init__()
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(
                f"embed_dim and num_heads must be greater than 0, got embed_dim={embed_dim} and "
                f"num_heads={num_heads} instead")
        self.embed_dim, self.num_heads, self.dropout, self.batch_first = embed_dim, num_heads, dropout, batch_first
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != embed_dim:
            raise AssertionError("embed_dim must be divisible by num_heads")
        kw = {"device": device, "dtype": dtype}
        if self._qkv_same_embed_dim:
            self.in_proj_weight = Parameter(empty(3 * embed_dim, embed_dim, **kw))
            for name in ("q_proj_weight", "k_proj_weight", "v_proj_weight"):
                self.register_parameter(name, None)
        else:
            self.q_proj_weight = Parameter(empty(embed_dim, embed_dim, **kw))
            self.k_proj_weight = Parameter(empty(embed_dim, self.kdim, **kw))
            self.v_proj_weight = Parameter(empty(embed_dim, self.vdim, **kw))
            self.register_parameter("in_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(empty(3 * embed_dim, **kw))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias, **kw)
        if add_bias_kv:
            self.bias_k = Parameter(empty(1, 1, embed_dim, **kw))
            self.bias_v = Parameter(empty(1, 1, embed_dim, **kw))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self):
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            for w in (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight):
                init.xavier_uniform_(w)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
            init.xavier_normal_(self.bias_v)

    def _project(self, query, key, value):
        """q, k, v in (N, L, E) from inputs in (N, L, E_q/k/v); a shared input is projected once."""
        e = self.embed_dim
        b = [None] * 3 if self.in_proj_bias is None else self.in_proj_bias.chunk(3)
        if not self._qkv_same_embed_dim:
            weights = (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight)
            return tuple(F.linear(x, w, bb) for x, w, bb in zip((query, key, value), weights, b))
        if query is key and key is value:
            return F.linear(query, self.in_proj_weight, self.in_proj_bias).split(e, dim=-1)
        w = self.in_proj_weight
        return F.linear(query, w[:e], b[0]), F.linear(key, w[e:2 * e], b[1]), F.linear(value, w[2 * e:], b[2])

    def _extend_keys(self, k, v, mask):
        """add_bias_kv, then add_zero_attn: one more key/value position each, the mask padded to match."""
        n = k.shape[0]
        if self.bias_k is not None:
            k = cat([k, self.bias_k.expand(n, 1, self.embed_dim)], dim=1)
            v = cat([v, self.bias_v.expand(n, 1, self.embed_dim)], dim=1)
            mask = None if mask is None else F.pad(mask, (0, 1))
        if self.add_zero_attn:
            k, v = F.pad(k, (0, 0, 0, 1)), F.pad(v, (0, 0, 0, 1))
            mask = None if mask is None else F.pad(mask, (0, 1))
        return k, v, mask

    def _merged_mask(self, attn_mask, key_padding_mask, n, lq, lk, dtype):
        """attn_mask ((L, S) or (N*H, L, S)) and key_padding_mask ((N, S)) as one additive float mask that
        broadcasts to (N, H, L, S)."""
        mask = _float_mask(attn_mask, dtype)
        if mask is not None:
            _check_attn_mask(mask, n * self.num_heads, lq, lk)
            if mask.dim() == 3:
                mask = mask.reshape(n, self.num_heads, lq, lk)
        kpm = _float_mask(key_padding_mask, dtype)
        if kpm is not None:
            kpm = kpm.reshape(n, 1, 1, lk)
            mask = kpm if mask is None else mask + kpm
        return mask

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
                average_attn_weights=True, is_causal=False):
        if is_causal and attn_mask is None:
            raise RuntimeError(
                "Need attn_mask if specifying the is_causal hint. You may use the Transformer module method "
                "`generate_square_subsequent_mask` to create this mask.")
        batched = query.dim() == 3
        if not batched:
            query, key, value = (x.unsqueeze(0) for x in (query, key, value))
            key_padding_mask = None if key_padding_mask is None else key_padding_mask.unsqueeze(0)
        elif not self.batch_first:
            query, key, value = (x.transpose(0, 1) for x in (query, key, value))
        out, weights = self._attend(query, key, value, key_padding_mask, need_weights, attn_mask,
                                    average_attn_weights)
        if not batched:
            return out.squeeze(0), None if weights is None else weights.squeeze(0)
        return (out if self.batch_first else out.transpose(0, 1)), weights

    def _attend(self, query, key, value, key_padding_mask, need_weights, attn_mask, average_attn_weights):
        """Attention over batch-first (N, L, E) inputs: (output (N, L, E), weights or None)."""
        n, lq = query.shape[:2]
        q, k, v = self._project(query, key, value)
        mask = self._merged_mask(attn_mask, key_padding_mask, n, lq, k.shape[1], q.dtype)
        k, v, mask = self._extend_keys(k, v, mask)
        q, k, v = (x.reshape(n, x.shape[1], self.num_heads, self.head_dim).transpose(1, 2) for x in (q, k, v))
        p = self.dropout if self.training else 0.0
        if not need_weights:
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p)
            return self.out_proj(out.transpose(1, 2).reshape(n, lq, self.embed_dim)), None
        scores = (q * math.sqrt(1.0 / self.head_dim)) @ k.mT
        weights = (scores if mask is None else scores + mask).softmax(-1)
        if p > 0.0:
            weights = F.dropout(weights, p)
        out = self.out_proj((weights @ v).transpose(1, 2).reshape(n, lq, self.embed_dim))
        return out, weights.mean(dim=1) if average_attn_weights else weights
