"""vkt.amp.GradScaler, as torch.amp.GradScaler: scales the loss so float16 gradients do not underflow, unscales
the gradients in place with a finite check on their device, skips optimizer.step where one is inf or nan, and
updates the scale by torch's rule. The scale is a host float32 (torch keeps a device tensor): step reads
found_inf on the host anyway, so a device scale would save no wait."""
from collections import defaultdict
from enum import Enum

import numpy as np

from .. import _C
from ..autograd import no_grad


class OptState(Enum):
    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _refresh_per_optimizer_state():
    return {"stage": OptState.READY, "found_inf_per_device": {}}


class GradScaler:
    def __init__(self, device="vulkan", init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        self._device = device
        self._enabled = enabled
        if self._enabled:
            assert growth_factor > 1.0, "The growth factor must be > 1.0."
            assert backoff_factor < 1.0, "The backoff factor must be < 1.0."
            self._init_scale = init_scale
            self._scale = None  # np.float32 once used, as torch's lazily made scale tensor
            self._growth_factor = growth_factor
            self._backoff_factor = backoff_factor
            self._growth_interval = growth_interval
            self._init_growth_tracker = 0
            self._growth_tracker = None
            self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)

    def _lazy_init_scale_growth_tracker(self):
        assert self._growth_tracker is None, "_growth_tracker initialized before _scale"
        self._scale = np.float32(self._init_scale)
        self._growth_tracker = self._init_growth_tracker

    def _check_scale_growth_tracker(self, funcname):
        fix = "This may indicate your script did not use scaler.scale(loss or outputs) earlier in the iteration."
        assert self._scale is not None, f"Attempted {funcname} but _scale is None.  " + fix
        assert self._growth_tracker is not None, f"Attempted {funcname} but _growth_tracker is None.  " + fix

    def scale(self, outputs):
        """outputs (a tensor, or an iterable of them) times the scale."""
        if not self._enabled:
            return outputs
        if self._scale is None:
            self._lazy_init_scale_growth_tracker()
        if isinstance(outputs, _C.Tensor):
            return outputs * float(self._scale)

        def apply_scale(val):
            if isinstance(val, _C.Tensor):
                return val * float(self._scale)
            if isinstance(val, (list, tuple)):
                return type(val)(apply_scale(v) for v in val)
            if hasattr(val, "__iter__"):
                return map(apply_scale, val)
            raise ValueError("outputs must be a Tensor or an iterable of Tensors")

        return apply_scale(outputs)

    def _unscale_grads_(self, optimizer, inv_scale, allow_fp16):
        """Multiplies every gradient by inv_scale in place; per device, a 0-d tensor: any of them not finite."""
        bad = defaultdict(list)
        with no_grad():
            for group in optimizer.param_groups:
                for param in group["params"]:
                    if param.grad is None:
                        continue
                    if not allow_fp16 and param.grad.dtype == _C.float16:
                        raise ValueError("Attempting to unscale FP16 gradients.")
                    grad = param.grad
                    bad[str(grad.device)].append(grad.isfinite().logical_not().any())
                    grad.mul_(inv_scale)
            return {dev: _C.stack(flags).any() for dev, flags in bad.items()}

    def unscale_(self, optimizer):
        if not self._enabled:
            return
        self._check_scale_growth_tracker("unscale_")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        inv_scale = float(np.float32(1.0) / self._scale)  # float32 as torch's reciprocal of a float tensor
        state["found_inf_per_device"] = self._unscale_grads_(optimizer, inv_scale, False)
        state["stage"] = OptState.UNSCALED

    def _maybe_opt_step(self, optimizer, state, *args, **kwargs):
        if not sum(bool(v.item()) for v in state["found_inf_per_device"].values()):
            return optimizer.step(*args, **kwargs)
        return None

    def step(self, optimizer, *args, **kwargs):
        """optimizer.step(*args, **kwargs) on unscaled gradients, skipped where one was inf or nan."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        self._check_scale_growth_tracker("step")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state["stage"] is OptState.READY:
            self.unscale_(optimizer)
        assert len(state["found_inf_per_device"]) > 0, "No inf checks were recorded for this optimizer."
        retval = self._maybe_opt_step(optimizer, state, *args, **kwargs)
        state["stage"] = OptState.STEPPED
        return retval

    def update(self, new_scale=None):
        """The scale for the next iteration: backoff after an inf, growth after growth_interval clean steps."""
        if not self._enabled:
            return
        self._check_scale_growth_tracker("update")
        if new_scale is not None:
            if isinstance(new_scale, _C.Tensor):
                assert new_scale.numel() == 1, "new_scale should be a single-element tensor."
                assert not new_scale.requires_grad, "new_scale should not require grad."
                new_scale = new_scale.item()
            self._scale = np.float32(new_scale)
        else:
            found_infs = [f for state in self._per_optimizer_states.values()
                          for f in state["found_inf_per_device"].values()]
            assert len(found_infs) > 0, "No inf checks were recorded prior to update."
            self._update_scale(any(bool(f.item()) for f in found_infs))
        self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)

    def _update_scale(self, found_inf):
        """torch's _amp_update_scale_, in float32."""
        if found_inf:
            self._scale = np.float32(self._scale * np.float32(self._backoff_factor))
            self._growth_tracker = 0
            return
        successful = self._growth_tracker + 1
        if successful == self._growth_interval:
            grown = np.float32(float(self._scale) * self._growth_factor)
            if np.isfinite(grown):
                self._scale = grown
            self._growth_tracker = 0
        else:
            self._growth_tracker = successful

    def get_scale(self):
        if not self._enabled:
            return 1.0
        return self._init_scale if self._scale is None else float(self._scale)

    def get_growth_factor(self):
        return self._growth_factor

    def set_growth_factor(self, new_factor):
        self._growth_factor = new_factor

    def get_backoff_factor(self):
        return self._backoff_factor

    def set_backoff_factor(self, new_factor):
        self._backoff_factor = new_factor

    def get_growth_interval(self):
        return self._growth_interval

    def set_growth_interval(self, new_interval):
        self._growth_interval = new_interval

    def _get_growth_tracker(self):
        if not self._enabled:
            return 0
        return self._init_growth_tracker if self._growth_tracker is None else self._growth_tracker

    def is_enabled(self):
        return self._enabled

    def state_dict(self):
        if not self._enabled:
            return {}
        return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor, "growth_interval": self._growth_interval,
                "_growth_tracker": self._get_growth_tracker()}

    def load_state_dict(self, state_dict):
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved "
                               "from a disabled instance of GradScaler.")
        self._init_scale = state_dict["scale"]
        if self._scale is not None:
            self._scale = np.float32(state_dict["scale"])
        self._growth_factor = state_dict["growth_factor"]
        self._backoff_factor = state_dict["backoff_factor"]
        self._growth_interval = state_dict["growth_interval"]
        self._init_growth_tracker = state_dict["_growth_tracker"]
        if self._growth_tracker is not None:
            self._growth_tracker = state_dict["_growth_tracker"]
