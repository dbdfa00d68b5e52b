"""Reports drawn only from a run's result files (trials.jsonl, run.json, and searches.jsonl
with the answers of the search methods).

load        read a run directory, tolerating a line cut by a crash
keys        what identifies a trial's settings and the series it is drawn in
stats       medians and spreads over repetitions, the best backend, the first loss, loss per group
answers     the searches' answers (RFC 2544, MLR, sweep, back-to-back), one per search, and their tables
summary     the report's summary in sentences
tables_md   the seed's tables as Markdown and CSV
plots       the figures (matplotlib, Agg), each a function of the trial records
latency     latency percentiles in a record
html        the building blocks of one self-contained HTML page
tune_summary  tune/tune.json's records: what a tune found, written by `capbench tune`, read here
tune_figure   a tune's goal against each knob, from those records
tune_section  a tune's answer in the report, ahead of its configurations' single searches
writer      `capbench report DIR`: everything above into DIR/report/
compare     `capbench compare A B`: matched trials, changes and the noise they are weighed against
compare_out the comparison as terminal and Markdown tables, a figure and HTML
"""
