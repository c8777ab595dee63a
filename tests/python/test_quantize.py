"""precision_lab.quantize against `precision-lab-cli quantize --binary`, bit for bit, over every
format and rounding; its statistics; and every bad input refused before anything is written."""

import re
import subprocess

import numpy as np
import pytest

import precision_lab as pl

ROUNDINGS = pl.ROUNDINGS
CUSTOM = ["e5m2:bias=16:nosub", "e3m3:fn", "e4m3:unsigned", "e2m1:nozero"]
ELEMENT = [f["name"] for f in pl.formats() if f["kind"] == "element"] + CUSTOM
BLOCK = [f["name"] for f in pl.formats() if f["kind"] == "block"]


def edge_array():
    """Random values over many binades, and the edges: +-0, float32 subnormals, each named
    format's max and just past it, Inf, NaN."""
    rng = np.random.default_rng(1234)
    np.seterr(over="ignore")  # "just past max" of float32-wide formats is Inf, on purpose
    values = [rng.standard_normal(3000) * np.exp2(rng.integers(-40, 20, 3000))]
    edges = [0.0, -0.0, 1e-45, -1e-45, 1e-40, 1.17549435e-38, np.inf, -np.inf, np.nan, 1.0, -1.0]
    for f in pl.formats():
        if f["kind"] == "element":
            m = f["max_finite"]
            edges += [m, -m, np.nextafter(np.float32(m), np.float32(np.inf)), m * 1.5,
                      f["min_normal"], f["min_subnormal"] or 0.0,
                      (f["min_subnormal"] or f["min_normal"]) / 2]
    values.append(np.array(edges, dtype=np.float64))
    x = np.concatenate(values).astype(np.float32)
    # The edges spread over the array, so that block formats meet them in different blocks.
    return rng.permutation(x).astype(np.float32)


X = edge_array()


def cli_bits(cli, fmt, rounding, x, *extra):
    result = subprocess.run([cli, "quantize", "-f", fmt, "-r", rounding, "--seed", "42",
                             "--binary", *extra], input=x.tobytes(), capture_output=True)
    assert result.returncode == 0, result.stderr.decode()
    return result.stdout


@pytest.mark.parametrize("rounding", ROUNDINGS)
@pytest.mark.parametrize("fmt", ELEMENT + BLOCK)
def test_bit_identical_to_the_cli(cli, fmt, rounding):
    y, stats = pl.quantize(X, fmt, rounding=rounding, seed=42)
    assert y.dtype == np.float32 and y.shape == X.shape
    assert y.tobytes() == cli_bits(cli, fmt, rounding, X)
    # Without statistics and with a thread pool: the same bits.
    y2, none = pl.quantize(X, fmt, rounding=rounding, seed=42, stats=False, threads=2)
    assert none is None and y2.tobytes() == y.tobytes()
    assert stats["total"] == X.size
    assert sum(stats[k] for k in ("zero", "flushed", "subnormal", "normal", "overflow",
                                  "nan")) == X.size


@pytest.mark.parametrize("args", [dict(scale_rounding="ceil"), dict(four_over_six=True),
                                  dict(pow2_scales=True)])
def test_block_options_match_the_cli(cli, args):
    fmt = {"scale_rounding": "mxfp8-e4m3", "four_over_six": "nvfp4",
           "pow2_scales": "fp8-block128"}[next(iter(args))]
    flag = {"scale_rounding": ["--scale-rounding", "ceil"], "four_over_six": ["--four-over-six"],
            "pow2_scales": ["--pow2-scales"]}[next(iter(args))]
    y, _ = pl.quantize(X, fmt, seed=42, **args)
    assert y.tobytes() == cli_bits(cli, fmt, "nearest-even", X, *flag)


def test_statistics_are_the_cast_counts():
    x = np.array([0.0, -0.0, 1e-9, 2e-8, 1e-5, 1.0, 70000.0, np.inf, np.nan], np.float32)
    y, s = pl.quantize(x, "fp16")
    # fp16: min subnormal 2^-24 (~6e-8), min normal 2^-14, max 65504, Inf on overflow.
    assert (s["zero"], s["flushed"], s["subnormal"], s["normal"], s["overflow"], s["nan"]) == \
        (2, 2, 1, 1, 2, 1)
    assert s["amax"] == np.inf
    assert s["flushed_share"] == pytest.approx(2 / 7)
    assert s["histogram"].sum() == x.size and s["histogram"][0] == 2
    assert len(s["bin_edges_log2"]) == s["histogram"].size - 2
    assert y[6] == np.inf and np.isnan(y[8]) and y[2] == 0.0


def test_scale_multiplies_before_the_cast():
    x = np.full(64, 1e-8, np.float32)
    _, plain = pl.quantize(x, "fp16")
    y, scaled = pl.quantize(x, "fp16", scale=1024.0)
    assert plain["flushed"] == 64 and scaled["flushed"] == 0
    assert np.allclose(y, x, rtol=1e-2)  # divided back by the scale


def test_block_statistics():
    x = np.random.default_rng(0).standard_normal((8, 64)).astype(np.float32)
    x[0] = 0.0
    _, s = pl.quantize(x, "nvfp4")
    b = s["blocks"]
    assert b["blocks"] == 8 * 64 // 16 and b["zero_blocks"] == 4 and "scales" not in b
    assert b["scale_histogram"].sum() == b["blocks"] - b["zero_blocks"]
    _, s2 = pl.quantize(x, "nvfp4", block_scales=True)
    assert len(s2["blocks"]["scales"]) == b["blocks"] and s2["tensor_scale"] > 0
    assert (s2["blocks"]["scales"][:4] == 0).all() and (s2["blocks"]["scales"][4:] > 0).all()
    assert {k: v for k, v in s2["blocks"].items() if k not in ("scales", "amax")}.keys() == \
        b.keys()


def test_out_in_place_and_torch_zero_copy(torch):
    x = np.linspace(-3, 3, 100, dtype=np.float32)
    expected, _ = pl.quantize(x, "fp8-e4m3")
    out = np.empty_like(x)
    y, _ = pl.quantize(x, "fp8-e4m3", out=out)
    assert y is out and out.tobytes() == expected.tobytes()
    t = torch.from_numpy(x.copy())
    y, s = pl.quantize(t, "fp8-e4m3", out=t)  # in place, in the tensor's own memory
    assert y is t and t.numpy().tobytes() == expected.tobytes() and s["total"] == 100


def bad_inputs():
    x = np.ones(8, np.float32)
    cases = [
        (dict(x=x.astype(np.float64), fmt="fp16"), TypeError, "float64"),
        (dict(x=x.astype(np.float16), fmt="fp16"), TypeError, "float16"),
        (dict(x=np.arange(8), fmt="fp16"), TypeError, "int64"),
        (dict(x=np.ones((4, 4), np.float32)[:, 1], fmt="fp16"), ValueError, "C-contiguous"),
        (dict(x=np.zeros(0, np.float32), fmt="fp16"), ValueError, "empty"),
        (dict(x=np.array(1.0, np.float32), fmt="fp16"), ValueError, "0-d"),
        (dict(x=np.float32(1.0), fmt="fp16"), ValueError, "0-d"),
        (dict(x=[1.0, 2.0], fmt="fp16"), TypeError, "list"),
        (dict(x=x, fmt="fp9"), ValueError, '"fp9"'),
        (dict(x=x, fmt="e4m3:bias=q"), ValueError, '"q"'),
        (dict(x=x, fmt="fp16", rounding="up"), ValueError, '"up"'),
        (dict(x=x, fmt="fp16", scale_rounding="ceil"), ValueError, "apply to block formats"),
        (dict(x=x, fmt="nvfp4", scale_rounding="ceil"), ValueError, "applies to MX formats"),
        (dict(x=x, fmt="nvfp4", overflow="inf"), ValueError, "saturates"),
        (dict(x=x, fmt="fp16", scale=-1.0), ValueError, "scale -1"),
        (dict(x=x, fmt="fp16", scale=float("nan")), ValueError, "scale nan"),
        (dict(x=x, fmt="fp16", scale=0.0), ValueError, "scale 0"),
        (dict(x=x, fmt="fp16", seed=-1), ValueError, "seed -1"),
        (dict(x=x, fmt="fp16", out=np.zeros(4, np.float32)), ValueError, "another shape"),
        (dict(x=x, fmt="fp16", out=np.zeros(8, np.float64)), TypeError, "out has dtype"),
    ]
    return cases


@pytest.mark.parametrize("kwargs,error,text", bad_inputs())
def test_bad_input_gets_its_error(kwargs, error, text):
    with pytest.raises(error, match=re.escape(text)):
        pl.quantize(**kwargs)


def test_nothing_is_written_on_refusal():
    out = np.full(8, 7.0, np.float32)
    for kwargs in [dict(fmt="fp9"), dict(fmt="fp16", scale=-1.0), dict(fmt="fp16", seed=-1),
                   dict(fmt="nvfp4", overflow="inf"), dict(fmt="fp16", rounding="up")]:
        with pytest.raises(ValueError):
            pl.quantize(np.ones(8, np.float32), out=out, **kwargs)
        assert (out == 7.0).all()


def test_bad_torch_tensors(torch):
    with pytest.raises(TypeError, match="torch.float64"):
        pl.quantize(torch.ones(4, dtype=torch.float64), "fp16")
    with pytest.raises(TypeError, match="bfloat16"):
        pl.quantize(torch.ones(4, dtype=torch.bfloat16), "fp16")
    with pytest.raises(ValueError, match="contiguous"):
        pl.quantize(torch.ones(4, 4).t(), "fp16")


def test_formats_table_and_specs():
    table = pl.formats()
    names = [f["name"] for f in table]
    assert {"fp16", "bf16", "fp8-e4m3", "fp8-e5m2", "nvfp4"} <= set(names)
    e4m3 = pl.formats("fp8-e4m3")
    assert e4m3["max_finite"] == 448 and e4m3["specials"] == "fn"
    assert pl.formats("e5m2:bias=16:nosub")["min_subnormal"] is None
    assert pl.formats("nvfp4")["block_size"] == 16
    with pytest.raises(ValueError, match="fp9"):
        pl.formats("fp9")


def test_ml_dtypes_and_torch_names_are_our_formats():
    """ml_dtypes' and PyTorch's names, and torch dtypes, give the same bits as our names."""
    import precision_lab as pl
    rng = np.random.default_rng(3)
    x = (rng.standard_normal(4096) * np.exp2(rng.uniform(-20, 10, 4096))).astype(np.float32)
    for theirs, ours in (("float8_e4m3fn", "fp8-e4m3"), ("float8_e5m2", "fp8-e5m2"),
                         ("float8_e4m3fnuz", "fp8-e4m3fnuz"), ("bfloat16", "bf16"),
                         ("float4_e2m1fn", "fp4-e2m1"), ("float6_e3m2fn", "fp6-e3m2"),
                         ("torch.float16", "fp16")):
        a, sa = pl.quantize(x, theirs)
        b, sb = pl.quantize(x, ours)
        assert a.tobytes() == b.tobytes() and sa["flushed"] == sb["flushed"], theirs
    assert pl.formats("float8_e4m3fn")["name"] == "fp8-e4m3"
    torch = pytest.importorskip("torch")
    a, _ = pl.quantize(x, torch.bfloat16)
    assert a.tobytes() == pl.quantize(x, "bf16")[0].tobytes()
    assert a.tobytes() == torch.from_numpy(x).bfloat16().float().numpy().tobytes()
    with pytest.raises(TypeError, match="torch dtype"):
        pl.quantize(x, 3)


def test_casting_loads_neither_records_nor_trainers():
    """`import precision_lab` and a cast load only the _quantize extension (the numerics floor);
    _core (SQLite, the trainers) loads when a record or the advisor is first used."""
    import os
    import sys
    script = (
        "import sys, numpy, precision_lab as pl\n"
        "y, s = pl.quantize(numpy.array([1e-9, 1.0], numpy.float32), 'fp16')\n"
        "assert s['flushed'] == 1 and y[1] == 1.0, s\n"
        "print(sorted(m for m in sys.modules if m.startswith('precision_lab.')))\n"
        "print(callable(pl.open_run), 'precision_lab._core' in sys.modules,\n"
        "      {'open_run', 'advise', 'export_advice'} <= set(dir(pl)))\n"
        "from precision_lab import advise, export_advice\n")
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(pl.__file__)))
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True, env=env).stdout.splitlines()
    assert out[0] == "['precision_lab._arguments', 'precision_lab._arrays', " \
                     "'precision_lab._quantize']", out  # _arguments: the argument checks
    assert out[1] == "True True True", out
