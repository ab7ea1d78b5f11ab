"""A YOLOv5/v7 console's validation table (#24): its header is printed as a progress bar's description
(`Class  Images  Labels  P  R  mAP@.5  mAP@.5:.95:   0%|   | 0/4`), a name holding a colon, and the `all`
row under it holds the scores the run is validated by. Fixture written here with the trainer's own format
strings (`'%20s' + '%12s' * 6`, `'%20s' + '%12i' * 2 + '%12.3g' * 4`)."""
from __future__ import annotations

import math

import polars as pl

from spikelens import api


def test_the_all_row_under_the_validation_header_holds_the_scores(tmp_path):
    lines = []
    for e in range(12):
        lines.append(('%10s' * 8) % ('Epoch', 'gpu_mem', 'box', 'obj', 'cls', 'total', 'labels', 'img_size'))
        for k in range(1, 5):
            box = 0.08 * math.exp(-(e * 4 + k) / 20) + 0.02
            lines.append(('%10s' * 2 + '%10.4g' * 6) % (f'{e}/11', '3.2G', box, 0.02, 0.01, box + 0.03, 12, 640)
                         + f": {k * 25:3d}%|###       | {k}/4 [00:0{k}<00:03,  1.2it/s]")
        head = ('%20s' + '%12s' * 6) % ('Class', 'Images', 'Labels', 'P', 'R', 'mAP@.5', 'mAP@.5:.95')
        lines += [head + f":   {k * 25:3d}%|          | {k}/4 [00:00<?, ?it/s]" for k in range(0, 5)]
        lines.append(('%20s' + '%12i' * 2 + '%12.3g' * 4) % ('all', 37, 41, 0.3 + 0.03 * e, 0.25 + 0.03 * e,
                                                              0.2 + 0.04 * e, 0.1 + 0.02 * e))
    (tmp_path / "nohup.out").write_text("\n".join(lines) + "\n")
    frame = api.load(str(tmp_path / "nohup.out"))
    names = set(frame.get_column("metric").unique().to_list())
    assert {"P", "R", "mAP@.5", "mAP@.5:.95", "total"} <= names and "all" not in names
    m = frame.filter(pl.col("metric") == "mAP@.5").sort("seq").get_column("value").to_list()
    assert len(m) == 12 and round(m[-1], 2) == 0.64
