"""OME-Zarr pyramids (SPEC 6, issue 43 item 3): ``dmlops.pyramid``'s levels are the chained
in-memory calls bit for bit at any chunking, with the last partial block pooled over its real
elements; ``dmlops pyramid`` writes NGFF 0.5 (zarr v3) and 0.4 (zarr v2) images that
ome-zarr's reader opens and ngff-zarr's strict validation accepts, locally, on S3 and on a
cluster; its mistakes are exit 2 with nothing written."""

from __future__ import annotations

import io
import math
import re
import sys
from pathlib import Path

import numpy as np
import pytest

import dmlops as dml

zarr = pytest.importorskip("zarr")
da = pytest.importorskip("dask.array")

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_object_stores import BUCKET, _clear  # noqa: E402

sys.path.pop(0)


def _chained(x, levels, method, factor, k):
    """The levels by hand: each the in-memory call on the one before, as (N, C, spatial)."""
    out, cur = [x], x
    lead = x.ndim - k
    for _ in range(levels - 1):
        four = cur[(None,) * (2 - lead)] if lead < 2 else cur
        ends = [math.ceil(n / factor) * factor - n for n in cur.shape[lead:]]
        if method == "average":
            y = dml.average_pooling(four, factor, strides=factor, end_padding=ends)
        else:
            y = dml.max_pooling(four, factor, strides=factor, end_padding=ends)
        cur = y[(0,) * (2 - lead)] if lead < 2 else y
        out.append(cur)
    return out


@pytest.mark.parametrize("method", ["average", "max"])
@pytest.mark.parametrize("shape, axes, chunks, factor", [
    ((23, 17), None, (5, 7), 2),
    ((3, 11, 19, 14), "czyx", (2, 4, 5, 3), 2),
    ((2, 2, 9, 10, 7), None, (1, 2, 3, 4, 5), 3),
    ((4, 37, 5), "cyx", (4, 8, 5), 2),
])
def test_levels_are_the_chained_in_memory_calls(method, shape, axes, chunks, factor):
    x = np.random.default_rng(3).standard_normal(shape).astype(np.float32)
    x.reshape(-1)[::7] = 0.5          # (ties)
    k = sum(a in "zyx" for a in (axes or "tczyx"[-len(shape):]))
    levels = dml.pyramid(da.from_array(x, chunks=chunks), 4, method=method, factor=factor,
                         axes=axes)
    want = _chained(x, 4, method, factor, k)
    assert [lv.shape for lv in levels] == [w.shape for w in want]
    for got, w in zip(levels, want):
        assert got.compute().tobytes() == w.tobytes()
    # the last partial block pools its real elements only: sizes ceil(n / factor)
    assert levels[1].shape[-1] == math.ceil(shape[-1] / factor)


def test_default_levels_stop_where_a_level_fits_one_chunk():
    x = da.zeros((1, 40, 70), chunks=(1, 8, 8), dtype=np.float32)
    levels = dml.pyramid(x)
    assert [lv.shape for lv in levels] == [(1, 40, 70), (1, 20, 35), (1, 10, 18), (1, 5, 9),
                                           (1, 3, 5)]
    assert all(lv.chunksize[1:] == tuple(min(8, n) for n in lv.shape[1:]) for lv in levels)


def _cli(*argv):
    from dmlops.cli import main
    out, err = io.StringIO(), io.StringIO()
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err
    try:
        rc = main(["pyramid", *argv])
    finally:
        sys.stdout, sys.stderr = saved
    return rc, out.getvalue(), err.getvalue()


def _check_image(url, want, ngff, options=None):
    """The image at ``url``: ome-zarr's reader gives ``want``'s levels; ngff-zarr's strict
    validation accepts its metadata, whose scales are the factor's powers."""
    ngff_zarr = pytest.importorskip("ngff_zarr")
    group = zarr.open_group(store=url, mode="r", storage_options=options)
    attrs = dict(group.attrs)
    ngff_zarr.validate(attrs, version=ngff, model="image", strict=True)
    multiscales = (attrs["ome"] if ngff == "0.5" else attrs)["multiscales"][0]
    scales = [d["coordinateTransformations"][0]["scale"] for d in multiscales["datasets"]]
    assert scales == [[1.0] + [2.0 ** i] * 3 for i in range(len(want))]
    for i, w in enumerate(want):
        assert group[str(i)][...].tobytes() == w.tobytes()
    if options is None:
        reader = pytest.importorskip("ome_zarr.reader")
        io_ = pytest.importorskip("ome_zarr.io")
        node = list(reader.Reader(io_.parse_url(str(url)))())[0]
        assert [np.asarray(d).tobytes() for d in node.data] == [w.tobytes() for w in want]


@pytest.mark.parametrize("ngff", ["0.5", "0.4"])
def test_the_command_writes_an_ome_zarr_image(tmp_path, ngff):
    """A zarr volume (c, z, y, x) into an image of 3 levels, max pooling: opened by
    ome-zarr's reader, validated strictly by ngff-zarr; its zarr format is the NGFF
    version's."""
    x = np.random.default_rng(4).standard_normal((2, 9, 21, 16)).astype(np.float32)
    z = zarr.create_array(store=str(tmp_path / "in.zarr"), shape=x.shape, chunks=(1, 4, 8, 8),
                          dtype=x.dtype)
    z[...] = x
    rc, out, err = _cli(str(tmp_path / "in.zarr"), str(tmp_path / "img.zarr"), "--levels", "3",
                        "--method", "max", "--axes", "czyx", "--ngff", ngff)
    assert (rc, err) == (0, ""), err
    assert "3 levels, 2x9x21x16 2x5x11x8 2x3x6x4" in out
    _check_image(str(tmp_path / "img.zarr"), _chained(x, 3, "max", 2, 3), ngff)
    fmt = zarr.open_group(str(tmp_path / "img.zarr"), mode="r").metadata.zarr_format
    assert fmt == (3 if ngff == "0.5" else 2)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["img.zarr", "in.zarr"]


def test_a_npy_source_and_its_chunks(tmp_path):
    x = np.random.default_rng(5).standard_normal((1, 12, 30, 31)).astype(np.float32)
    np.save(tmp_path / "in.npy", x)
    rc, out, err = _cli(str(tmp_path / "in.npy"), str(tmp_path / "img.zarr"), "--chunks", "8",
                        "--quiet")
    assert (rc, out, err) == (0, "", "")
    group = zarr.open_group(str(tmp_path / "img.zarr"), mode="r")
    assert group["0"].chunks == (1, 8, 8, 8)
    want = _chained(x, len(list(group.array_keys())), "average", 2, 3)
    _check_image(str(tmp_path / "img.zarr"), want, "0.5")


def test_on_s3_and_a_cluster(tmp_path, s3, cluster):
    """From and to S3 with --storage-option, on the cluster: the chained calls, the group's
    metadata valid."""
    _clear(s3)
    x = np.random.default_rng(6).standard_normal((1, 6, 20, 18)).astype(np.float32)
    zarr.create_array(store=f"s3://{BUCKET}/in.zarr", shape=x.shape, chunks=(1, 6, 10, 18),
                      dtype=x.dtype, storage_options=s3)[...] = x
    opts = [a for k, v in s3.items() for a in ("--storage-option", f"{k}={v}")]
    rc, _, err = _cli(f"s3://{BUCKET}/in.zarr", f"s3://{BUCKET}/img.zarr", "--levels", "3",
                      "--scheduler", cluster.scheduler_address, "--quiet", *opts)
    assert rc == 0, err
    _check_image(f"s3://{BUCKET}/img.zarr", _chained(x, 3, "average", 2, 3), "0.5", s3)


@pytest.mark.parametrize("argv, words", [
    (["--factor", "1"], "factor = 1 must be an integer of at least 2"),
    (["--axes", "xyz"], "the spatial axes (z, y, x, in that order) come last"),
    (["--levels", "0"], "levels = 0 must be a positive integer"),
])
def test_mistakes_are_exit_2_with_nothing_written(tmp_path, argv, words):
    np.save(tmp_path / "in.npy", np.zeros((4, 4, 4), np.float32))
    rc, out, err = _cli(str(tmp_path / "in.npy"), str(tmp_path / "img.zarr"), *argv)
    assert rc == 2 and words in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.npy"]


@pytest.mark.parametrize("ngff", ["0.5", "0.4"])
def test_a_level_of_an_ome_zarr_image_passes_on_its_units_and_voxel_size(tmp_path, ngff):
    """The source is level 1 of an OME-Zarr image in micrometers whose level 0 has voxels
    2 x 0.5 x 0.5 at (10, 0, 0): the new image keeps the axes' units; its level i's voxel is
    the source's times 2^i along the spatial axes, its centre (2^i - 1) / 2 source voxels on;
    ngff-zarr's strict validation accepts it."""
    ngff_zarr = pytest.importorskip("ngff_zarr")
    x = np.random.default_rng(8).standard_normal((2, 9, 20, 16)).astype(np.float32)
    um = {"z": "micrometer", "y": "micrometer", "x": "micrometer"}
    dml.write_pyramid(dml.pyramid(x, 2, axes="czyx"), str(tmp_path / "src.zarr"), axes="czyx",
                      units=um, scale=[1, 2, 0.5, 0.5], translation=[0, 10, 0, 0], ngff=ngff)
    rc, _, err = _cli(str(tmp_path / "src.zarr" / "1"), str(tmp_path / "img.zarr"),
                      "--levels", "3", "--ngff", ngff)
    assert rc == 0, err
    attrs = dict(zarr.open_group(str(tmp_path / "img.zarr"), mode="r").attrs)
    ngff_zarr.validate(attrs, version=ngff, model="image", strict=True)
    image = (attrs["ome"] if ngff == "0.5" else attrs)["multiscales"][0]
    assert image["axes"] == [{"name": "c", "type": "channel"}] + [
        {"name": a, "type": "space", "unit": "micrometer"} for a in "zyx"]
    places = [[t[t["type"]] for t in d["coordinateTransformations"]]
              for d in image["datasets"]]
    assert places == [[[1.0, 4.0, 1.0, 1.0], [0.0, 11.0, 0.25, 0.25]],
                      [[1.0, 8.0, 2.0, 2.0], [0.0, 13.0, 0.75, 0.75]],
                      [[1.0, 16.0, 4.0, 4.0], [0.0, 17.0, 1.75, 1.75]]]
    # other axes than the source's: the units of the axes named alike, not its voxel size
    rc, _, err = _cli(str(tmp_path / "src.zarr" / "1"), str(tmp_path / "other.zarr"),
                      "--levels", "2", "--axes", "tzyx", "--ngff", ngff)
    assert rc == 0, err
    attrs = dict(zarr.open_group(str(tmp_path / "other.zarr"), mode="r").attrs)
    image = (attrs["ome"] if ngff == "0.5" else attrs)["multiscales"][0]
    assert [a.get("unit") for a in image["axes"]] == [None] + ["micrometer"] * 3
    assert [len(d["coordinateTransformations"]) for d in image["datasets"]] == [1, 1]


def test_an_array_with_dimension_names_gives_the_axes(tmp_path):
    """A zarr v3 array named (c, y, x): its axes, not the rank's default (z, y, x), so the
    first axis is not pooled."""
    x = np.arange(4 * 6 * 6, dtype=np.float32).reshape(4, 6, 6)
    zarr.create_array(store=str(tmp_path / "in.zarr"), shape=x.shape, chunks=x.shape,
                      dtype=x.dtype, dimension_names=["c", "y", "x"])[...] = x
    rc, out, err = _cli(str(tmp_path / "in.zarr"), str(tmp_path / "img.zarr"), "--levels", "2")
    assert rc == 0, err
    assert "2 levels, 4x6x6 4x3x3" in out
    ome = zarr.open_group(str(tmp_path / "img.zarr"), mode="r").attrs["ome"]
    assert [a["name"] for a in ome["multiscales"][0]["axes"]] == ["c", "y", "x"]


@pytest.mark.parametrize("kwargs, words", [
    ({"units": {"q": "meter"}}, "units = {'q': 'meter'} must map axes of 'yx'"),
    ({"scale": [1, 0]}, "scale = [1, 0] must be 2 positive finite numbers"),
    ({"translation": [1]}, "translation = [1] must be 2 finite numbers"),
])
def test_write_pyramid_checks_units_and_places(tmp_path, kwargs, words):
    with pytest.raises(dml.InvalidArgumentError, match=re.escape(words)):
        dml.write_pyramid(dml.pyramid(np.zeros((4, 4), np.float32), 2),
                          str(tmp_path / "img.zarr"), **kwargs)
    assert list(tmp_path.iterdir()) == []


def test_an_existing_target_is_kept(tmp_path):
    np.save(tmp_path / "in.npy", np.zeros((4, 4), np.float32))
    (tmp_path / "img.zarr").mkdir()
    rc, _, err = _cli(str(tmp_path / "in.npy"), str(tmp_path / "img.zarr"))
    assert rc == 2 and "exists; remove it first" in err
    assert list((tmp_path / "img.zarr").iterdir()) == []


def test_each_source_chunk_is_read_once(tmp_path):
    """Level 0 is the source stored and level 1 pools it: one read (or making) of each
    source chunk serves both (Dask's blockwise fusion, left on, folded the chunks into level
    0's store while level 1's blocks asked for them again: every chunk read twice)."""
    import threading

    import dask.array as da
    made, lock = [], threading.Lock()

    def chunk(block_info=None):
        info = block_info[None]
        with lock:
            made.append(info["chunk-location"])
        return np.full(info["chunk-shape"], float(len(made)), np.float32)

    src = da.map_blocks(chunk, dtype=np.float32, chunks=((1,), (8, 8), (8, 8), (8, 8)))
    levels = dml.pyramid(src, 3, axes="czyx")
    dml.write_pyramid(levels, str(tmp_path / "img.zarr"), axes="czyx")
    assert sorted(set(made)) == sorted(np.ndindex(1, 2, 2, 2))
    assert len(made) - len(set(made)) <= 1, made    # (Dask may make one chunk for its meta)


def test_a_volume_pyramided_in_bounded_memory(tmp_path):
    """A volume generated block by block (benchmarks/pyramid.py's, 256 MiB here; the
    benchmark runs 64 GiB) pyramided into a store: the process's peak resident memory grows
    by less than half the volume (in a new process, so the peak is the pyramid's)."""
    import subprocess
    bench = Path(__file__).resolve().parent.parent / "benchmarks"
    code = f"""
import resource, sys
sys.path.insert(0, {str(bench)!r})
import dmlops, dask.array, zarr
from pyramid import volume
vol = volume(0.25)
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
levels = dmlops.pyramid(vol, 3, axes="czyx")
dmlops.write_pyramid(levels, {str(tmp_path / "big.zarr")!r}, axes="czyx")
print(vol.nbytes, base, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, *vol.shape)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    nbytes, base, peak, *shape = map(int, out.stdout.split())
    assert 2**27 < nbytes < 2**29
    assert (peak - base) * 1024 < nbytes / 2, (peak - base) / 1024
    assert zarr.open_group(str(tmp_path / "big.zarr"), mode="r")["2"].shape == \
        (1, *(math.ceil(n / 4) for n in shape[1:]))
