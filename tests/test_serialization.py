# vkt.save / vkt.load round trips (every dtype, views, 0-d and empty tensors, nested state dicts,
# map_location, weights_only) and vkt.safetensors both ways with safetensors.torch; truncated and
# corrupted files must raise a clear error naming the problem, never crash or load wrong data.
import collections
import io
import pickle
import struct
import zipfile

import numpy as np
import pytest
from conftest import DTYPES, assert_bits_equal, run_python

import vkt
import vkt.safetensors as vst

torch = pytest.importorskip("torch")
safetensors_torch = pytest.importorskip("safetensors.torch")


def sample(dtype, shape, seed=0):
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return np.asarray(rng.random(shape) < 0.5)
    if dtype == "uint8":
        return np.asarray(rng.integers(0, 256, shape), dtype=np.uint8)
    if dtype.startswith("int"):
        return np.asarray(rng.integers(-1000, 1000, shape), dtype=dtype)
    return np.asarray(rng.standard_normal(shape) * 100, dtype=dtype)


def round_trip(obj, **load_args):
    buf = io.BytesIO()
    vkt.save(obj, buf)
    buf.seek(0)
    return vkt.load(buf, **load_args)


def assert_tensor(got, ref, device):
    assert isinstance(got, vkt.Tensor) and got.device.type == device
    assert_bits_equal(got.cpu().numpy(), ref)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(), (0,), (3, 0, 2), (5,), (3, 7)])
def test_every_dtype_and_shape_round_trips(device, dtype, shape):
    ref = sample(dtype, shape)
    got = round_trip({"t": vkt.tensor(ref, device=device)})["t"]
    assert_tensor(got, ref, device)
    assert got.dtype == getattr(vkt, dtype) and got.is_contiguous() and got.is_leaf


def test_paths_and_file_objects(tmp_path):
    ref = sample("float32", (4, 3))
    vkt.save([vkt.tensor(ref)], tmp_path / "a.pt")
    vkt.save([vkt.tensor(ref)], str(tmp_path / "b.pt"))
    with open(tmp_path / "c.pt", "wb") as f:
        vkt.save([vkt.tensor(ref)], f)

    class Unseekable:  # a pipe or socket: read() only
        def __init__(self, data):
            self.data = io.BytesIO(data)

        def read(self, n=-1):
            return self.data.read(n)

    with pytest.raises(RuntimeError, match=f"Parent directory {tmp_path / 'no'} does not exist."):
        vkt.save([], tmp_path / "no" / "d.pt")
    with pytest.raises(FileNotFoundError):
        vkt.load(tmp_path / "d.pt")
    for path in ["a.pt", "b.pt", "c.pt"]:
        assert_tensor(vkt.load(tmp_path / path)[0], ref, "cpu")
        with open(tmp_path / path, "rb") as f:
            assert_tensor(vkt.load(f)[0], ref, "cpu")
        assert_tensor(vkt.load(Unseekable((tmp_path / path).read_bytes()))[0], ref, "cpu")


@pytest.mark.parametrize("view", [
    lambda b: b[2:5], lambda b: b.t(), lambda b: b[:, 1], lambda b: b[::2, ::3], lambda b: b[1, 2],
    lambda b: b[:1, :1].expand(4, 200), lambda b: b.reshape(2, 5, 40).permute(2, 0, 1),
])
def test_views_are_saved_compactly(device, view):
    base_np = sample("float32", (10, 40))
    got_view = view(vkt.tensor(base_np, device=device))
    ref = np.asarray(got_view.cpu().numpy(), order="C")
    buf = io.BytesIO()
    vkt.save(got_view, buf)
    payload = zipfile.ZipFile(io.BytesIO(buf.getvalue())).getinfo("vkt/data/0").file_size
    assert payload == ref.nbytes
    buf.seek(0)
    assert_tensor(vkt.load(buf), ref, device)


def test_a_tensor_saved_twice_loads_as_one():
    t = vkt.arange(6.0)
    loaded = round_trip({"a": t, "b": [t, t[1:]]})
    assert loaded["a"] is loaded["b"][0]
    assert loaded["b"][1] is not loaded["a"] and loaded["b"][1].tolist() == [1.0, 2.0, 3.0, 4.0, 5.0]


def test_nested_state_dicts_keep_their_types(device):
    w = vkt.tensor(sample("float32", (3, 2)), device=device)
    state = collections.OrderedDict([("fc.weight", w), ("fc.bias", vkt.zeros(2, device=device)),
                                     ("bn.num_batches_tracked", vkt.tensor(7))])
    optim = {"state": {0: {"step": vkt.tensor(3.0), "exp_avg": vkt.ones(3, 2, device=device)}, 1: {}},
             "param_groups": [{"lr": 1e-3, "betas": (0.9, 0.999), "eps": 1e-8, "params": [0, 1], "amsgrad": False,
                               "name": "decoder", "foreach": None, "extras": {1, 2}, "c": 1 + 2j}]}
    checkpoint = {"model": state, "optimizer": optim, "epoch": 4, "dtype": vkt.float16, "where": vkt.device("cpu"),
                  "raw": b"\x00\x01", "history": [1.5, float("inf")]}
    got = round_trip(checkpoint)
    assert type(got["model"]) is collections.OrderedDict and list(got["model"]) == list(state)
    assert_tensor(got["model"]["fc.weight"], w.cpu().numpy(), device)
    assert got["model"]["bn.num_batches_tracked"].item() == 7
    assert got["optimizer"]["param_groups"] == optim["param_groups"]
    assert got["optimizer"]["state"][0]["exp_avg"].device.type == device and got["optimizer"]["state"][1] == {}
    assert got["dtype"] == vkt.float16 and got["where"] == vkt.device("cpu")
    assert (got["epoch"], got["raw"], got["history"]) == (4, b"\x00\x01", [1.5, float("inf")])


class Param(vkt.Tensor):
    def __new__(cls, data, requires_grad=True):
        return vkt._C._make_subclass(cls, data, requires_grad)


def test_tensor_subclasses_load_as_themselves(monkeypatch):
    p = Param(vkt.arange(3.0))
    saved = io.BytesIO()
    vkt.save({"p": p, "again": p, "frozen": Param(vkt.ones(2), requires_grad=False)}, saved)
    with pytest.raises(pickle.UnpicklingError, match="Weights only load failed.*Param"):
        vkt.load(io.BytesIO(saved.getvalue()))
    got = vkt.load(io.BytesIO(saved.getvalue()), weights_only=False)
    assert type(got["p"]) is Param and got["p"].requires_grad and got["p"].is_leaf and got["p"] is got["again"]
    assert type(got["frozen"]) is Param and not got["frozen"].requires_grad and got["p"].tolist() == [0.0, 1.0, 2.0]
    parameter = type("Parameter", (Param,), {"__module__": "vkt.nn"})  # what vkt.nn will define
    monkeypatch.setattr(vkt.nn, "Parameter", parameter, raising=False)
    saved = io.BytesIO()
    vkt.save([parameter(vkt.ones(2))], saved)
    assert type(vkt.load(io.BytesIO(saved.getvalue()))[0]) is parameter  # vkt.nn.Parameter passes weights_only
    got = vkt.load(io.BytesIO(torch_saved({"w": torch.nn.Parameter(torch.ones(2))})))
    assert type(got["w"]) is parameter and got["w"].requires_grad


def test_requires_grad_is_kept_and_tensors_are_leaves():
    a = vkt.ones(3, requires_grad=True)
    loaded = round_trip({"leaf": a, "result": a * 2, "plain": vkt.ones(2)})
    assert loaded["leaf"].requires_grad and loaded["leaf"].is_leaf and loaded["leaf"].grad_fn is None
    assert loaded["result"].requires_grad and loaded["result"].is_leaf
    assert not loaded["plain"].requires_grad


def test_map_location(dev):
    saved = {"c": vkt.arange(3.0), "v": vkt.arange(4, device=dev)}
    cases = [
        (None, "cpu", dev), ("cpu", "cpu", "cpu"), ("vulkan", dev, dev), (vkt.device("cpu"), "cpu", "cpu"),
        (vkt.device("vulkan:0"), dev, dev), ({"cpu": "vulkan:0"}, dev, dev), ({"vulkan:0": "cpu"}, "cpu", "cpu"),
        (lambda t, loc: None, "cpu", dev), (lambda t, loc: t, "cpu", "cpu"), (lambda t, loc: t.to(dev), dev, dev),
    ]
    for map_location, c_device, v_device in cases:
        got = round_trip(saved, map_location=map_location)
        assert (got["c"].device.type, got["v"].device.type) == (c_device, v_device), map_location
        assert got["c"].tolist() == [0.0, 1.0, 2.0] and got["v"].tolist() == [0, 1, 2, 3]
    seen = []
    round_trip(saved, map_location=lambda t, loc: seen.append((t.device.type, loc)))
    assert sorted(seen) == [("cpu", "cpu"), ("cpu", "vulkan:0")]
    with pytest.raises(TypeError, match="map_location should be"):
        round_trip(saved, map_location=3)


class Custom:
    def __init__(self):
        self.value = 3


class Exploit:
    def __reduce__(self):
        return (print, ("owned",))


def test_weights_only_refuses_classes(capsys):
    buf = io.BytesIO()
    vkt.save({"obj": Custom(), "w": vkt.ones(2)}, buf)
    buf.seek(0)
    with pytest.raises(pickle.UnpicklingError, match=r"Weights only load failed.*Custom.*weights_only=False"):
        vkt.load(buf)
    buf.seek(0)
    assert vkt.load(buf, weights_only=False)["obj"].value == 3
    buf = io.BytesIO()
    vkt.save([Exploit()], buf)
    buf.seek(0)
    with pytest.raises(pickle.UnpicklingError, match="builtins.print"):
        vkt.load(buf)
    assert "owned" not in capsys.readouterr().out


def small_checkpoint():
    buf = io.BytesIO()
    vkt.save({"w": vkt.tensor(sample("float32", (2, 3))), "step": 3, "b": vkt.tensor([True, False])}, buf)
    return buf.getvalue()


def load_bytes(data, **kwargs):
    return vkt.load(io.BytesIO(data), **kwargs)


def test_every_truncation_raises_a_clear_error():
    data = small_checkpoint()
    for n in range(len(data)):
        with pytest.raises(RuntimeError, match="vkt.load: "):
            load_bytes(data[:n])


def small_torch_checkpoint():
    buf = io.BytesIO()
    torch.save({"w": torch.tensor(sample("float32", (2, 3))), "step": 3, "b": torch.tensor([True, False])}, buf)
    return buf.getvalue()


@pytest.mark.parametrize("make", [small_checkpoint, small_torch_checkpoint])
def test_every_flipped_byte_raises_or_loads_the_same(make):
    data = make()
    ref = load_bytes(data)
    failures = 0
    for i in range(len(data)):
        bad = bytearray(data)
        bad[i] ^= 0xFF
        try:
            got = load_bytes(bytes(bad))
        except RuntimeError as e:
            assert str(e).startswith("vkt.load: ")
            failures += 1
            continue
        # a flip the zip format does not check (a timestamp, a version field, padding) changes nothing
        assert got["step"] == 3 and got["w"].tolist() == ref["w"].tolist() and got["b"].tolist() == [True, False]
    assert failures > len(data) // 4


def forged(entries):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, payload in entries.items():
            z.writestr(name, payload)
    return buf.getvalue()


def pickled_tensor_id(pid):
    class P(pickle.Pickler):
        def persistent_id(self, obj):
            return pid if obj == "T" else None

    buf = io.BytesIO()
    P(buf, protocol=4).dump({"t": "T"})
    return buf.getvalue()


def one_tensor(dtype, shape, payload=None, location="cpu"):
    """A forged archive holding one tensor of dtype and shape, with payload as its data (None: no entry)."""
    record = ("tensor", "0", dtype, shape, location, False, None)
    entries = {"vkt/version": b"1", "vkt/data.pkl": pickled_tensor_id(record)}
    if payload is not None:
        entries["vkt/data/0"] = payload
    return forged(entries)


@pytest.mark.parametrize("data,message", [
    (b"", "not a vkt.save archive"),
    (b"\x00" * 100, "not a vkt.save archive"),
    (forged({"weights.bin": b"x"}), "no entry vkt/version"),
    (forged({"vkt/version": b"9", "vkt/data.pkl": b""}), "unsupported file version"),
    (forged({"vkt/version": b"1"}), "no entry vkt/data.pkl"),
    (forged({"vkt/version": b"1", "vkt/data.pkl": b"\x80\x04garbage"}), "pickled object in the file is corrupt"),
    (one_tensor("float32", (2,)), "no entry vkt/data/0"),
    (one_tensor("float32", (2,), b"\x00" * 7), "needs 8 bytes but the file holds 7"),
    (one_tensor("bfloat16", (0,), b""), "unknown or malformed object"),
    (one_tensor("float32", (-1,), b""), "unknown or malformed object"),
    (one_tensor("float32", 5, b""), "unknown or malformed object"),
    (one_tensor("float32", ([1],), b""), "unknown or malformed object"),
    (one_tensor("float32", (1 << 32, 1 << 32), b""), "needs 73786976294838206464 bytes but the file holds 0"),
    (forged({"vkt/version": b"1", "vkt/data.pkl": pickled_tensor_id(("os.system", "ls"))}), "unknown or malformed"),
    (forged({"vkt/version": b"1", "vkt/data.pkl": pickled_tensor_id(["tensor"])}), "unknown or malformed"),
])
def test_malformed_files_name_the_problem(data, message):
    with pytest.raises(RuntimeError, match=message):
        load_bytes(data)


def test_vulkan_tensors_on_a_machine_without_vulkan(tmp_path, dev):
    vkt.save({"w": vkt.arange(3.0, device=dev)}, tmp_path / "v.pt")
    code = ("import vkt, sys\ntry:\n    vkt.load(sys.argv[1])\nexcept RuntimeError as e:\n    print(e)\n"
            "print(vkt.load(sys.argv[1], map_location='cpu')['w'].tolist())")
    r = run_python(None, args=["-c", code, str(tmp_path / "v.pt")],
                   env={"VKT_VULKAN_LIBRARY": "/nonexistent", "VKT_VALIDATION": None})
    assert r.returncode == 0, r.stderr
    assert "vkt.vulkan.is_available() is False" in r.stdout and "map_location='cpu'" in r.stdout
    assert r.stdout.strip().endswith("[0.0, 1.0, 2.0]")


def test_a_device_vkt_lacks_names_map_location():
    data = one_tensor("float32", (2,), b"\x00" * 8, location="cuda:0")
    with pytest.raises(RuntimeError, match="saved on 'cuda:0', a device vkt does not have; pass map_location"):
        load_bytes(data)
    assert load_bytes(data, map_location={"cuda:0": "cpu"})["t"].tolist() == [0.0, 0.0]


def torch_saved(obj):
    buf = io.BytesIO()
    torch.save(obj, buf)
    return buf.getvalue()


def test_torch_save_files_load(device):
    model = torch.nn.Linear(3, 2)
    base = torch.arange(12.0).reshape(3, 4)
    state = model.state_dict()
    state.update({"half": torch.arange(6, dtype=torch.float16)[1:], "t": base.t(), "row": base[1],
                  "every": base[:, ::2], "mask": torch.tensor([True, False]), "n": torch.tensor(7),
                  "i32": torch.arange(3, dtype=torch.int32), "u8": torch.arange(3, dtype=torch.uint8),
                  "f64": torch.ones(2, 2, dtype=torch.float64), "empty": torch.zeros(0, 3),
                  "param": torch.nn.Parameter(torch.ones(2))})
    checkpoint = {"model": state, "optimizer": {"param_groups": [{"lr": 0.1, "betas": (0.9, 0.99)}]},
                  "tag": b"\x00\xff", "size": torch.Size([2, 3])}
    got = vkt.load(io.BytesIO(torch_saved(checkpoint)), map_location=device)
    assert type(got["model"]) is collections.OrderedDict and list(got["model"]) == list(state)
    for name, ref in state.items():
        assert str(got["model"][name].dtype).split(".")[-1] == str(ref.dtype).split(".")[-1], name
        assert_tensor(got["model"][name], ref.detach().numpy(), device)
    assert got["model"]["param"].requires_grad and not got["model"]["weight"].requires_grad
    assert got["optimizer"] == checkpoint["optimizer"] and got["tag"] == b"\x00\xff" and got["size"] == (2, 3)


def test_torch_file_saved_on_cuda_needs_map_location():
    archive = zipfile.ZipFile(io.BytesIO(torch_saved({"w": torch.ones(2)})))
    entries = {name: archive.read(name) for name in archive.namelist()}
    entries["archive/data.pkl"] = entries["archive/data.pkl"].replace(b"X\x03\x00\x00\x00cpu",
                                                                      b"X\x06\x00\x00\x00cuda:0")
    with pytest.raises(RuntimeError, match="^vkt.load: the file's tensors were saved on 'cuda:0'"):
        load_bytes(forged(entries))
    assert load_bytes(forged(entries), map_location={"cuda:0": "cpu"})["w"].tolist() == [1.0, 1.0]


def test_torch_save_files_refuse_what_vkt_lacks():
    with pytest.raises(RuntimeError, match="torch.BFloat16Storage, whose dtype vkt does not have"):
        load_bytes(torch_saved({"w": torch.ones(2, dtype=torch.bfloat16)}))
    with pytest.raises(pickle.UnpicklingError, match="Weights only load failed.*Custom"):
        load_bytes(torch_saved({"obj": Custom()}))
    data = torch_saved({"w": torch.ones(3)})
    for n in range(0, len(data), 7):
        with pytest.raises(RuntimeError, match="vkt.load: "):
            load_bytes(data[:n])


# ---- safetensors ----

ST_DTYPES = {"float32": torch.float32, "float64": torch.float64, "float16": torch.float16, "int32": torch.int32,
             "int64": torch.int64, "uint8": torch.uint8, "bool": torch.bool}


def st_tensors(shapes=((2, 3), (), (0, 4), (5,))):
    return {f"{dtype}_{i}": sample(dtype, shape, seed=i) for dtype in ST_DTYPES for i, shape in enumerate(shapes)}


def test_safetensors_from_torch(tmp_path, device):
    ref = st_tensors()
    safetensors_torch.save_file({k: torch.from_numpy(v.copy()) for k, v in ref.items()}, tmp_path / "t.safetensors",
                                metadata={"format": "pt"})
    got = vst.load_file(tmp_path / "t.safetensors", device=device)
    assert sorted(got) == sorted(ref)
    for name, value in ref.items():
        assert_tensor(got[name], value, device)
    from_bytes = vst.load(safetensors_torch.save({k: torch.from_numpy(v.copy()) for k, v in ref.items()}))
    for name, value in ref.items():
        assert_tensor(from_bytes[name], value, "cpu")


def test_safetensors_to_torch(tmp_path, device):
    ref = st_tensors()
    tensors = {k: vkt.tensor(v, device=device) for k, v in ref.items()}
    vst.save_file(tensors, tmp_path / "v.safetensors", metadata={"epoch": "3"})
    got = safetensors_torch.load_file(tmp_path / "v.safetensors")
    for name, value in ref.items():
        assert got[name].dtype == ST_DTYPES[str(value.dtype)] and np.array_equal(got[name].numpy(), value)
    from safetensors import safe_open

    with safe_open(tmp_path / "v.safetensors", framework="np") as f:
        assert f.metadata() == {"epoch": "3"}
    as_torch = {k: torch.from_numpy(v.copy()) for k, v in ref.items()}
    assert vst.save(tensors, metadata={"epoch": "3"}) == safetensors_torch.save(as_torch, metadata={"epoch": "3"})
    assert (tmp_path / "v.safetensors").read_bytes() == vst.save(tensors, metadata={"epoch": "3"})


def test_safetensors_device_argument(tmp_path, dev):
    vst.save_file({"x": vkt.arange(3.0)}, tmp_path / "x.safetensors")
    for device in [dev, f"{dev}:0", vkt.device(dev), 0]:
        assert vst.load_file(tmp_path / "x.safetensors", device=device)["x"].device.type == dev


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.int8, torch.int16])
def test_safetensors_dtype_vkt_lacks(dtype):
    data = safetensors_torch.save({"w": torch.zeros(2, dtype=dtype)})
    with pytest.raises(vst.SafetensorError, match="tensor 'w' has dtype .*, which vkt does not have"):
        vst.load(data)


@pytest.mark.parametrize("make,error", [
    (lambda m, t: m.save({"a": t(4)[::2]}), ValueError),
    (lambda m, t: m.save({"a": 1}), ValueError),
    (lambda m, t: m.save({1: t(2)}), TypeError),
    (lambda m, t: m.save({"a": t(2)}, metadata={"k": 1}), TypeError),
])
def test_safetensors_save_errors_match_safetensors_torch(make, error):
    with pytest.raises(error):
        make(safetensors_torch, torch.zeros)
    with pytest.raises(error):
        make(vst, vkt.zeros)


def st_bytes(header, data=b""):
    text = header if isinstance(header, bytes) else json_bytes(header)
    return struct.pack("<Q", len(text)) + text + data


def json_bytes(header):
    import json

    return json.dumps(header).encode()


def entry(dtype="F32", shape=(2,), offsets=(0, 8)):
    return {"dtype": dtype, "shape": list(shape), "data_offsets": list(offsets)}


@pytest.mark.parametrize("data,message", [
    (b"\x01\x02", "header too small"),
    (struct.pack("<Q", 10 ** 9) + b"{}", "header too large"),
    (struct.pack("<Q", 50) + b"{}", "invalid header length"),
    (st_bytes(b"[1, 2]"), "invalid header start"),
    (st_bytes(b"{\xff}"), "invalid UTF-8"),
    (st_bytes(b"{\"a\": "), "invalid JSON"),
    (st_bytes({"a": entry()}, b"\x00" * 4), "tensor data past the end of the buffer"),
    (st_bytes({"a": entry(offsets=(0, 8))}, b"\x00" * 12), "not fully covered"),
    (st_bytes({"a": entry(offsets=(4, 12))}, b"\x00" * 12), "invalid offset for tensor 'a'"),
    (st_bytes({"a": entry(), "b": entry(offsets=(4, 12))}, b"\x00" * 12), "invalid offset for tensor 'b'"),
    (st_bytes({"a": entry(offsets=(0, 1 << 40))}, b"\x00" * 8), "does not fit"),
    (st_bytes({"a": entry(shape=(3,))}, b"\x00" * 8), "does not fit"),
    (st_bytes({"a": entry(shape=(-2,))}, b"\x00" * 8), "has shape"),
    (st_bytes({"a": entry(shape=(1 << 32, 1 << 32), offsets=(0, 0))}), "does not fit"),
    (st_bytes({"a": entry(offsets=(8, 0))}, b"\x00" * 8), "invalid offset"),
    (st_bytes({"a": entry(dtype="Q7")}, b"\x00" * 8), "unknown dtype"),
    (st_bytes({"a": {"dtype": "F32", "shape": [2]}}, b"\x00" * 8), "needs exactly dtype, shape and data_offsets"),
    (st_bytes({"a": entry(), "__metadata__": {"k": 1}}, b"\x00" * 8), "__metadata__ must map str to str"),
])
def test_safetensors_bad_headers_name_the_problem(data, message):
    with pytest.raises(vst.SafetensorError, match=message):
        vst.load(data)


def test_safetensors_every_truncation_and_header_flip_is_caught():
    data = vst.save({"w": vkt.arange(6.0).reshape(2, 3), "i": vkt.tensor([1, 2, 3])}, metadata={"k": "v"})
    for n in range(len(data)):
        with pytest.raises(vst.SafetensorError):
            vst.load(data[:n])
    header_end = 8 + struct.unpack_from("<Q", data)[0]
    for i in range(header_end):
        bad = bytearray(data)
        bad[i] ^= 0x5A
        try:
            got = vst.load(bytes(bad))
        except vst.SafetensorError:
            continue
        assert all(isinstance(t, vkt.Tensor) for t in got.values())  # a renamed key, say, is still a valid file
