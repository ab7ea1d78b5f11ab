"""The analysis pipeline, one entry point (`sweep.analyze_roots`) that `api.analyze`, the
CLI and the executors' callers use (and `sweep.analyze_runs` for runs already in memory,
`api.analyze(frame)`):

- `run`: one run's stitch -> detect -> explain (`analyze_run`), and `analyze_group`, the
  pure function an executor ships (a group of sources in, reports and warnings out);
- `executors`: the fan-out, on local worker processes or Ray tasks, results in order;
- `sweep`: discovery, the fan-out, the cross-run links on the collected reports, the
  findings dataset; runs given in memory analysed and linked the same way;
- `incremental`: which groups a findings dataset lets a sweep skip.

Imported lazily by `api`, so that `load` and `ls` do not pay for detection."""
