"""The analysis pipeline: one run's stitch -> detect -> explain (`run`), the fan-out over
runs (`fanout`), the cross-run links. Imported lazily by `api` so that `load` and `ls`
do not pay for detection."""
