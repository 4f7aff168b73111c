"""The papers' settings as data and the one runner over them.

`reproductions/settings/NAME.json` is one reproduction: the system that
runs it (a script of `reproductions/systems/` with `parser()` and
`main(argv)`), the results file it writes, the paper and table it
compares with, and its settings grouped as a paper states them (data,
model, optimizer, schedule, budget, stopping rule, seeds, selection),
each key one of the system's options. `python -m reproductions` lists,
runs, resumes and re-renders them (`python -m reproductions --help`).
"""
