"""Reports drawn only from a run's result files (trials.jsonl and run.json).

load      read a run directory, tolerating a line cut by a crash
keys      what identifies a trial's settings and the series it belongs to
stats     medians and spreads over repetitions, the best backend, the first loss
tables_md the seed's tables as Markdown and CSV
plots     the figures (matplotlib, Agg), each a function of the trial records
html      report.html, one self-contained file
writer    `capbench report DIR`: everything above into DIR/report/
compare   `capbench compare A B`: matched trials, changes and their noise
"""
