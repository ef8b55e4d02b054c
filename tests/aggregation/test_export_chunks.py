"""A build read and written in many small chunks gives the same files and rows as in one."""

import zipfile

import pyarrow.parquet as pq
import pytest

from aggregation.export import build
from aggregation.services.versions import version_build


def _files(version):
    out = {}
    for record in version.files.exclude(kind="manifest"):
        with record.file.open("rb") as fh:
            out[record.kind] = fh.read()
    return out


@pytest.mark.parametrize("votes", [False, True])
def test_small_chunks_give_the_same_files_and_rows(
    project, lead, data, votes, monkeypatch, tmp_path
):
    whole = version_build(project=project, by=lead, include_votes=votes)
    # Chunks of one row, read three at a time: blocks end inside a prompt and a last one is short.
    monkeypatch.setattr(build, "CHUNK_SIZE", 1)
    monkeypatch.setattr(build, "READ_SIZE", 3)
    pieces = version_build(project=project, by=lead, include_votes=votes)
    assert whole.row_count == pieces.row_count == 4
    a, b = _files(whole), _files(pieces)
    assert a["jsonl"] == b["jsonl"]
    assert a["jsonl_zip"] == b["jsonl_zip"]  # the rows deflated in pieces: the same bytes
    for name, content in (("whole", a["parquet"]), ("pieces", b["parquet"])):
        (tmp_path / name).write_bytes(content)
    # Row groups follow the chunks; the table is the same.
    assert pq.read_table(tmp_path / "whole").equals(pq.read_table(tmp_path / "pieces"))
    assert pq.ParquetFile(tmp_path / "pieces").metadata.num_row_groups == 4
    rows = [list(v.rows.order_by("id").values_list("question_id", "data")) for v in (whole, pieces)]
    assert rows[0] == rows[1]
    with zipfile.ZipFile(whole.files.get(kind="jsonl_zip").file.path) as zf:
        assert zf.read("rows.jsonl") == a["jsonl"]
    digests = [
        {f["kind"]: (f["sha256"], f["size"]) for f in v.manifest["files"]} for v in (whole, pieces)
    ]
    for kind in ("jsonl", "jsonl_zip"):
        assert digests[0][kind] == digests[1][kind]
